import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';

/**
 * Lets state-changing status endpoints (forcing a breaker open) through only
 * with `x-operator-token` equal to `OPERATOR_TOKEN`; with no token
 * configured, nobody passes.
 */
@Injectable()
export class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const expected = process.env.OPERATOR_TOKEN;
    const given = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers[
      'x-operator-token'
    ];
    return expected !== undefined && expected !== '' && given === expected;
  }
}
