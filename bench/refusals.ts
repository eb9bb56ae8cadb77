import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { CallNotPermittedError, RateLimitedError, ResilienceRegistry } from '../lib';
import { Candidate, measure } from './measure';
import { Column, ns, printHeading, printTable, spread, verdict } from './report';
import { BenchSection } from './section';

const FALSE_ANSWER_NS = 300;

const LABELS = {
  flexible: 'rate-limiter-flexible RateLimiterMemory consume(), refused',
  breakerDefault: 'open breaker, refused execute() (stack trace on: the default)',
  breakerBare: 'open breaker, refused execute() (writableStackTraceEnabled: false)',
  limiterDefault: 'rate limiter, refused execute() (stack trace on: the default)',
  limiterBare: 'rate limiter, refused execute() (writableStackTraceEnabled: false)',
  tryAcquire: 'open breaker, tryAcquirePermission() → false',
  reserve: 'rate limiter, reservePermission() → -1',
  acquire: 'rate limiter, acquirePermission() → false',
} as const;

const never = (): Promise<string> => Promise.resolve('never');

/**
 * What a refused call costs, against rate-limiter-flexible refusing a
 * `consume()`: under overload most calls are refused, so a refusal must cost
 * no more than an admission. Each candidate is awaited one call at a time.
 */
export const refusals: BenchSection = {
  name: 'refusals',
  summary:
    'ns per refused call: open breaker and rate limiter (with and without stack traces) vs rate-limiter-flexible',
  async run() {
    const registry = new ResilienceRegistry({
      circuitBreaker: { instances: { withStack: {}, bare: { writableStackTraceEnabled: false } } },
      rateLimiter: {
        configs: { default: { limitForPeriod: 1, limitRefreshPeriod: '1h', timeoutDuration: 0 } },
        instances: { withStack: {}, bare: { writableStackTraceEnabled: false } },
      },
    });
    const flexible = new RateLimiterMemory({ points: 1, duration: 3600 });
    try {
      for (const name of ['withStack', 'bare']) {
        registry.circuitBreaker(name).transitionToForcedOpenState();
        await registry.rateLimiter(name).waitForPermission();
      }
      await flexible.consume('k');
      const refused =
        (kind: new (...args: never[]) => Error) =>
        (error: unknown): string => {
          if (!(error instanceof kind)) throw error;
          return 'refused';
        };
      // Held once, as a caller holds its instances and handlers: the loop times the refusal, not a registry lookup.
      const breakers = { withStack: registry.circuitBreaker('withStack'), bare: registry.circuitBreaker('bare') };
      const limiters = { withStack: registry.rateLimiter('withStack'), bare: registry.rateLimiter('bare') };
      const notPermitted = refused(CallNotPermittedError);
      const rateLimited = refused(RateLimitedError);
      const asRefused = (error: unknown): string => {
        if (!(error instanceof RateLimiterRes)) throw error;
        return 'refused';
      };
      const candidates: Candidate[] = [
        {
          label: LABELS.flexible,
          call: () => flexible.consume('k').then(() => 'admitted', asRefused),
          expect: 'refused',
        },
        {
          label: LABELS.breakerDefault,
          call: () => breakers.withStack.execute(never).catch(notPermitted),
          expect: 'refused',
        },
        {
          label: LABELS.breakerBare,
          call: () => breakers.bare.execute(never).catch(notPermitted),
          expect: 'refused',
        },
        {
          label: LABELS.limiterDefault,
          call: () => limiters.withStack.execute(never).catch(rateLimited),
          expect: 'refused',
        },
        {
          label: LABELS.limiterBare,
          call: () => limiters.bare.execute(never).catch(rateLimited),
          expect: 'refused',
        },
        {
          label: LABELS.tryAcquire,
          call: async () => breakers.withStack.tryAcquirePermission(),
          expect: false,
        },
        { label: LABELS.reserve, call: async () => limiters.withStack.reservePermission(), expect: -1 },
        { label: LABELS.acquire, call: () => limiters.withStack.acquirePermission(), expect: false },
      ];
      const results = await measure(candidates);
      const get = (label: string): number => results.find((r) => r.label === label)!.nsPerCall;
      printHeading('Refused calls (ns per awaited call)');
      const columns: Column[] = [
        { heading: 'path', align: 'left' },
        { heading: 'ns/call' },
        { heading: 'vs rate-limiter-flexible' },
        { heading: 'spread' },
      ];
      const base = get(LABELS.flexible);
      printTable(
        columns,
        results.map((m) => [m.label, ns(m.nsPerCall), `${(m.nsPerCall / base).toFixed(2)}×`, spread(m.spread)]),
      );
      console.log('');
      for (const label of [LABELS.breakerBare, LABELS.limiterBare])
        console.log(
          verdict(
            `${label} ≤ rate-limiter-flexible's refusal`,
            `${ns(get(label))} vs ${ns(base)} ns`,
            get(label) <= base,
          ),
        );
      for (const label of [LABELS.tryAcquire, LABELS.reserve, LABELS.acquire])
        console.log(verdict(`${label} ≤ ${FALSE_ANSWER_NS} ns`, `${ns(get(label))} ns`, get(label) <= FALSE_ANSWER_NS));
      console.log(
        `the default (a stack trace on each refusal) costs ${ns(get(LABELS.breakerDefault) - get(LABELS.breakerBare))} ns more per refused breaker call, ${ns(get(LABELS.limiterDefault) - get(LABELS.limiterBare))} ns per refused rate-limiter call`,
      );
      console.log(
        '\nEach call is awaited, so the false/-1 answers include one resolved promise. rate-limiter-flexible rejects with a RateLimiterRes (no Error).',
      );
    } finally {
      registry.dispose();
    }
  },
};
