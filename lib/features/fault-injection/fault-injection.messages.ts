import { describe } from '../../config/config.messages';
import { PREFIX } from '../../kernel/resilience.messages';

export const FAULTS_IN_PRODUCTION = (names: readonly string[], environment: string): string =>
  `${PREFIX}: faultInjection.enabled is true while NODE_ENV is ${JSON.stringify(environment)}, which is production` +
  (names.length > 0 ? ` (faults for ${names.map((n) => `'${n}'`).join(', ')})` : '') +
  `; fault injection fails real calls on purpose: set faultInjection.allowInProduction: true to run a game day in production`;

export const FAULTS_ENABLED = (names: readonly string[]): string =>
  `${PREFIX}: fault injection is enabled; ` +
  (names.length > 0
    ? `faults are injected into ${names.map((n) => `'${n}'`).join(', ')}`
    : 'no fault is configured yet (FaultInjector.inject or POST /actuator/faults/{name} adds them)');

export const FAULTS_DISABLED = (name: string): string =>
  `${PREFIX}: cannot inject a fault into '${name}': fault injection is off; set the module option faultInjection.enabled: true (refused in production unless allowInProduction)`;

export const INJECTED_ERROR_MESSAGE = (name: string, what: string): string => `injected fault on '${name}': ${what}`;

export const FAULT_BAD_FOR = (name: string, value: unknown): string =>
  `${PREFIX}: fault for '${name}': 'for' must be a positive duration (ms number or "30s", "5m"), got ${describe(value)}`;
