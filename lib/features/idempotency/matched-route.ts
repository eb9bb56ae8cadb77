/** The parts of an Express or Fastify request that say which route matched. */
interface RoutedRequest {
  /** Express: the matched `Route`, whose `path` is the template (`/orders/:id`). */
  readonly route?: { readonly path?: unknown };
  /** Fastify 4.10+: the matched route's options, whose `url` is the template. */
  readonly routeOptions?: { readonly url?: unknown };
  /** Fastify before 4.10. */
  readonly routerPath?: unknown;
  /** The route's parameters as the router decoded them. */
  readonly params?: unknown;
}

/**
 * The route a request matched, as the router sees it: the template
 * (`/orders/:id/pay`) every spelling of the path that reaches the handler
 * shares (`/ORDERS/1/pay/`), and the parameters the router read from it.
 * Express and Fastify both say; for any other platform the handler stands
 * for its route (`Class.method`), which every path reaching it shares too.
 *
 * @param request - the platform's request object
 * @param handler - `Class.method` of the route handler
 */
export function matchedRoute(
  request: unknown,
  handler: string,
): { readonly template: string; readonly params: unknown } {
  const routed = request as RoutedRequest;
  const template = routed.route?.path ?? routed.routeOptions?.url ?? routed.routerPath;
  return { template: typeof template === 'string' ? template : handler, params: routed.params ?? null };
}
