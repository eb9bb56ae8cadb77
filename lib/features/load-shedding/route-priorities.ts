import { RequestMethod } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { DEFAULT_PRIORITY, PRIORITY_METADATA, PriorityLevel } from './priority.decorator';

/** A route as `MiddlewareConsumer.forRoutes` takes it. */
export interface RouteInfo {
  readonly path: string;
  readonly method: RequestMethod;
}

// Nest's own route metadata keys (set by @Controller and @Get/@Post/…).
const PATH_METADATA = 'path';
const METHOD_METADATA = 'method';

/** The routes whose `@Priority` (on the route or its controller) is not the default, by class. */
export function routePriorities(
  discovery: DiscoveryService,
  scanner: MetadataScanner,
): Map<PriorityLevel, RouteInfo[]> {
  const byLevel = new Map<PriorityLevel, RouteInfo[]>();
  for (const wrapper of discovery.getControllers()) {
    const controller = wrapper.metatype as (new (...args: never[]) => unknown) | undefined;
    if (typeof controller !== 'function') continue;
    const classLevel = Reflect.getMetadata(PRIORITY_METADATA, controller) as PriorityLevel | undefined;
    const prefixes = paths(Reflect.getMetadata(PATH_METADATA, controller));
    const prototype = controller.prototype as Record<string, unknown>;
    for (const name of scanner.getAllMethodNames(prototype)) {
      const handler = prototype[name];
      if (typeof handler !== 'function' || !Reflect.hasMetadata(PATH_METADATA, handler)) continue;
      const level = (Reflect.getMetadata(PRIORITY_METADATA, handler) as PriorityLevel | undefined) ?? classLevel;
      if (level === undefined || level === DEFAULT_PRIORITY) continue;
      const method = (Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined) ?? RequestMethod.GET;
      const routes = byLevel.get(level) ?? [];
      for (const prefix of prefixes) {
        for (const path of paths(Reflect.getMetadata(PATH_METADATA, handler)))
          routes.push({ path: join(prefix, path), method });
      }
      byLevel.set(level, routes);
    }
  }
  return byLevel;
}

function paths(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String);
  return [typeof value === 'string' ? value : '/'];
}

function join(prefix: string, path: string): string {
  const joined = `/${prefix}/${path}`.replace(/\/+/g, '/');
  return joined.length > 1 ? joined.replace(/\/$/, '') : joined;
}
