/** The servers the test setup provides. */
export type TestServerKind = 'postgres' | 'redis';

/** What a suite learns about one server: its URL, or why there is none. */
export type TestServer =
  { readonly available: true; readonly url: string } | { readonly available: false; readonly reason: string };

/** Human name of each server, for messages. */
export const SERVER_NAMES: Readonly<Record<TestServerKind, string>> = { postgres: 'PostgreSQL', redis: 'Redis' };

/** Env var holding a server's URL; set it before running Jest to use an external server instead of starting one. */
export const urlVariable = (kind: TestServerKind): string => `RESILIENCE_TEST_${kind.toUpperCase()}_URL`;

/** Env var holding why a server could not be started. */
export const unavailableVariable = (kind: TestServerKind): string =>
  `RESILIENCE_TEST_${kind.toUpperCase()}_UNAVAILABLE`;

/** True under CI, where a suite that cannot reach its server must fail instead of skipping. */
export function isCi(): boolean {
  return /^(true|1)$/i.test(process.env.CI ?? '');
}

/** The server the global setup started (or was given) for `kind`. */
export function testServer(kind: TestServerKind): TestServer {
  const url = process.env[urlVariable(kind)];
  if (url) return { available: true, url };
  const reason =
    process.env[unavailableVariable(kind)] ??
    `the Jest globalSetup (test/support/global-setup.ts) did not run, so no ${SERVER_NAMES[kind]} server was started`;
  return { available: false, reason };
}

/**
 * Inside a `describe`: returns the server's URL, or registers one test
 * that is skipped with the reason (or, under CI, fails with it) and
 * returns `undefined`, so the caller registers nothing else.
 */
export function serverOrSkip(kind: TestServerKind): string | undefined {
  const server = testServer(kind);
  if (server.available) return server.url;
  const message = `${SERVER_NAMES[kind]} unavailable: ${server.reason}`;
  if (isCi()) {
    it(`needs ${SERVER_NAMES[kind]}`, () => {
      throw new Error(`${message} (CI=true: store suites may not be skipped)`);
    });
  } else {
    it.skip(message, () => undefined);
  }
  return undefined;
}
