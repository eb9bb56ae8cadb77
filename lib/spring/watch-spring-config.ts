import { readFileSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { ReloadOptions } from '../registry/reload.options';
import { fromSpringConfig, SpringConfigOptions } from './spring-config';

/**
 * Module option `reload` for a Spring Boot `application.yml` (or
 * `.properties`): the file is re-read through {@link fromSpringConfig}
 * whenever it changes (its folder is watched, so an editor that replaces
 * the file is seen too), and every `interval` when one is given. A file
 * that does not parse, or holds an invalid value, changes nothing and is
 * logged; the watch is closed when the module is destroyed.
 *
 * @param path - the file, as `fromSpringConfig(readFileSync(path, 'utf8'))` reads it at startup
 * @param options - how strictly to bind it, and how often to re-read it besides its changes
 *
 * @example
 * ```ts
 * const file = 'config/application.yml';
 * ResilienceModule.forRoot({ ...fromSpringConfig(readFileSync(file, 'utf8')), reload: watchSpringConfig(file) })
 * ```
 */
export function watchSpringConfig(
  path: string,
  options: SpringConfigOptions & { interval?: ReloadOptions['interval'] } = {},
): ReloadOptions {
  const { interval, ...binding } = options;
  const file = basename(path);
  return {
    source: () => fromSpringConfig(readFileSync(path, 'utf8'), binding),
    ...(interval === undefined ? {} : { interval }),
    watch: (changed) => {
      const watcher = watch(dirname(path), { persistent: false }, (_event, name) => {
        if (name === null || name === file) changed();
      });
      return () => watcher.close();
    },
  };
}
