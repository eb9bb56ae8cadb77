import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ConfigReloader } from '../registry/config-reloader';
import { readReloadOptions } from '../registry/reload.options';
import { ResilienceRegistry } from '../registry/resilience.registry';

/**
 * @internal Module option `reload`, checked when the module is made (a bad
 * value fails startup naming the key): the source is read from bootstrap
 * until the module is destroyed.
 */
@Injectable()
export class ResilienceReload implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly reloader: ConfigReloader;

  constructor(registry: ResilienceRegistry) {
    const reload = registry.options.extras.reload;
    const options = reload === undefined ? undefined : readReloadOptions(reload);
    this.reloader = new ConfigReloader(registry, options, new Logger('ResilienceModule'));
  }

  /** Starts reading the source. */
  onApplicationBootstrap(): void {
    this.reloader.start();
  }

  /** Stops reading it, and closes its watch. */
  onModuleDestroy(): void {
    this.reloader.stop();
  }
}
