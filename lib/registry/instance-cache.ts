import { closeName, instancePlace, UNDECLARED_INSTANCE_CLOSE, UNKNOWN_INSTANCE } from '../config/config.messages';
import { applyOverrides, PolicySchema, ResolvedSection } from '../config/schema';
import type { Clock } from '../kernel/clock';
import { TooManyInstancesError } from '../kernel/errors';
import { checkInstanceName } from '../kernel/instance-name';
import { InstanceLru, LruEntry } from './instance-lru';
import { KeyedInstances } from './keyed-instances';

/**
 * One kind of instance the registry makes: the section its configs come
 * from, the schema overrides are checked against, and how an instance is
 * made. Policies, thread-pool bulkheads and hedges are each one entry of
 * the registry's table of kinds.
 */
export interface InstanceKind<C extends object, I> {
  /** The section's name in messages (`retry`, `threadPoolBulkhead`, `hedging`). */
  readonly section: string;
  /** The declared instances and `configs.default`. */
  readonly configs: ResolvedSection<C>;
  /** What a decorator's overrides are checked against. */
  readonly schema: PolicySchema<C>;
  /** An undeclared name close to a declared one is warned about (a likely typo). */
  readonly warnsCloseName: boolean;
  /** Makes the instance `name` from `config` (the one of `key`, for an instance used per key); `place` names where the config was written, for errors. */
  make(name: string, config: C, place: string, key?: string): I;
  /** True while `instance` holds state a restart would lose (an OPEN breaker, calls in flight, waiters): never evicted. */
  holdsState(instance: I): boolean;
}

/** What a cache asks of the registry that holds it. */
export interface InstanceCacheHost {
  /** Undeclared names throw instead of taking `configs.default`. */
  readonly strict: boolean;
  /** Most undeclared names kept at once (module option `maxUndeclaredInstances`). */
  readonly maxUndeclared: number;
  /** The policy named in a `TooManyInstancesError`. */
  readonly policy: string;
  /** The registry's clock, which idle eviction reads. */
  readonly clock: Clock;
  /** Logs `message` once. */
  warnOnce(message: string): void;
  /** Every instance made, shared (by name) or private to one decorated method (`derived`), or for one `key` of an instance. */
  made(name: string, instance: unknown, derived: boolean, key?: string): void;
  /** Every instance evicted: an undeclared name, or one `key` of an instance. */
  evicted(name: string, instance: unknown, key?: string): void;
}

/** How an instance was made: what its keys are made from. */
interface Origin<C> {
  readonly name: string;
  readonly config: C;
  readonly place: string;
}

/**
 * The instances of one kind, by name, each made on first use from its
 * declaration or `configs.default`; and the private instances of decorated
 * methods, made from a config with overrides applied.
 */
export class InstanceCache<C extends object, I extends object> {
  private readonly named = new Map<string, I>();
  /** Undeclared names, evicted least recently used first past `maxUndeclaredInstances`, and when idle. */
  private readonly undeclared: InstanceLru<I>;
  /** Instances a decorated method or pipeline holds: never evicted, since the holder would keep using them. */
  private readonly pinned = new WeakSet<I>();
  private readonly origins = new WeakMap<I, Origin<C>>();
  private readonly families = new Map<I, KeyedInstances<I>>();

  constructor(
    private readonly kind: InstanceKind<C, I>,
    private readonly host: InstanceCacheHost,
  ) {
    this.undeclared = new InstanceLru<I>(
      { max: host.maxUndeclared, idleTimeoutMs: kind.configs.keys.idleTimeoutMs },
      host.clock,
      (instance) => this.pinned.has(instance) || this.kind.holdsState(instance) || this.hasKeys(instance),
      (entry) => {
        this.families.delete(entry.instance);
        this.host.evicted(entry.key, entry.instance);
      },
    );
  }

  /**
   * The instance `name`, made on first use; in strict mode an undeclared name throws, naming `where` it was asked for.
   * A `pin`ned instance (held by a decorated method or a pipeline) is never evicted.
   */
  get(name: string, where: string, pin = false): I {
    const existing = this.named.get(name) ?? this.undeclared.use(name)?.instance;
    if (existing !== undefined) {
      if (pin) this.pinned.add(existing);
      return existing;
    }
    checkInstanceName(name, `${where}, ${this.kind.section} instance`);
    const declared = this.kind.configs.instances.get(name);
    const config = declared ?? this.undeclaredConfig(name, where);
    const place = instancePlace(
      this.kind.section,
      declared === undefined ? 'config' : 'instance',
      declared === undefined ? 'default' : name,
    );
    const make = (): I => this.kind.make(name, config, place);
    const instance = declared === undefined ? this.undeclared.add(name, make)?.instance : make();
    if (instance === undefined) throw new TooManyInstancesError(this.host.policy, name, this.host.maxUndeclared);
    if (declared !== undefined) this.named.set(name, instance);
    this.origins.set(instance, { name, config, place });
    if (pin) this.pinned.add(instance);
    this.host.made(name, instance, false);
    return instance;
  }

  /**
   * The keys of `instance` (one made by this cache): each key's own
   * instance, made on first use from the same config object, bounded by the
   * section's `keys` option. Undefined for an instance this cache did not make.
   */
  keysOf(instance: I): KeyedInstances<I> | undefined {
    const existing = this.families.get(instance);
    if (existing !== undefined) return existing;
    const origin = this.origins.get(instance);
    if (origin === undefined) return undefined;
    const { name, config, place } = origin;
    const family = new KeyedInstances<I>(
      this.host.policy,
      name,
      (key) => {
        const made = this.kind.make(name, config, place, key);
        this.host.made(name, made, false, key);
        return made;
      },
      this.kind.configs.keys,
      this.host.clock,
      (made) => this.kind.holdsState(made),
      (entry: LruEntry<I>) => this.host.evicted(name, entry.instance, entry.key),
    );
    this.families.set(instance, family);
    return family;
  }

  /** The keys of `instance` so far, when it is used per key. */
  existingKeysOf(instance: I): KeyedInstances<I> | undefined {
    return this.families.get(instance);
  }

  /**
   * A private instance for one decorated method: `name`'s config (or
   * `configs.default` when `anonymous`) with `overrides` applied, validated
   * like any config, errors naming `place`.
   */
  derive(name: string, overrides: object, place: string, where: string, anonymous: boolean): I {
    checkInstanceName(name, `${where}, ${this.kind.section} instance`);
    const base = anonymous
      ? this.kind.configs.defaultConfig
      : (this.kind.configs.instances.get(name) ?? this.undeclaredConfig(name, where));
    const config = applyOverrides(this.kind.schema, base, overrides, place, (m) => this.host.warnOnce(m));
    const instance = this.kind.make(name, config, place);
    this.origins.set(instance, { name, config, place });
    this.host.made(name, instance, true);
    return instance;
  }

  /** True when `name` is declared in the section. */
  declares(name: string): boolean {
    return this.kind.configs.instances.has(name);
  }

  /** Every shared instance kept now (an evicted undeclared name is no longer among them). */
  all(): I[] {
    return [...this.named.values(), ...this.undeclared.list().map((entry) => entry.instance)];
  }

  /** The instance of every key kept now, of every instance of this cache. */
  allKeys(): LruEntry<I>[] {
    return [...this.families.values()].flatMap((family) => family.entries());
  }

  /** True while keys of `instance` are kept: it is in use, so its name is not evicted. */
  private hasKeys(instance: I): boolean {
    const family = this.families.get(instance);
    return family !== undefined && family.size > 0;
  }

  /** `configs.default`, for an undeclared `name`: refused in strict mode, a near miss of a declared name warned. */
  private undeclaredConfig(name: string, where: string): C {
    const close = this.kind.warnsCloseName ? closeName(name, this.kind.configs.instances.keys()) : undefined;
    if (this.host.strict) throw new Error(UNKNOWN_INSTANCE(this.kind.section, name, where, close));
    if (close !== undefined) this.host.warnOnce(UNDECLARED_INSTANCE_CLOSE(this.kind.section, name, where, close));
    return this.kind.configs.defaultConfig;
  }
}
