import { Clock } from '../lib';
import {
  CircuitBreakerStore,
  FleetListener,
  FleetOpenReport,
  FleetProbeClaim,
  FleetProbeRelease,
  FleetPublication,
  FleetTransition,
} from '../lib/policies/circuit-breaker/circuit-breaker-store';

/** One breaker's shared state, as RedisCircuitBreakerStore keeps it in its hash, sorted set and lease key. */
interface FleetRecord {
  state?: FleetTransition['state'];
  until: number;
  version: number;
  replica: string;
  cause: FleetTransition['cause'];
  reports: Map<string, number>;
  lease?: { replica: string; until: number };
}

/** The breaker a record is of: a name, or one key of it. */
interface Subject {
  readonly name: string;
  readonly key?: string;
}

/**
 * The same state machine as RedisCircuitBreakerStore's scripts, in memory on
 * one clock, so the fleet scenario can run ten replicas on a virtual clock.
 * test/circuit-breaker/store.contract.spec.ts holds both stores to the same
 * answers. Transitions reach listeners on the next microtask, as pub/sub
 * messages arrive after the command that published them. `down()` and
 * `up()` play Redis stopping and coming back. A key's state is kept apart
 * from its name's and numbered on the clock as in Redis; it does not
 * expire here.
 */
export class InMemoryCircuitBreakerStore implements CircuitBreakerStore {
  private readonly records = new Map<string, FleetRecord>();
  private readonly listeners = new Set<FleetListener>();
  private reachable = true;
  /** Commands the store answered, for the scenario's table. */
  commands = 0;

  constructor(private readonly clock: Clock) {}

  async reportOpen(report: FleetOpenReport): Promise<FleetTransition | undefined> {
    const record = this.command(report.name, report.key);
    const now = this.clock.now();
    if (record.state === 'FORCED_OPEN' || record.state === 'DISABLED' || record.state === 'METRICS_ONLY')
      return undefined;
    if (record.state === 'OPEN' && record.until > now) return undefined;
    for (const [replica, until] of record.reports) if (until <= now) record.reports.delete(replica);
    record.reports.set(report.replica, now + report.waitMs);
    if (record.reports.size < report.quorum) return undefined;
    return this.transition(record, report, 'OPEN', report.waitMs, report.replica, 'quorum');
  }

  async publish(publication: FleetPublication): Promise<FleetTransition> {
    const record = this.command(publication.name, publication.key);
    return this.transition(
      record,
      publication,
      publication.state,
      publication.waitMs,
      publication.replica,
      publication.cause,
    );
  }

  async claimProbe(claim: FleetProbeClaim): Promise<boolean> {
    const record = this.command(claim.name, claim.key);
    const now = this.clock.now();
    if (record.lease !== undefined && record.lease.until > now) return false;
    record.lease = { replica: claim.replica, until: now + claim.leaseMs };
    return true;
  }

  async releaseProbe(release: FleetProbeRelease): Promise<boolean> {
    const record = this.command(release.name, release.key);
    const lease = record.lease;
    if (lease === undefined || lease.until <= this.clock.now() || lease.replica !== release.replica) return false;
    record.lease = undefined;
    return true;
  }

  async read(name: string, key?: string): Promise<FleetTransition | undefined> {
    const record = this.command(name, key);
    if (record.state === undefined) return undefined;
    const remainingMs = record.state === 'OPEN' ? Math.max(0, record.until - this.clock.now()) : 0;
    return this.describe(record, { name, key }, remainingMs);
  }

  async listen(listener: FleetListener): Promise<() => Promise<void>> {
    this.listeners.add(listener);
    return async () => void this.listeners.delete(listener);
  }

  /** Redis stops: every command fails and every listener hears the connection go. */
  down(): void {
    this.reachable = false;
    for (const listener of this.listeners) listener.disconnected(new Error('connect ECONNREFUSED'));
  }

  /** Redis is back, with its data (as after a network cut): listeners hear it on the next microtask. */
  up(): void {
    this.reachable = true;
    for (const listener of this.listeners) queueMicrotask(() => listener.reconnected());
  }

  private command(name: string, key: string | undefined): FleetRecord {
    if (!this.reachable) throw new Error('connect ECONNREFUSED');
    this.commands++;
    // A name holds no control character: no name passes for a key.
    const subject = key === undefined ? name : `${name}\u0000${key}`;
    let record = this.records.get(subject);
    if (record === undefined) {
      record = { until: 0, version: 0, replica: '', cause: 'quorum', reports: new Map() };
      this.records.set(subject, record);
    }
    return record;
  }

  private transition(
    record: FleetRecord,
    subject: Subject,
    state: FleetTransition['state'],
    waitMs: number,
    replica: string,
    cause: FleetTransition['cause'],
  ): FleetTransition {
    record.version = subject.key === undefined ? record.version + 1 : Math.max(record.version + 1, this.clock.now());
    record.state = state;
    record.until = state === 'OPEN' ? this.clock.now() + waitMs : 0;
    record.replica = replica;
    record.cause = cause;
    record.reports.clear();
    record.lease = undefined;
    const transition = this.describe(record, subject, state === 'OPEN' ? waitMs : 0);
    for (const listener of this.listeners) queueMicrotask(() => listener.transition(transition));
    return transition;
  }

  private describe(record: FleetRecord, { name, key }: Subject, remainingMs: number): FleetTransition {
    return {
      name,
      key,
      state: record.state as FleetTransition['state'],
      remainingMs,
      version: record.version,
      replica: record.replica,
      cause: record.cause,
    };
  }
}
