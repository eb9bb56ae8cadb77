import { fromSpringConfig } from '../../lib';
import { IGNORED_UNKNOWN_KEY, UNKNOWN_KEY } from '../../lib/config/config.messages';
import { messageOf, registry } from '../support/config-messages';

const HEDGE_KEYS = ['delay', 'maxHedgedAttempts', 'budget', 'safe', 'latencyWindowSize', 'baseConfig'];
const FAULT_KEYS = ['enabled', 'allowInProduction', 'instances'];

/** A typo in each place of the hedging and faultInjection sections, and the place and known keys it is reported with. */
const TYPOS: [string, object, string, string, string[]][] = [
  [
    'a hedging instance',
    { hedging: { instances: { a: { dellay: 5 } } } },
    "hedging instance 'a'",
    'dellay',
    HEDGE_KEYS,
  ],
  [
    'a hedging config',
    { hedging: { configs: { default: { saf: true } } } },
    "hedging config 'default'",
    'saf',
    HEDGE_KEYS,
  ],
  ['the hedging section', { hedging: { instancs: {} } }, 'hedging', 'instancs', ['configs', 'instances']],
  ['faultInjection', { faultInjection: { enabeld: false } }, 'faultInjection options', 'enabeld', FAULT_KEYS],
  [
    'a fault',
    { faultInjection: { instances: { a: { latncy: { rate: 1, duration: 5 } } } } },
    'faultInjection.instances.a',
    'latncy',
    ['latency', 'error', 'outcome'],
  ],
  [
    "a fault's latency",
    { faultInjection: { instances: { a: { latency: { rate: 1, duration: 5, durration: 6 } } } } },
    "faultInjection.instances.a 'latency'",
    'durration',
    ['rate', 'duration'],
  ],
];

describe('hedging and faultInjection follow unknownKeys as every section does', () => {
  it.each(TYPOS)('%s: a typo fails with unknownKeys: error (the default)', (_, options, place, key, known) => {
    expect(messageOf(() => registry(options))).toBe(UNKNOWN_KEY(place, key, known));
  });

  it.each(TYPOS)('%s: a typo is warned about and ignored with unknownKeys: warn', (_, options, place, key, known) => {
    const warnings: string[] = [];
    registry({ unknownKeys: 'warn', ...options }, (m) => warnings.push(m));
    expect(warnings).toEqual([IGNORED_UNKNOWN_KEY(place, key, known)]);
  });

  it('a Spring file with a typo in either starts, with the warning, as Spring starts it', () => {
    const warnings: string[] = [];
    const options = fromSpringConfig(
      ['resilience4j.hedging.instances.a.dellay=5', 'resilience4j.fault-injection.enabeld=false'].join('\n'),
    );
    registry(options, (m) => warnings.push(m));
    expect(warnings).toEqual([
      IGNORED_UNKNOWN_KEY("hedging instance 'a'", 'dellay', HEDGE_KEYS),
      IGNORED_UNKNOWN_KEY('faultInjection options', 'enabeld', FAULT_KEYS),
    ]);
  });

  it('fromSpringConfig with unknownKeys: error refuses the typo at the call, as it refuses one in any section', () => {
    expect(
      messageOf(() => fromSpringConfig('resilience4j.hedging.instances.a.dellay=5', { unknownKeys: 'error' })),
    ).toBe(UNKNOWN_KEY("hedging instance 'a'", 'dellay', HEDGE_KEYS));
    expect(
      messageOf(() => fromSpringConfig('resilience4j.fault-injection.enabeld=false', { unknownKeys: 'error' })),
    ).toBe(UNKNOWN_KEY('faultInjection options', 'enabeld', FAULT_KEYS));
  });

  it('the settings next to the typo still apply', () => {
    const r = registry(
      { unknownKeys: 'warn', hedging: { instances: { a: { delay: 40, dellay: 5 } } } },
      () => undefined,
    );
    expect(r.hedge('a').config.delay).toBe(40);
  });
});
