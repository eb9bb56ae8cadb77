import type { AxiosInstance } from 'axios';
import request from 'supertest';
import { VirtualClock } from 'resilience4nest';
import { Dependencies } from '../src/downstream/dependencies';

/**
 * Drives the sample app's virtual clock in an e2e test: while requests are
 * unanswered it lets real loopback I/O finish (until every call on the wire
 * is one a down dependency leaves hanging), then jumps the clock to its next
 * timer. Timeouts, backoffs and breaker waits fire on virtual time; healthy
 * dependencies answer on real I/O first.
 */
export class ClockDriver {
  private readonly realFetch = globalThis.fetch;
  private inFlight = 0;

  /**
   * @param dependencies the simulated dependencies, whose hanging requests are waited out on the clock
   * @param clock the module's clock
   * @param axios the app's `HttpService` instance, whose requests count as on the wire too
   * @param otherIo calls in flight on other real I/O (an idempotency store), waited for like fetches
   */
  constructor(
    private readonly dependencies: Dependencies,
    private readonly clock: VirtualClock,
    axios: AxiosInstance,
    private readonly otherIo: () => number = () => 0,
  ) {
    axios.interceptors.request.use((config) => {
      this.inFlight++;
      return config;
    });
    axios.interceptors.response.use(
      (response) => {
        this.inFlight--;
        return response;
      },
      (error: unknown) => {
        this.inFlight--;
        throw error;
      },
    );
    const realFetch = this.realFetch;
    globalThis.fetch = async (...args: Parameters<typeof fetch>) => {
      this.inFlight++;
      try {
        return await realFetch(...args);
      } finally {
        this.inFlight--;
      }
    };
  }

  /** Puts the real `fetch` back. */
  restore(): void {
    globalThis.fetch = this.realFetch;
  }

  /** Sends `pending` and moves the clock until it is answered. */
  async answer(pending: request.Test): Promise<request.Response> {
    return (await this.answerAll([pending]))[0];
  }

  /** Sends every request at once and moves the clock until all are answered (bounded). */
  async answerAll(pending: request.Test[], maxSteps = 200): Promise<request.Response[]> {
    let open = pending.length;
    const responses = pending.map((p) =>
      p.then((r) => {
        open--;
        return r;
      }),
    );
    for (let step = 0; step < maxSteps && open > 0; step++) {
      await this.quiet(() => open === 0);
      if (open > 0) await this.clock.runNext();
    }
    return Promise.all(responses);
  }

  private async quiet(done: () => boolean): Promise<void> {
    const ioDeadline = performance.now() + 5000;
    for (let turn = 0; !done() && performance.now() < ioDeadline; turn++) {
      await VirtualClock.settle();
      const all = this.dependencies.all();
      const hanging = all.reduce((n, d) => n + d.hangingRequests, 0);
      if (turn >= 5 && this.inFlight === hanging && this.otherIo() === 0 && all.every((d) => d.busy === 0)) return;
    }
  }
}
