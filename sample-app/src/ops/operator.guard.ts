import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Lets requests to the status endpoints (reading them, forcing a breaker
 * open) through only with `x-operator-token` equal to `OPERATOR_TOKEN`; with no token
 * configured, nobody passes. The comparison takes the same time whatever the
 * token given, so its answer times tell nothing about the expected one.
 */
@Injectable()
export class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const expected = process.env.OPERATOR_TOKEN;
    const given = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers[
      'x-operator-token'
    ];
    if (expected === undefined || expected === '' || typeof given !== 'string') return false;
    return timingSafeEqual(digest(given), digest(expected));
  }
}

/** Equal-length digests, so `timingSafeEqual` compares tokens of any length. */
function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
