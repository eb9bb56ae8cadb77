import { BadRequestException, Body, Controller, HttpStatus, Post, Res } from '@nestjs/common';
import { IdempotencySettlement, Idempotent, Priority } from 'resilience4nest';
import { PaymentLedger } from './payment-ledger';
import { PaymentOutcome, PaymentRequest, PaymentsClient } from './payments.client';

const STATUS: Record<PaymentOutcome['status'], number> = {
  charged: HttpStatus.CREATED,
  pending: HttpStatus.ACCEPTED,
  rejected: HttpStatus.SERVICE_UNAVAILABLE,
};

/** What the route sets on the response: Express's `Response` and Fastify's `FastifyReply` both have it. */
interface StatusAndHeaders {
  status(code: number): unknown;
  header(name: string, value: string): unknown;
}

/**
 * What each answer does to the client's Idempotency-Key: a charge (201) or a
 * refusal on the merits (4xx) is the answer to replay; "rejected, not
 * charged" (503) never reached the provider, so the key is freed for a
 * retry; "pending" (202) may have charged, so the key is kept until the
 * reconciler finds out.
 */
export function paymentSettlement(status: number): IdempotencySettlement {
  if (status === (HttpStatus.ACCEPTED as number)) return 'keep';
  if (status === (HttpStatus.SERVICE_UNAVAILABLE as number)) return 'release';
  return status < 500 ? 'store' : 'keep';
}

/**
 * Who is paying, which scopes the Idempotency-Key: this sample has no login,
 * so the customer says who they are, and two customers' keys never meet.
 */
export function customerOf(req: { headers: Record<string, string | string[] | undefined> }): string | undefined {
  const customer = req.headers['x-customer-id'];
  return Array.isArray(customer) ? customer[0] : customer;
}

@Controller('payments')
export class PaymentsController {
  constructor(
    private readonly payments: PaymentsClient,
    private readonly ledger: PaymentLedger,
  ) {}

  @Post()
  // Checkout is the last thing the shop gives up under overload.
  @Priority('critical')
  @Idempotent({ onStatus: paymentSettlement, principal: customerOf })
  async pay(
    @Body() body: Partial<PaymentRequest>,
    @Res({ passthrough: true }) res: StatusAndHeaders,
  ): Promise<PaymentOutcome> {
    if (typeof body?.paymentId !== 'string' || !Number.isInteger(body.amount) || (body.amount as number) <= 0) {
      throw new BadRequestException('paymentId (string) and amount (positive integer, pence) are required');
    }
    const amount = body.amount as number;
    const outcome = await this.payments.charge({ paymentId: body.paymentId, amount });
    // The capture and its payment.captured event commit together; the outbox relay publishes the event.
    if (outcome.status === 'charged')
      await this.ledger.recordCapture({ paymentId: outcome.paymentId, chargeId: outcome.chargeId, amount });
    res.status(STATUS[outcome.status]);
    if (outcome.status === 'rejected')
      res.header('Retry-After', String(Math.max(1, Math.ceil((outcome.retryAfterMs ?? 1000) / 1000))));
    return outcome;
  }
}
