/**
 * The HTTP status an error carries, if any: `status`, `statusCode`,
 * `response.status`, or a Nest `HttpException`'s `getStatus()`.
 */
export function httpStatusOf(error: unknown): number | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const e = error as {
    status?: unknown;
    statusCode?: unknown;
    response?: { status?: unknown; statusCode?: unknown };
    getStatus?: () => unknown;
  };
  const candidate =
    typeof e.getStatus === 'function'
      ? e.getStatus()
      : (e.status ?? e.statusCode ?? e.response?.status ?? e.response?.statusCode);
  return typeof candidate === 'number' && Number.isInteger(candidate) && candidate >= 100 && candidate <= 599
    ? candidate
    : undefined;
}

const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * True for an error that says the connection failed: a Node system error
 * code such as `ECONNRESET`, or a failed `fetch` (`TypeError: fetch failed`
 * whose cause carries such a code).
 */
export function isConnectionError(error: unknown): boolean {
  for (
    let e: unknown = error, depth = 0;
    e && typeof e === 'object' && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
    if (e instanceof TypeError && e.message === 'fetch failed') return true;
  }
  return false;
}

/**
 * The delay an error asks for through `Retry-After`, in ms: a
 * `retryAfterMs` property, or a `retry-after` header (seconds or HTTP date)
 * on `headers` or `response.headers`.
 */
export function retryAfterOf(error: unknown, now: () => number = Date.now): number | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const e = error as { retryAfterMs?: unknown; headers?: unknown; response?: { headers?: unknown } };
  if (typeof e.retryAfterMs === 'number' && Number.isFinite(e.retryAfterMs) && e.retryAfterMs >= 0)
    return e.retryAfterMs;
  const value = headerValue(e.headers, 'retry-after') ?? headerValue(e.response?.headers, 'retry-after');
  if (value === undefined) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now());
}

function headerValue(headers: unknown, name: string): string | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  const get = (headers as { get?: unknown }).get;
  const raw: unknown =
    typeof get === 'function'
      ? get.call(headers, name)
      : ((headers as Record<string, unknown>)[name] ?? findCaseless(headers as Record<string, unknown>, name));
  if (Array.isArray(raw)) return typeof raw[0] === 'string' ? raw[0] : undefined;
  return typeof raw === 'string' ? raw : typeof raw === 'number' ? String(raw) : undefined;
}

function findCaseless(headers: Record<string, unknown>, name: string): unknown {
  for (const key of Object.keys(headers)) if (key.toLowerCase() === name) return headers[key];
  return undefined;
}
