/**
 * The reflect-metadata keys under which `@nestjs/common`'s route decorators
 * record a handler. NestJS exports them only from its build's inner files
 * (and, from NestJS 12, from `@nestjs/common/internal`, which is not public),
 * so they are named here; a test checks them against the installed NestJS.
 * @internal
 */
export const NEST_PATH_METADATA = 'path';
/** @internal */
export const NEST_ROUTE_ARGS_METADATA = '__routeArguments__';
/** @internal */
export const NEST_RESPONSE_PASSTHROUGH_METADATA = '__responsePassthrough__';
/** @internal The status `@HttpCode()` sets. */
export const NEST_HTTP_CODE_METADATA = '__httpCode__';
/** @internal The headers `@Header()` sets, as `{ name, value }` entries. */
export const NEST_HEADERS_METADATA = '__headers__';

/**
 * The parameter kinds of `NEST_ROUTE_ARGS_METADATA` keys that hand the
 * handler the platform's response (`@Res()`, `@Next()`).
 * @internal
 */
export const NestRouteParamtype = { RESPONSE: 1, NEXT: 2 } as const;
