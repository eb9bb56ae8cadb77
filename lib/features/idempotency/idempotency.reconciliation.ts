import { IdempotencyKeyInProgressError, IdempotencyOutcomeUnknownError } from '../../kernel/errors';
import { InProgressRecord, StoredHttpResponse, StoredResponse } from './idempotency-store';
import { deriveDownstreamKey } from './idempotency-key';
import { NO_RECONCILER } from './idempotency.messages';
import { IdempotencyReconciler, IdempotencyReconciliation, StaleIdempotencyKey } from './idempotency.options';
import { IdempotencyOrigin, IdempotencyStart, IdempotencyTransport, IdempotentTarget } from './idempotent-target';
import { boundedStoreCall } from './store-call';

/** A transactional method may always run again: a stale key means its transaction never committed. */
const RUN_AGAIN: IdempotencyReconciler = () => ({ action: 'run' });

/**
 * Finishes a key whose earlier attempt stopped without finishing (its lease
 * ran out while `in_progress`): the caller already took the key over with
 * `token`, and the reconciler says whether to run the method again, wait,
 * or complete the key with the earlier attempt's answer. Without a
 * reconciler (and outside a transaction) the key stays claimed and the
 * caller is refused: running again on a guess could do the work twice.
 *
 * @param key - the client's key, for the reconciler
 * @param record - the stale record as the claim found it
 */
export async function reconcileStaleKey(
  target: IdempotentTarget,
  storeKey: string,
  key: string,
  token: string,
  record: InProgressRecord,
  origin: IdempotencyOrigin,
): Promise<IdempotencyStart> {
  const { name, settings } = target;
  const { store, leaseMs, ttlMs, transactional } = settings;
  const reconciler = settings.reconciler ?? (transactional ? RUN_AGAIN : undefined);
  if (reconciler === undefined) {
    target.warn(NO_RECONCILER(name));
    // Not "in progress, retry later": nothing runs it, so an invitation to poll would be false for the whole TTL.
    return { kind: 'refuse', error: new IdempotencyOutcomeUnknownError(name), outcome: 'kept_unknown' };
  }
  const stale: StaleIdempotencyKey = {
    target: name,
    transport: origin.transport,
    key,
    record,
    downstreamKey: (suffix = '') => deriveDownstreamKey(storeKey, record.createdAt, suffix),
    request: origin.request,
    args: origin.args,
  };
  let verdict: IdempotencyReconciliation;
  try {
    verdict = await reconciler(stale);
  } catch (error) {
    // The key keeps this attempt's lease: nobody runs it until the reconciler is asked again.
    target.report('kept_unknown', origin.transport, key, error);
    throw error;
  }
  switch (verdict?.action) {
    case 'run':
      return { kind: 'run', token, record };
    case 'wait':
      // The reconciler is asked again once this attempt's lease runs out: 409 with that time is the truth.
      return { kind: 'refuse', error: new IdempotencyKeyInProgressError(name, leaseMs), outcome: 'kept_unknown' };
    case 'complete': {
      const response = reconciledResponse(verdict, origin.transport, name);
      const completed = await boundedStoreCall(settings, name, 'complete', () =>
        store.complete(storeKey, token, response, ttlMs),
      );
      return completed
        ? { kind: 'replay', response, outcome: 'reconciled' }
        : { kind: 'refuse', error: new IdempotencyKeyInProgressError(name, leaseMs), outcome: 'in_progress' };
    }
    default:
      throw new TypeError(
        `resilience4nest: the reconciler of @Idempotent on ${name} returned ${JSON.stringify(verdict)}; expected { action: 'run' | 'wait' | 'complete', ... }`,
      );
  }
}

/** The stored form of a reconciler's answer. */
function reconciledResponse(
  verdict: IdempotencyReconciliation,
  transport: IdempotencyTransport,
  name: string,
): StoredResponse {
  if (transport === 'call') return { kind: 'result', value: (verdict as { value?: unknown }).value };
  const answer = verdict as { status?: unknown; body?: unknown; headers?: Readonly<Record<string, string>> };
  if (
    typeof answer.status !== 'number' ||
    !Number.isInteger(answer.status) ||
    answer.status < 100 ||
    answer.status > 599
  ) {
    throw new TypeError(
      `resilience4nest: the reconciler of @Idempotent on ${name} completed an HTTP request without a valid 'status', got ${String(answer.status)}`,
    );
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers ?? {}))
    if (name.toLowerCase() !== 'set-cookie') headers[name.toLowerCase()] = String(value);
  const json = answer.body !== undefined && typeof answer.body !== 'string';
  if (json && headers['content-type'] === undefined) headers['content-type'] = 'application/json; charset=utf-8';
  const body = answer.body === undefined ? '' : json ? JSON.stringify(answer.body) : (answer.body as string);
  return { kind: 'http', status: answer.status, headers, body } satisfies StoredHttpResponse;
}
