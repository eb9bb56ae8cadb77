import { findKey } from '../config/relaxed-binding';
import { changedSettings, sameSetting } from '../kernel/config-change';
import { NOT_LIVE } from './reconfigure.messages';
import type { ResolvedOptions } from './resolve-options';

/** Module options read at startup only, which `applyOptions` cannot move a running registry to. */
const STARTUP_ONLY = ['clock', 'random', 'order', 'deadline'] as const;
type StartupOnly = (typeof STARTUP_ONLY)[number];

/** Where option `key` differs between the options in force and the next ones, under `key`; undefined when it does not. */
function changeOf(key: StartupOnly, inForce: ResolvedOptions, next: ResolvedOptions): string | undefined {
  switch (key) {
    case 'clock':
    case 'random':
      return inForce[key] === next[key] ? undefined : key;
    case 'order':
      return sameSetting(inForce.order, next.order) ? undefined : key;
    case 'deadline': {
      const changed = changedSettings(inForce.deadline, next.deadline)[0];
      // `inbound` says whether the option was given at all: a deadline added or taken away.
      return changed === undefined ? undefined : changed === 'inbound' ? key : `${key}.${changed}`;
    }
  }
}

/**
 * Throws, naming the option's path, when `given` (the options handed to
 * `applyOptions`) sets an option read at startup only to a value other
 * than the one in force. One left out keeps its value.
 *
 * @param given - the options as written
 * @param inForce - the options the registry runs with
 * @param next - `given`, resolved
 */
export function checkStartupOnly(given: object, inForce: ResolvedOptions, next: ResolvedOptions): void {
  for (const written of Object.keys(given)) {
    const key = findKey(written, STARTUP_ONLY);
    if (key === undefined || (given as Record<string, unknown>)[written] === undefined) continue;
    const path = changeOf(key, inForce, next);
    if (path !== undefined) throw new Error(NOT_LIVE(path));
  }
}
