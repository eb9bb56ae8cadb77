import type { Duration } from '../config/duration';
import { durationOption, functionOption, GivenOptions, invalidOption } from '../config/option-readers';
import type { RegistryOptions } from './registry.options';

/**
 * Module option `reload`: where the options come from while the
 * application runs. The registry moves to what `source` gives (see
 * `ResilienceRegistry.applyOptions`) every `interval` on the module's clock,
 * and whenever `watch` says the source changed (`watchSpringConfig(path)`
 * makes both for an application.yml). A source that throws, or gives
 * invalid options, changes nothing; each run of such failures is logged
 * once when it starts and once when the source answers again.
 */
export interface ReloadOptions {
  /** Gives the whole module options object to move to (e.g. read from a config server). */
  source: () => RegistryOptions | Promise<RegistryOptions>;
  /** How often `source` is read; without it, only when `watch` says it changed. */
  interval?: Duration;
  /** Calls `changed` whenever the source may have changed; returns the function that stops watching (on module destroy). */
  watch?: (changed: () => void) => () => void;
}

/** Module option `reload`, checked. */
export interface ResolvedReload {
  readonly source: () => RegistryOptions | Promise<RegistryOptions>;
  /** In ms. */
  readonly interval: number | undefined;
  readonly watch: ((changed: () => void) => () => void) | undefined;
}

const PLACE = "module options 'reload'";
const positive = durationOption({ positive: true });

/** Reads module option `reload`; throws naming the key for a bad value. */
export function readReloadOptions(raw: unknown): ResolvedReload {
  const given = new GivenOptions(raw, PLACE, ['source', 'interval', 'watch']);
  const source = given.read('source', functionOption<ResolvedReload['source']>());
  if (source === undefined) return invalidOption(PLACE, 'source', 'a function', undefined);
  const interval = given.read('interval', positive);
  const watch = given.read('watch', functionOption<NonNullable<ResolvedReload['watch']>>());
  if (interval === undefined && watch === undefined)
    return invalidOption(PLACE, 'interval', 'given when there is no watch (e.g. interval: "30s")', undefined);
  return { source, interval, watch };
}
