import { BadRequestException, Body, Controller, HttpStatus, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { PaymentOutcome, PaymentRequest, PaymentsClient } from './payments.client';

const STATUS: Record<PaymentOutcome['status'], number> = {
  charged: HttpStatus.CREATED,
  pending: HttpStatus.ACCEPTED,
  rejected: HttpStatus.SERVICE_UNAVAILABLE,
};

@Controller('payments')
export class PaymentsController {
  constructor(private readonly payments: PaymentsClient) {}

  @Post()
  async pay(@Body() body: Partial<PaymentRequest>, @Res({ passthrough: true }) res: Response): Promise<PaymentOutcome> {
    if (typeof body?.paymentId !== 'string' || !Number.isInteger(body.amount) || (body.amount as number) <= 0) {
      throw new BadRequestException('paymentId (string) and amount (positive integer, pence) are required');
    }
    const outcome = await this.payments.charge({ paymentId: body.paymentId, amount: body.amount as number });
    res.status(STATUS[outcome.status]);
    if (outcome.status === 'rejected') res.setHeader('Retry-After', Math.max(1, Math.ceil((outcome.retryAfterMs ?? 1000) / 1000)));
    return outcome;
  }
}
