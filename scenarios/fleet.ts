import { CallNotPermittedError, CircuitBreakerPolicy, ResilienceRegistry, VirtualClock } from '../lib';
import { InMemoryCircuitBreakerStore } from './fleet-store';
import { ScenarioReport, table } from './kit';
import { lineChart } from './svg';

/*
 * The fleet experiment of docs/scenarios.md: 10 replicas of one service,
 * each with its own registry (the real breaker), on one virtual clock,
 * call one dependency. Replica i calls every (i + 1) × 100 ms, so the
 * busiest makes 10 calls a second and the quietest 1: their windows fill
 * at different speeds, as in a real fleet behind an uneven balancer.
 *
 * Outage: the dependency fails every call from t=30 s to t=90 s. Local
 * breakers each learn it alone and each send their own half-open trials;
 * a fleet breaker opens every replica once `quorum` replicas have opened,
 * and one replica probes for all.
 *
 * Broken replica: the dependency is healthy, but replica 0's own network
 * fails its calls from t=30 s to t=90 s. At quorum 1 that one replica
 * opens the whole fleet; at quorum 3 it opens alone.
 *
 * The store is the in-memory twin of RedisCircuitBreakerStore (the same
 * contract, test/circuit-breaker/store.contract.spec.ts), on the same clock.
 */

export const REPLICAS = 10;
export const RUN_MS = 120_000;
export const TROUBLE_START_MS = 30_000;
export const TROUBLE_END_MS = 90_000;
export const LATENCY_MS = 10;
/** The broken replica of the second experiment. */
export const BROKEN_REPLICA = 0;

/** One breaker for every replica: half the last 10 calls failed opens it for 10 s, one trial call. */
export const FLEET_BREAKER = {
  slidingWindowType: 'COUNT_BASED',
  slidingWindowSize: 10,
  minimumNumberOfCalls: 10,
  failureRateThreshold: 50,
  waitDurationInOpenState: '10s',
  permittedNumberOfCallsInHalfOpenState: 1,
} as const;

/** How the replicas' breakers are set up: each on its own, or fleet-wide at a quorum. */
export type Sharing = 'local' | { readonly quorum: number };

/** What goes wrong: the dependency for everyone, or one replica's own network. */
export type Trouble = 'outage' | 'broken-replica';

/** The figures of one run. */
export interface FleetRun {
  readonly sharing: Sharing;
  readonly trouble: Trouble;
  readonly calls: number;
  /** Calls that reached the dependency while it was failing them (outage: every replica; broken replica: replica 0's). */
  readonly reachedFailing: number;
  /** Calls refused by a breaker. */
  readonly refused: number;
  /** Calls refused that would have succeeded: started after the trouble, or on a replica it did not touch. */
  readonly refusedHealthy: number;
  /** Seconds from the start of the trouble until every replica was OPEN, or undefined when they never all were. */
  readonly allOpenAfterS: number | undefined;
  /** Half-open trial rounds started, summed over replicas. */
  readonly probes: number;
  /** Commands the store answered. */
  readonly storeCommands: number;
  /** Calls reaching the failing dependency, per second of the run. */
  readonly reachedPerSecond: readonly number[];
}

const troubled = (t: number): boolean => t >= TROUBLE_START_MS && t < TROUBLE_END_MS;

/** Runs the 10 replicas for two minutes with `sharing` through `trouble`. */
export async function runFleet(sharing: Sharing, trouble: Trouble): Promise<FleetRun> {
  const clock = new VirtualClock();
  const store = new InMemoryCircuitBreakerStore(clock);
  const registries = Array.from(
    { length: REPLICAS },
    () =>
      new ResilienceRegistry({
        clock,
        random: () => 0,
        circuitBreakerStore: store,
        circuitBreaker: {
          instances: { dependency: { ...FLEET_BREAKER, shared: sharing === 'local' ? false : sharing } },
        },
      }),
  );
  const breakers = registries.map((r) => r.circuitBreaker('dependency'));
  await Promise.all(registries.map((r) => r.fleetJoined()));
  let allOpenAt: number | undefined;
  let probes = 0;
  const open = new Set<number>();
  breakers.forEach((breaker, i) =>
    breaker.onStateTransition(({ to }) => {
      if (to === 'HALF_OPEN') probes++;
      if (to === 'OPEN') open.add(i);
      else open.delete(i);
      if (open.size === REPLICAS && allOpenAt === undefined) allOpenAt = clock.now();
    }),
  );
  const figures = { calls: 0, reachedFailing: 0, refused: 0, refusedHealthy: 0 };
  const reachedPerSecond = new Array<number>(RUN_MS / 1000).fill(0);
  const fails = (replica: number, t: number): boolean =>
    troubled(t) && (trouble === 'outage' || replica === BROKEN_REPLICA);

  const call = (replica: number, breaker: CircuitBreakerPolicy): void => {
    const t = clock.now();
    figures.calls++;
    breaker
      .execute(() => {
        const failing = fails(replica, t);
        if (failing) {
          figures.reachedFailing++;
          reachedPerSecond[Math.floor(t / 1000)]++;
        }
        return new Promise<string>((resolve, reject) =>
          clock.setTimeout(() => (failing ? reject(new Error('dependency failed')) : resolve('ok')), LATENCY_MS),
        );
      })
      .catch((error: unknown) => {
        if (!(error instanceof CallNotPermittedError)) return;
        figures.refused++;
        if (!fails(replica, t)) figures.refusedHealthy++;
      });
  };
  breakers.forEach((breaker, i) => {
    const every = (i + 1) * 100;
    const tick = (): void => {
      if (clock.now() >= RUN_MS) return;
      call(i, breaker);
      clock.setTimeout(tick, every);
    };
    clock.setTimeout(tick, i * 7);
  });
  await clock.advance(RUN_MS + 1000);
  for (const registry of registries) registry.dispose();
  return {
    sharing,
    trouble,
    ...figures,
    allOpenAfterS: allOpenAt === undefined ? undefined : (allOpenAt - TROUBLE_START_MS) / 1000,
    probes,
    storeCommands: store.commands,
    reachedPerSecond,
  };
}

/** Every run of the scenario. */
export interface FleetResult {
  readonly outage: readonly FleetRun[];
  readonly brokenReplica: readonly FleetRun[];
}

const SHARINGS: readonly Sharing[] = ['local', { quorum: 1 }, { quorum: 3 }];

/** Runs the outage and the broken replica with local breakers and fleet breakers at quorum 1 and 3. */
export async function runFleetScenario(): Promise<FleetResult> {
  const outage: FleetRun[] = [];
  const brokenReplica: FleetRun[] = [];
  for (const sharing of SHARINGS) outage.push(await runFleet(sharing, 'outage'));
  for (const sharing of SHARINGS) brokenReplica.push(await runFleet(sharing, 'broken-replica'));
  return { outage, brokenReplica };
}

/** `local`, or `fleet, quorum N`. */
export const sharingLabel = (sharing: Sharing): string =>
  sharing === 'local' ? 'local breakers' : `fleet, quorum ${sharing.quorum}`;

/** The printed tables. */
export function fleetTable(r: FleetResult): string {
  const row = (run: FleetRun): string[] => [
    sharingLabel(run.sharing),
    String(run.calls),
    String(run.reachedFailing),
    String(run.refused),
    String(run.refusedHealthy),
    run.allOpenAfterS === undefined ? 'never' : `${run.allOpenAfterS.toFixed(1)} s`,
    String(run.probes),
    String(run.storeCommands),
  ];
  const header = [
    '',
    'calls',
    'reached failing',
    'refused',
    'refused, would succeed',
    'all open after',
    'probes',
    'store cmds',
  ];
  const local = r.outage[0].reachedFailing;
  return [
    `fleet: ${REPLICAS} replicas, replica i calls every (i+1)×100 ms; ${(TROUBLE_END_MS - TROUBLE_START_MS) / 1000} s of trouble from t=${TROUBLE_START_MS / 1000} s in a ${RUN_MS / 1000} s run`,
    `fleet: breaker COUNT_BASED window 10, 50% failures, 10 s open, 1 half-open trial`,
    'outage: the dependency fails every call',
    table(header, r.outage.map(row)),
    `the dependency took ${local} failing calls with local breakers, ` +
      r.outage
        .slice(1)
        .map(
          (run) =>
            `${run.reachedFailing} (${(local / run.reachedFailing).toFixed(1)}x fewer) at ${sharingLabel(run.sharing)}`,
        )
        .join(', ') +
      '.',
    `broken replica: the dependency is healthy; replica ${BROKEN_REPLICA}'s own network fails its calls`,
    table(header, r.brokenReplica.map(row)),
    `quorum 1 lets one broken replica open the fleet: ${r.brokenReplica[1].refusedHealthy} calls that would have succeeded refused; ` +
      `quorum 3 keeps the breaker on that replica: ${r.brokenReplica[2].refusedHealthy}, as with local breakers.`,
  ].join('\n');
}

/** Calls reaching the failing dependency per second, for each breaker setup, in the outage. */
export function fleetChart(r: FleetResult): string {
  return lineChart({
    title: 'fleet: calls reaching a dependency that fails for 60 s, 10 replicas',
    xLabel: 'time (s)',
    yLabel: 'calls reaching the failing dependency per second',
    series: r.outage.map((run) => ({
      label: `${sharingLabel(run.sharing)}: ${run.reachedFailing} calls`,
      points: run.reachedPerSecond.map((n, s) => [s + 0.5, n] as const),
    })),
    bands: [{ from: TROUBLE_START_MS / 1000, to: TROUBLE_END_MS / 1000, label: 'dependency failing' }],
  });
}

/** The scenario as the CLI runs it. */
export async function fleet(): Promise<ScenarioReport> {
  const result = await runFleetScenario();
  return { table: fleetTable(result), svg: fleetChart(result) };
}
