import type { Clock } from '../kernel/clock';
import type { ResolvedKeys } from '../config/schema';
import { TooManyInstancesError } from '../kernel/errors';
import { EventStream } from '../kernel/events';
import { InstanceLru, LruEntry } from './instance-lru';

/**
 * The keys of one named instance used per key (a breaker per host, a
 * limiter per tenant): each key's own instance, made on first use from the
 * named instance's config object, so every key runs the settings of the
 * name. Bounded by the section's `keys` option; see {@link InstanceLru}
 * for what is evicted and when.
 */
export class KeyedInstances<I> {
  private readonly lru: InstanceLru<I>;
  private readonly evictedStream = new EventStream<LruEntry<I>>();

  /** Each key evicted from now on (the pipelines of decorated methods drop what they built over it). */
  readonly onEvicted = this.evictedStream.subscribe;

  /**
   * @param policy - the policy section, for errors
   * @param name - the instance name
   * @param make - makes the instance of one key
   * @param limits - the section's `keys` option
   * @param clock - the registry's clock
   * @param holdsState - true for an instance a restart would lose state of
   * @param evicted - told of each key evicted
   */
  constructor(
    readonly policy: string,
    readonly name: string,
    private readonly make: (key: string) => I,
    private readonly limits: ResolvedKeys,
    clock: Clock,
    holdsState: (instance: I) => boolean,
    evicted: (entry: LruEntry<I>) => void,
  ) {
    this.lru = new InstanceLru<I>(limits, clock, holdsState, (entry) => {
      evicted(entry);
      if (this.evictedStream.active) this.evictedStream.emit(entry);
    });
  }

  /** Keys kept now. */
  get size(): number {
    return this.lru.size;
  }

  /**
   * The entry of `key`, used now: kept, or made (evicting the least
   * recently used idle key at `keys.max`).
   *
   * @throws TooManyInstancesError when `keys.max` keys are kept and each holds state a restart would lose
   */
  entry(key: string): LruEntry<I> {
    const kept = this.lru.use(key);
    if (kept !== undefined) return kept;
    const made = this.lru.add(key, () => this.make(key));
    if (made === undefined) throw new TooManyInstancesError(this.policy, this.name, this.limits.max, key);
    return made;
  }

  /**
   * Marks a held `entry` used, reading no clock; false when it has been
   * evicted (ask {@link KeyedInstances.entry} again).
   */
  hit(entry: LruEntry<I>): boolean {
    return this.lru.hit(entry);
  }

  /** The instance of `key`, made on first use. */
  get(key: string): I {
    return this.entry(key).instance;
  }

  /** The keys kept now, each with its instance and how often it was used (idle keys evicted first). */
  entries(): LruEntry<I>[] {
    return this.lru.list();
  }
}
