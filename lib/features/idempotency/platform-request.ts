/**
 * The HTTP request a `principal` resolver gets: the platform's own, an
 * Express `Request` or a Fastify `FastifyRequest`, typed here by what both
 * carry so that neither platform's types need be installed. A resolver
 * whose parameter is annotated with the platform's own type (or with a
 * type of just what it reads) is accepted too, and then reads whatever
 * that type adds.
 */
export interface PlatformRequest {
  /** The HTTP method, upper case. */
  readonly method: string;
  /** The path and query as received. */
  readonly url: string;
  /** Request headers, names in lower case. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The parsed body, when a body parser ran. */
  readonly body?: unknown;
  /** The parsed query string. */
  readonly query?: unknown;
  /** The route parameters. */
  readonly params?: unknown;
  /**
   * Who the authentication guard found (Passport's `req.user`); its type is
   * the application's, which neither platform knows.
   */
  // The guard and its user type belong to the application: `(req) => req.user?.id` must compile as documented.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly user?: any;
}

/**
 * Who is asking, from the request: the client's identity, or `undefined`
 * for none. Its parameter is checked both ways (as a method's is), so an
 * annotation with the platform's own request type is accepted.
 */
export type PrincipalResolver = {
  resolve(request: PlatformRequest): string | undefined;
}['resolve'];
