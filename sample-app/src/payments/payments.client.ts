import { Injectable } from '@nestjs/common';
import {
  BulkheadFullError,
  CallNotPermittedError,
  CircuitBreaker,
  downstreamIdempotencyKey,
  Fallback,
  ResilienceError,
  Retry,
  Timeout,
} from 'resilience4nest';
import { DownstreamHttpError, fetchJson } from '../downstream/http-client';
import { Dependencies } from '../downstream/dependencies';

/** A payment to charge. */
export interface PaymentRequest {
  paymentId: string;
  amount: number;
}

/**
 * The three answers a payment can get. `rejected` and `pending` are the two
 * failure cases that need opposite messages: a rejected payment never
 * reached the provider (safe to say "not charged"); a pending one may have
 * been charged, so the only honest answer is "outcome unknown".
 */
export type PaymentOutcome =
  | { status: 'charged'; paymentId: string; chargeId: string }
  | { status: 'rejected'; paymentId: string; charged: false; retryAfterMs?: number }
  | { status: 'pending'; paymentId: string; outcome: 'unknown' };

@Injectable()
export class PaymentsClient {
  constructor(private readonly dependencies: Dependencies) {}

  @Fallback([CallNotPermittedError, BulkheadFullError], 'rejectedNotCharged')
  @Fallback([ResilienceError, DownstreamHttpError, TypeError], 'pendingOutcomeUnknown')
  @Retry('payments')
  @CircuitBreaker('payments')
  @Timeout('payments')
  async charge(payment: PaymentRequest): Promise<PaymentOutcome> {
    const { chargeId } = await fetchJson<{ chargeId: string }>(
      'payments',
      `${this.dependencies.payments.url}/charges`,
      {
        method: 'POST',
        // Derived from the client's Idempotency-Key: the same on every attempt, ours and the client's,
        // so the provider deduplicates a retry after a lost reply instead of charging twice.
        headers: { 'idempotency-key': downstreamIdempotencyKey('charge') },
        body: JSON.stringify({ amount: payment.amount }),
      },
    );
    return { status: 'charged', paymentId: payment.paymentId, chargeId };
  }

  /** The breaker (or bulkhead) refused: the request never left, nothing was charged. */
  rejectedNotCharged(payment: PaymentRequest, error: CallNotPermittedError | BulkheadFullError): PaymentOutcome {
    return { status: 'rejected', paymentId: payment.paymentId, charged: false, retryAfterMs: error.retryAfterMs };
  }

  /** The request may have reached the provider: never claim it failed. */
  pendingOutcomeUnknown(payment: PaymentRequest): PaymentOutcome {
    return { status: 'pending', paymentId: payment.paymentId, outcome: 'unknown' };
  }
}
