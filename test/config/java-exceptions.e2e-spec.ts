import { Agent, createServer, get, IncomingMessage, Server } from 'node:http';
import { LookupFunction, Socket } from 'node:net';
import axios from 'axios';
import { bindErrorNames, ErrorMatcher } from '../../lib/config/error-matcher';
import { JAVA_ERROR_NAMES } from '../../lib/spring/exceptions/java-exceptions';
import { freePort } from '../support/wait';

/*
 * Each Java name of the table against the errors Node's HTTP clients really
 * raise: node:http, fetch (undici) and axios, calling a loopback server that
 * resets or never answers, a closed port, and unresolvable `.invalid` names.
 * EAI_AGAIN, EHOSTUNREACH and ENETUNREACH cannot be caused on loopback: they
 * come from a `lookup` and an agent whose socket fails as the kernel would
 * fail it, so each client wraps them exactly as it wraps a real one.
 * undici's headers and body timeouts (300 s by default in fetch) are built
 * in undici's shape.
 */

type Client = 'http' | 'fetch' | 'axios';

let server: Server;
let port: number;
let closedPort: number;

beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url === '/reset') request.socket.destroy();
    // Any other path never answers: the clients' own timeouts fire.
    void response;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
  closedPort = await freePort();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** The error `client` rejects with for a GET of `url`, given node:http options (`lookup`, `agent`) where it takes them. */
async function failureOf(client: Client, url: string, options: HttpOptions = {}): Promise<unknown> {
  try {
    if (client === 'http') await httpGet(url, options);
    else if (client === 'fetch') await fetch(url, { signal: options.signal });
    else
      await axios.get(url, {
        timeout: options.timeoutMs,
        signal: options.signal,
        // axios types lookup after its own LookupAddress; it calls it as node:net does.
        lookup: options.lookup as never,
        httpAgent: options.agent,
      });
  } catch (error) {
    return error;
  }
  throw new Error(`${client} ${url}: expected a failure`);
}

interface HttpOptions {
  lookup?: LookupFunction;
  agent?: Agent;
  signal?: AbortSignal;
  timeoutMs?: number;
}

function httpGet(url: string, options: HttpOptions): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    get(url, { lookup: options.lookup, agent: options.agent, signal: options.signal }, resolve).on('error', reject);
  });
}

/** A resolver failing as getaddrinfo does with `code`. */
const failingLookup =
  (code: string): LookupFunction =>
  (hostname, _options, callback) =>
    callback(
      Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), {
        code,
        errno: -3001,
        syscall: 'getaddrinfo',
        hostname,
      }),
      '',
      4,
    );

/** An agent whose connections fail as connect(2) does with `code` (no route to the host or its network). */
function unreachable(code: 'EHOSTUNREACH' | 'ENETUNREACH'): Agent {
  const agent = new Agent();
  (agent as unknown as { createConnection: () => Socket }).createConnection = () => {
    const socket = new Socket();
    const errno = code === 'EHOSTUNREACH' ? -113 : -101;
    process.nextTick(() =>
      socket.destroy(
        Object.assign(new Error(`connect ${code} 10.255.255.1:80`), {
          code,
          errno,
          syscall: 'connect',
          address: '10.255.255.1',
          port: 80,
        }),
      ),
    );
    return socket;
  };
  return agent;
}

/** Whether `name`, bound as the registry binds exception lists, matches `error`. */
const matches = (name: string, error: unknown): boolean =>
  new ErrorMatcher(bindErrorNames([name], JAVA_ERROR_NAMES)).matches(error);

const IO = [
  'java.io.IOException',
  'org.springframework.web.client.ResourceAccessException',
  'org.springframework.web.reactive.function.client.WebClientRequestException',
  'feign.RetryableException',
];

describe('Java exception names against real failures of node:http, fetch and axios', () => {
  describe.each<Client>(['http', 'fetch', 'axios'])('%s', (client) => {
    it('ENOTFOUND (a .invalid name): UnknownHostException and IOException, not ConnectException', async () => {
      const error = await failureOf(client, 'http://no-such-host.invalid/');
      expect(matches('java.net.UnknownHostException', error)).toBe(true);
      for (const name of IO) expect([name, matches(name, error)]).toEqual([name, true]);
      expect(matches('java.net.ConnectException', error)).toBe(false);
      expect(matches('java.net.SocketTimeoutException', error)).toBe(false);
    });

    it('ECONNREFUSED (a closed port): ConnectException, SocketException and IOException', async () => {
      const error = await failureOf(client, `http://127.0.0.1:${closedPort}/`);
      for (const name of ['java.net.ConnectException', 'java.net.SocketException', ...IO])
        expect([name, matches(name, error)]).toEqual([name, true]);
      expect(matches('java.net.UnknownHostException', error)).toBe(false);
      expect(matches('java.net.SocketTimeoutException', error)).toBe(false);
    });

    it('a reset connection (ECONNRESET, fetch: UND_ERR_SOCKET): SocketException and IOException', async () => {
      const error = await failureOf(client, `http://127.0.0.1:${port}/reset`);
      for (const name of ['java.net.SocketException', ...IO])
        expect([name, matches(name, error)]).toEqual([name, true]);
      expect(matches('java.net.ConnectException', error)).toBe(false);
      expect(matches('java.net.SocketTimeoutException', error)).toBe(false);
    });

    it('an AbortSignal.timeout(): SocketTimeoutException, HttpTimeoutException and IOException', async () => {
      const error = await failureOf(client, `http://127.0.0.1:${port}/hang`, { signal: AbortSignal.timeout(20) });
      for (const name of ['java.net.SocketTimeoutException', 'java.net.http.HttpTimeoutException', ...IO])
        expect([name, matches(name, error)]).toEqual([name, true]);
      expect(matches('java.net.SocketException', error)).toBe(false);
    });
  });

  describe.each<Client>(['http', 'axios'])('%s, through a lookup or an agent', (client) => {
    it('EAI_AGAIN: UnknownHostException and IOException', async () => {
      const error = await failureOf(client, 'http://flaky-dns.invalid/', { lookup: failingLookup('EAI_AGAIN') });
      expect((error as { code?: string }).code).toBe('EAI_AGAIN');
      for (const name of ['java.net.UnknownHostException', ...IO])
        expect([name, matches(name, error)]).toEqual([name, true]);
    });

    it.each(['EHOSTUNREACH', 'ENETUNREACH'] as const)(
      '%s: NoRouteToHostException, ConnectException, SocketException and IOException',
      async (code) => {
        const error = await failureOf(client, 'http://10.255.255.1/', { agent: unreachable(code) });
        expect((error as { code?: string }).code).toBe(code);
        for (const name of [
          'java.net.NoRouteToHostException',
          'java.net.ConnectException',
          'java.net.SocketException',
          ...IO,
        ])
          expect([name, matches(name, error)]).toEqual([name, true]);
        expect(matches('java.net.UnknownHostException', error)).toBe(false);
      },
    );
  });

  it("axios's own timeout (ECONNABORTED, 'timeout of 20ms exceeded'): SocketTimeoutException and IOException, not SocketException", async () => {
    const error = await failureOf('axios', `http://127.0.0.1:${port}/hang`, { timeoutMs: 20 });
    expect((error as { code?: string }).code).toBe('ECONNABORTED');
    for (const name of ['java.net.SocketTimeoutException', ...IO])
      expect([name, matches(name, error)]).toEqual([name, true]);
    expect(matches('java.net.SocketException', error)).toBe(false);
  });

  it.each([
    ['UND_ERR_CONNECT_TIMEOUT', 'ConnectTimeoutError', ['java.net.http.HttpConnectTimeoutException']],
    ['UND_ERR_HEADERS_TIMEOUT', 'HeadersTimeoutError', []],
    ['UND_ERR_BODY_TIMEOUT', 'BodyTimeoutError', []],
  ])("fetch's %s: SocketTimeoutException and IOException", (code, name, more) => {
    const error = new TypeError('fetch failed', { cause: Object.assign(new Error(name), { name, code }) });
    for (const java of ['java.net.SocketTimeoutException', 'java.net.http.HttpTimeoutException', ...more, ...IO])
      expect([java, matches(java, error)]).toEqual([java, true]);
    expect(matches('java.net.SocketException', error)).toBe(false);
  });
});
