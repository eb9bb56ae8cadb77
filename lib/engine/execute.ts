import { ExecuteOptions, underCallerSignal } from '../kernel/cancellation';
import { Clock } from '../kernel/clock';
import { AttemptFunction, invokeWithSignal } from '../kernel/policy';
import { Pipeline } from '../decorators/return-kind';
import { StandardLayers } from './layers';
import { StandardPipeline } from './standard-pipeline';

/** Calls the function in an `execute` call's argument array; its signal is made only for a function that takes one. */
export function invokeCall(args: unknown[]): unknown {
  return invokeWithSignal(args[0] as AttemptFunction<unknown>);
}

/** The engine over one policy's hooks: what that policy's `execute` runs. */
export function soloPipeline(layers: StandardLayers, clock: Clock): Pipeline {
  return new StandardPipeline(layers, invokeCall, clock).run;
}

/**
 * `execute(fn, options)` through `run`: in a scope that follows
 * `options.signal` when one is given, so a caller outside any request scope
 * can cancel the call.
 */
export function executeThrough<R>(
  run: Pipeline,
  clock: Clock,
  fn: AttemptFunction<R>,
  options: ExecuteOptions | undefined,
): Promise<R> {
  const signal = options?.signal;
  // A pipeline used per key reads its keys from what follows the function; every layer calls only the function.
  const args = options?.args === undefined ? [fn] : [fn, ...options.args];
  if (signal === undefined) return run(args) as Promise<R>;
  return underCallerSignal(clock, signal, run as (args: unknown[]) => Promise<R>, args);
}
