import { ArgumentsHost } from '@nestjs/common';
import { firstValueFrom, isObservable } from 'rxjs';
import { callerAbortError } from '../../kernel/cancellation';
import { CallNotPermittedError, DeadlineExceededError, TimeoutExceededError } from '../../kernel/errors';
import { ResilienceExceptionFilter } from './resilience-exception.filter';

/** An ArgumentsHost of a context type no adapter is needed for; switching to HTTP would be a bug. */
function hostOf(type: string): ArgumentsHost {
  const refuse = () => {
    throw new Error(`the filter switched a ${type} context to HTTP`);
  };
  return {
    getType: () => type,
    getArgs: () => [],
    getArgByIndex: () => undefined,
    switchToHttp: refuse,
    switchToRpc: refuse,
    switchToWs: refuse,
  } as unknown as ArgumentsHost;
}

describe('ResilienceExceptionFilter outside HTTP', () => {
  const filter = new ResilienceExceptionFilter();

  it.each(['graphql', 'ws'])('rethrows the error unchanged in a %s context', (type) => {
    const error = new CallNotPermittedError('payments', 'OPEN', 5000);
    let thrown: unknown;
    try {
      filter.catch(error, hostOf(type));
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBe(error);
  });

  it('turns the error into the RPC error a microservice client receives', async () => {
    const answer = filter.catch(new CallNotPermittedError('payments', 'OPEN', 12_300), hostOf('rpc'));
    expect(isObservable(answer)).toBe(true);
    await expect(firstValueFrom(answer!)).rejects.toEqual({
      status: 'error',
      code: 'CALL_NOT_PERMITTED',
      message: "CircuitBreaker 'payments' is OPEN and does not permit further calls",
      retryAfterMs: 12_300,
    });
  });

  it('gives a retryable kind without a hint the default delay, and a kind that is not retryable none', async () => {
    await expect(
      firstValueFrom(filter.catch(new CallNotPermittedError('payments', 'FORCED_OPEN'), hostOf('rpc'))!),
    ).rejects.toMatchObject({ retryAfterMs: 1000 });
    const timeout = await firstValueFrom(
      filter.catch(new TimeoutExceededError('inventory', 2000), hostOf('rpc'))!,
    ).catch((e: unknown) => e);
    expect(timeout).toEqual({
      status: 'error',
      code: 'TIMEOUT_EXCEEDED',
      message: "TimeLimiter 'inventory' recorded a call that exceeded 2000ms",
    });
  });

  it('answers for the reason of a call its caller cancelled when it is a request deadline, and rethrows any other', async () => {
    const deadline = callerAbortError(new DeadlineExceededError('deadline', 'the request deadline has passed'));
    await expect(firstValueFrom(filter.catch(deadline, hostOf('rpc'))!)).rejects.toMatchObject({
      code: 'DEADLINE_EXCEEDED',
    });
    const gone = callerAbortError(new DOMException('the client went away', 'AbortError'));
    let thrown: unknown;
    try {
      filter.catch(gone, hostOf('rpc'));
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBe(gone);
  });
});
