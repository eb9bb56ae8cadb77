import type { TimerHandle } from '../kernel/clock';
import { RELOAD_FAILED, RELOAD_RECOVERED } from './reload.messages';
import type { ResolvedReload } from './reload.options';
import type { ResilienceRegistry } from './resilience.registry';

/** Where the reloader's two kinds of line go. */
export interface ReloadLog {
  warn(message: string): void;
  log(message: string): void;
}

/**
 * Moves the registry to the options its reload source gives: every
 * `interval` on the registry's clock (the next read is timed from the end
 * of the last, so reads never overlap) and whenever the source's `watch`
 * says it changed. A read asked for while one runs is made once after it.
 * A source that throws or gives invalid options changes nothing; a run of
 * such failures is logged when it starts and when the source answers again.
 */
export class ConfigReloader {
  private timer: TimerHandle;
  private stopWatching: (() => void) | undefined;
  private stopped = true;
  private reading: Promise<void> | undefined;
  private again = false;
  private failures = 0;
  private failingSince = 0;

  constructor(
    private readonly registry: ResilienceRegistry,
    private readonly options: ResolvedReload | undefined,
    private readonly logger: ReloadLog,
  ) {}

  /** Starts reading the source (nothing without module option `reload`). */
  start(): void {
    if (this.options === undefined || !this.stopped) return;
    this.stopped = false;
    this.schedule();
    this.stopWatching = this.options.watch?.(() => void this.reload());
  }

  /** Stops the timer and the watch; a read under way changes nothing once it ends. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.registry.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.stopWatching?.();
    this.stopWatching = undefined;
  }

  /** Reads the source and applies it; never rejects (failures are logged). */
  reload(): Promise<void> {
    if (this.reading !== undefined) {
      this.again = true;
      return this.reading;
    }
    this.reading = this.readUntilCurrent().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async readUntilCurrent(): Promise<void> {
    do {
      this.again = false;
      await this.readOnce();
    } while (this.again && !this.stopped);
  }

  private async readOnce(): Promise<void> {
    const source = (this.options as ResolvedReload).source;
    try {
      const options = await source();
      if (this.stopped) return;
      this.registry.applyOptions(options);
    } catch (error) {
      if (this.failures++ > 0) return;
      this.failingSince = this.registry.clock.now();
      this.logger.warn(RELOAD_FAILED(error instanceof Error ? error.message : String(error)));
      return;
    }
    if (this.failures === 0) return;
    this.logger.log(RELOAD_RECOVERED(this.failures, this.registry.clock.now() - this.failingSince));
    this.failures = 0;
  }

  private schedule(): void {
    const interval = (this.options as ResolvedReload).interval;
    if (interval === undefined || this.stopped) return;
    const timer = this.registry.clock.setTimeout(() => {
      this.timer = undefined;
      void this.reload().then(() => this.schedule());
    }, interval);
    // Reloading must not keep a process alive that has nothing else to do.
    (timer as { unref?: () => void } | undefined)?.unref?.();
    this.timer = timer;
  }
}
