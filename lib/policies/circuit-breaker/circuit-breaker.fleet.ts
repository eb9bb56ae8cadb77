import { randomUUID } from 'node:crypto';
import { Clock } from '../../kernel/clock';
import type { CircuitBreakerState } from './circuit-breaker.events';
import type { CircuitBreakerPolicy } from './circuit-breaker.policy';
import { CircuitBreakerFleetHooks } from './circuit-breaker.fleet-hooks';
import { CircuitBreakerStore, FleetListener, FleetTransition } from './circuit-breaker-store';
import { FLEET_STORE_BACK, FLEET_STORE_FAILING } from './circuit-breaker.messages';

/** States a quorum or a probe's verdict may move: the ones the calls move, not the ones set by hand. */
const FOLLOWS_CALLS: ReadonlySet<CircuitBreakerState> = new Set(['CLOSED', 'OPEN', 'HALF_OPEN']);

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Where the members of one breaker are kept: its name, or for the breaker
 * of a key its name, a NUL and its key (a name holds no control character,
 * so no name passes for a key).
 */
function subjectOf(name: string, key: string | undefined): string {
  return key === undefined ? name : `${name}\u0000${key}`;
}

/**
 * The replicas' shared view of fleet-wide breakers, one per registry: its
 * replica id, its subscription to the store's transitions, and whether the
 * store answers. While it does not, each breaker runs as a local breaker
 * (nothing is sent), one line is logged, and when it is back every breaker
 * reads its fleet's state again. The breakers of a shared name's keys join
 * it as they are made, each apart, and leave it when they are evicted. See
 * docs/decisions/0009-fleet-breaker-shares-transitions.md and
 * docs/decisions/0011-fleet-breakers-per-key.md.
 */
export class CircuitBreakerFleet implements FleetListener {
  /** This replica's id in the store. */
  readonly replica = randomUUID();
  private readonly members = new Map<string, FleetMember[]>();
  private listening: Promise<void> | undefined;
  private stop: (() => Promise<void>) | undefined;
  private disposed = false;
  /** False from a failure or lost connection until the store's connection is back. */
  reachable = true;

  /**
   * @param store - where transitions are shared
   * @param clock - the breakers' clock (for when a lost probe lease may be claimed again)
   * @param log - receives the one line per outage of the store, and the one when it is back
   */
  constructor(
    readonly store: CircuitBreakerStore,
    readonly clock: Clock,
    private readonly log: (message: string) => void,
  ) {}

  /**
   * Makes `breaker` (a name's, or one key's) fleet-wide with `quorum`, and
   * brings it to its fleet's current state once known: a key made while
   * its fleet is OPEN opens too, as a replica starting then does.
   */
  join(breaker: CircuitBreakerPolicy, quorum: number): void {
    const member = new FleetMember(this, breaker, quorum);
    breaker.joinFleet(member);
    const subject = subjectOf(breaker.name, breaker.key);
    const same = this.members.get(subject);
    if (same === undefined) this.members.set(subject, [member]);
    else same.push(member);
    this.listening ??= this.store.listen(this).then(
      (stop) => {
        if (this.disposed) return void stop().catch(() => undefined);
        this.stop = stop;
      },
      (error: unknown) => this.failed(error),
    );
    member.catchUp(this.listening);
  }

  /**
   * Takes `breaker` out of its fleet (its key, or its undeclared name, was
   * evicted): it hears no more transitions, tells the fleet nothing more,
   * and gives back a probe lease it holds or is being granted.
   */
  leave(breaker: CircuitBreakerPolicy): void {
    const subject = subjectOf(breaker.name, breaker.key);
    const same = this.members.get(subject);
    const member = same?.find((m) => m.breaker === breaker);
    if (same === undefined || member === undefined) return;
    same.splice(same.indexOf(member), 1);
    if (same.length === 0) this.members.delete(subject);
    member.leave();
  }

  /** Resolves once the subscription is made and every breaker joined so far has read its fleet's state (or failed to). */
  async joined(): Promise<void> {
    await this.listening;
    await Promise.all([...this.members.values()].flat().map((m) => m.reading));
  }

  /** {@inheritDoc FleetListener.transition} */
  transition(transition: FleetTransition): void {
    const members = this.members.get(subjectOf(transition.name, transition.key));
    if (members !== undefined) for (const member of members) member.follow(transition);
  }

  /** {@inheritDoc FleetListener.disconnected} */
  disconnected(error: unknown): void {
    this.failed(error);
  }

  /** {@inheritDoc FleetListener.reconnected} */
  reconnected(): void {
    if (this.reachable) return;
    this.reachable = true;
    const all = [...this.members.values()].flat();
    this.log(FLEET_STORE_BACK(all.length));
    for (const member of all) member.catchUp();
  }

  /** A store command failed, or the connection went: breakers run locally, and it is logged once per outage. */
  failed(error: unknown): void {
    if (!this.reachable || this.disposed) return;
    this.reachable = false;
    this.log(FLEET_STORE_FAILING(errorText(error)));
  }

  /** Stops listening (on application shutdown). */
  dispose(): Promise<void> {
    this.disposed = true;
    return this.stop?.() ?? Promise.resolve();
  }
}

/**
 * One fleet-wide breaker's part in its fleet: reports its own OPEN,
 * claims the probe lease once the fleet's wait is over, publishes its
 * verdicts and the transitions made by hand, and follows the others'.
 */
class FleetMember implements CircuitBreakerFleetHooks {
  /** The last version of the fleet's state this replica has followed. */
  private seen = 0;
  /** True while this replica is OPEN (or probing) because the fleet is: its probe takes the lease and its verdict is the fleet's. */
  private fleetOpen = false;
  private claiming = false;
  /** Clock time before which a lost lease is not asked for again (its holder still has it). */
  private nextClaimAt = Number.NEGATIVE_INFINITY;
  /** True from the lease being granted to this replica until a transition of the fleet ends it. */
  private leased = false;
  /** True once the breaker left the fleet: it runs as a local breaker, and the fleet hears nothing of it. */
  private left = false;
  /** The pending read of the fleet's state, for {@link CircuitBreakerFleet.joined}. */
  reading: Promise<void> = Promise.resolve();

  constructor(
    private readonly fleet: CircuitBreakerFleet,
    readonly breaker: CircuitBreakerPolicy,
    private readonly quorum: number,
  ) {}

  opened(waitMs: number): void {
    this.fleetOpen = false;
    if (!this.fleet.reachable || this.left) return;
    const { name, key } = this.breaker;
    this.fleet.store
      .reportOpen({ name, key, replica: this.fleet.replica, quorum: this.quorum, waitMs })
      .then((transition) => transition !== undefined && this.follow(transition), this.failed);
  }

  decided(to: CircuitBreakerState, waitMs: number): void {
    // A round this replica started on its own (below the quorum) is its own business; a failed one is a new report.
    if (!this.fleetOpen || this.left) {
      if (to === 'OPEN') this.opened(waitMs);
      return;
    }
    this.fleetOpen = to === 'OPEN';
    this.send(to, waitMs, 'verdict');
  }

  mayProbe(): boolean {
    if (!this.fleetOpen || !this.fleet.reachable || this.left) return true;
    if (this.claiming || this.fleet.clock.now() < this.nextClaimAt) return false;
    this.claiming = true;
    const settings = this.breaker.config;
    const leaseMs =
      settings.maxWaitDurationInHalfOpenState > 0
        ? settings.maxWaitDurationInHalfOpenState
        : settings.waitDurationInOpenState;
    const { name, key } = this.breaker;
    this.fleet.store.claimProbe({ name, key, replica: this.fleet.replica, leaseMs }).then(
      (held) => {
        this.claiming = false;
        if (!held) this.nextClaimAt = this.fleet.clock.now() + leaseMs;
        else if (this.left) this.release();
        else {
          this.leased = true;
          this.breaker.probe();
        }
      },
      (error: unknown) => {
        this.claiming = false;
        this.failed(error);
        // Without the store, the replica probes for itself.
        this.breaker.probe();
      },
    );
    return false;
  }

  changedByHand(to: CircuitBreakerState, waitMs: number, reset: boolean): void {
    if (this.left) return;
    this.fleetOpen = to === 'OPEN';
    // A half-open round started by hand stays this replica's own: the fleet's has one prober.
    if (to === 'HALF_OPEN') return;
    this.send(to, waitMs, reset ? 'reset' : 'manual');
  }

  /** Stops following the fleet, and gives back the probe lease this replica holds (granted since, it is given back then). */
  leave(): void {
    this.left = true;
    if (this.leased) this.release();
  }

  /** Follows a transition heard from the store, once, unless this replica made it. */
  follow(transition: FleetTransition): void {
    if (transition.version <= this.seen || this.left) return;
    this.seen = transition.version;
    // Every transition of the fleet ends its probe lease.
    this.leased = false;
    if (transition.replica === this.fleet.replica) {
      if (transition.state === 'OPEN' && this.breaker.state === 'OPEN') this.fleetOpen = true;
      return;
    }
    this.apply(transition);
  }

  /**
   * Reads the fleet's state (on joining, after `before`, and when the store
   * is back) and follows it unless a newer transition was heard meanwhile.
   * A version other than the last one seen counts, as a restarted Redis
   * counts versions from 1 again.
   */
  catchUp(before: Promise<void> = Promise.resolve()): void {
    this.reading = before
      .then(() => {
        const seenBefore = this.seen;
        return this.fleet.store.read(this.breaker.name, this.breaker.key).then((transition) => {
          if (this.seen !== seenBefore || this.left) return;
          this.seen = transition?.version ?? 0;
          if (transition !== undefined && transition.replica !== this.fleet.replica) this.apply(transition);
        });
      })
      .catch(this.failed);
  }

  private apply(t: FleetTransition): void {
    const breaker = this.breaker;
    const current = breaker.state;
    if (t.cause === 'reset') {
      this.fleetOpen = false;
      if (current !== 'CLOSED') breaker.followFleet('CLOSED', 0, true);
      return;
    }
    if (t.cause === 'manual') {
      if (t.state === 'OPEN' && current === 'METRICS_ONLY') return;
      this.fleetOpen = t.state === 'OPEN';
      if (t.state !== current || t.state === 'OPEN') breaker.followFleet(t.state, t.remainingMs, false);
      return;
    }
    if (!FOLLOWS_CALLS.has(current)) return;
    if (t.state === 'OPEN') {
      if (t.remainingMs <= 0) return;
      this.fleetOpen = true;
      breaker.followFleet('OPEN', t.remainingMs, false);
    } else if (current !== 'CLOSED') {
      this.fleetOpen = false;
      breaker.followFleet(t.state, 0, false);
    }
  }

  private send(state: CircuitBreakerState, waitMs: number, cause: FleetTransition['cause']): void {
    // The transition published ends the lease in the store.
    this.leased = false;
    if (!this.fleet.reachable) return;
    this.fleet.store
      .publish({
        name: this.breaker.name,
        key: this.breaker.key,
        replica: this.fleet.replica,
        state,
        waitMs: state === 'OPEN' ? waitMs : 0,
        cause,
      })
      .then((transition) => this.follow(transition), this.failed);
  }

  private release(): void {
    this.leased = false;
    const { name, key } = this.breaker;
    this.fleet.store.releaseProbe({ name, key, replica: this.fleet.replica }).catch(this.failed);
  }

  private readonly failed = (error: unknown): void => this.fleet.failed(error);
}
