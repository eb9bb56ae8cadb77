import { currentSignal, deadlineHeaders } from 'resilience4nest';

/**
 * A downstream answered with an error status. It carries `status`, so the
 * retry and breaker defaults classify it (503 is retried, 404 is an answer).
 */
export class DownstreamHttpError extends Error {
  constructor(
    readonly service: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`${service} answered ${status}`);
  }
}

/**
 * `fetch` that passes the attempt's abort signal and the remaining request
 * deadline downstream, and turns error statuses into `DownstreamHttpError`.
 */
export async function fetchJson<T>(service: string, url: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(url, {
    ...init,
    signal: currentSignal(),
    headers: { 'content-type': 'application/json', ...deadlineHeaders(), ...(init.headers as Record<string, string>) },
  });
  const body = await response.json();
  if (!response.ok) throw new DownstreamHttpError(service, response.status, body);
  return body as T;
}
