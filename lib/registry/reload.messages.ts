import { formatMs } from '../kernel/format-ms';
import { PREFIX } from '../kernel/resilience.messages';

/** The reload source threw or gave invalid options: the first of a run of such failures. */
export const RELOAD_FAILED = (cause: string): string =>
  `${PREFIX}: reloading the options failed, nothing was changed (the options in force stay until the source gives valid ones): ${cause}`;

/** The reload source gave valid options again after `failures` failed reloads over `durationMs`. */
export const RELOAD_RECOVERED = (failures: number, durationMs: number): string =>
  `${PREFIX}: the options reload again after ${failures} failed reload${failures === 1 ? '' : 's'} over ${formatMs(durationMs)} ms`;
