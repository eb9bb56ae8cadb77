import { closeName, instancePlace, UNDECLARED_INSTANCE_CLOSE, UNKNOWN_INSTANCE } from '../config/config.messages';
import { applyOverrides, NATIVE_BINDING, PolicySchema, ResolvedSection, SectionBinding } from '../config/schema';
import type { Clock } from '../kernel/clock';
import { TooManyInstancesError } from '../kernel/errors';
import { checkInstanceName } from '../kernel/instance-name';
import { ConfigChangedEvent, sameSetting } from '../kernel/config-change';
import { InstanceLru, LruEntry } from './instance-lru';
import { KeyedInstances } from './keyed-instances';
import { JAVA_ERROR_NAMES } from '../spring/exceptions/java-exceptions';

/** How decorator overrides and live patches are read: as options written in code, their Java exception names bound. */
const OVERRIDES: SectionBinding = { ...NATIVE_BINDING, errorNames: JAVA_ERROR_NAMES };

/**
 * One kind of instance the registry makes: the section its configs come
 * from, the schema overrides are checked against, and how an instance is
 * made. Policies, thread-pool bulkheads and hedges are each one entry of
 * the registry's table of kinds.
 */
export interface InstanceKind<C extends object, I> {
  /** The section's name in messages (`retry`, `threadPoolBulkhead`, `hedging`). */
  readonly section: string;
  /** The declared instances and `configs.default` at startup. */
  readonly configs: ResolvedSection<C>;
  /** What a decorator's overrides are checked against. */
  readonly schema: PolicySchema<C>;
  /** An undeclared name close to a declared one is warned about (a likely typo). */
  readonly warnsCloseName: boolean;
  /** Makes the instance `name` from `config` (the one of `key`, for an instance used per key); `place` names where the config was written, for errors. */
  make(name: string, config: C, place: string, key?: string): I;
  /** True while `instance` holds state a restart would lose (an OPEN breaker, calls in flight, waiters): never evicted. */
  holdsState(instance: I): boolean;
  /** Lets go of what `make` joined for `instance` (a shared breaker's fleet) once it is evicted. */
  release?(instance: I): void;
  /** Checks what `make` checks beyond the schema (e.g. a shared rate limiter's store); throws naming `place`. */
  check?(config: C, place: string): void;
  /** The config `patch` makes of `base` when it is written in other keys than the schema's (a thread pool's); default: the schema's overrides. */
  patch?(base: C, patch: unknown, place: string, warn: (message: string) => void): C;
  /** Throws, naming `place`, when moving a running instance from `before` to `after` needs a restart. */
  checkChange?(before: C, after: C, place: string): void;
  /** Runs `instance` (whose config was written at `place`) with `config` from now on, keeping its state; absent for a kind that is not reconfigured live. */
  reconfigure?(instance: I, config: C, place: string): ConfigChangedEvent | undefined;
}

/**
 * An instance that reads its config from the section: the shared instance
 * of a name, a decorated method's own instance (the name's config with its
 * overrides), or any other state built from a name's config, which
 * {@link InstanceCache.follow} adds.
 */
interface Reader<C> {
  /** Where its config was written, for errors. */
  readonly place: string;
  /** The config it was last given. */
  given: C;
  /** Its config under `section`; throws naming `place` when that config is invalid. */
  configFor(section: ResolvedSection<C>): C;
}

/** A change {@link InstanceCache.plan} found: an instance and its config under the new section, checked. */
export interface PendingChange<C, I> {
  readonly instance: I;
  readonly config: C;
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
  /** Every instance that reads its config from the section, by instance. */
  private readonly readers = new Map<I, Reader<C>>();
  private section: ResolvedSection<C>;
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
    this.section = kind.configs;
    this.undeclared = new InstanceLru<I>(
      { max: host.maxUndeclared, idleTimeoutMs: kind.configs.keys.idleTimeoutMs },
      host.clock,
      (instance) => this.pinned.has(instance) || this.kind.holdsState(instance) || this.hasKeys(instance),
      (entry) => {
        for (const kept of this.families.get(entry.instance)?.entries() ?? []) this.readers.delete(kept.instance);
        this.families.delete(entry.instance);
        this.readers.delete(entry.instance);
        this.kind.release?.(entry.instance);
        this.host.evicted(entry.key, entry.instance);
      },
    );
  }

  /** The declared instances and `configs.default` in force. */
  get configs(): ResolvedSection<C> {
    return this.section;
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
    const declared = this.section.instances.get(name);
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
    this.follow(instance, place, config, (section) => section.instances.get(name) ?? section.defaultConfig);
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
        // A key is made from its instance's config in force (changed live or not), and follows it from then on.
        const reader = this.readers.get(instance);
        const made = this.kind.make(name, reader?.given ?? config, place, key);
        if (reader !== undefined) this.follow(made, place, reader.given, (section) => reader.configFor(section));
        this.host.made(name, made, false, key);
        return made;
      },
      this.kind.configs.keys,
      this.host.clock,
      (made) => this.kind.holdsState(made),
      (entry: LruEntry<I>) => {
        this.readers.delete(entry.instance);
        this.kind.release?.(entry.instance);
        this.host.evicted(name, entry.instance, entry.key);
      },
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
      ? this.section.defaultConfig
      : (this.section.instances.get(name) ?? this.undeclaredConfig(name, where));
    const warn = (message: string): void => this.host.warnOnce(message);
    const config = applyOverrides(this.kind.schema, base, overrides, place, warn, OVERRIDES);
    const instance = this.kind.make(name, config, place);
    this.follow(instance, place, config, (section) => {
      const next = anonymous ? section.defaultConfig : (section.instances.get(name) ?? section.defaultConfig);
      return applyOverrides(this.kind.schema, next, overrides, place, warn, OVERRIDES);
    });
    this.origins.set(instance, { name, config, place });
    this.host.made(name, instance, true);
    return instance;
  }

  /**
   * Keeps `instance`, made from `config`, in step with the section: when
   * the config `configFor` finds in it changes, the instance is
   * reconfigured with it (see {@link InstanceCache.plan}). Every state made
   * from a name's config is followed, so that a change to the name reaches all of them.
   */
  follow(instance: I, place: string, config: C, configFor: (section: ResolvedSection<C>) => C): void {
    if (this.kind.reconfigure !== undefined) this.readers.set(instance, { place, given: config, configFor });
  }

  /**
   * The section with instance `name`'s config patched by `patch` (checked
   * as at startup, errors naming the instance); in strict mode an
   * undeclared name throws, naming `where` it was asked for. Nothing changes yet.
   */
  patched(name: string, patch: unknown, where: string): ResolvedSection<C> {
    checkInstanceName(name, `${where}, ${this.kind.section} instance`);
    const base = this.section.instances.get(name) ?? this.undeclaredConfig(name, where);
    const place = instancePlace(this.kind.section, 'instance', name);
    const warn = (message: string): void => this.host.warnOnce(message);
    const config =
      this.kind.patch === undefined
        ? applyOverrides(this.kind.schema, base, patch, place, warn, OVERRIDES)
        : this.kind.patch(base, patch, place, warn);
    this.kind.check?.(config, place);
    const instances = new Map(this.section.instances).set(name, config);
    return { ...this.section, instances };
  }

  /**
   * What moving to `section` would change: each instance whose config
   * differs from the one it was given, with its new config, checked (by
   * `check` too, which sees what else the move changes). Throws (naming
   * where the bad value was written) before anything changes.
   */
  plan(section: ResolvedSection<C>, check?: (config: C, place: string) => void): PendingChange<C, I>[] {
    const changes: PendingChange<C, I>[] = [];
    for (const [instance, reader] of this.readers) {
      const config = reader.configFor(section);
      if (sameSetting(config, reader.given)) continue;
      this.kind.check?.(config, reader.place);
      this.kind.checkChange?.(reader.given, config, reader.place);
      check?.(config, reader.place);
      changes.push({ instance, config });
    }
    return changes;
  }

  /** Moves to `section` and applies the `changes` {@link InstanceCache.plan} found for it; returns their events. */
  commit(section: ResolvedSection<C>, changes: readonly PendingChange<C, I>[]): ConfigChangedEvent[] {
    this.section = section;
    const events: ConfigChangedEvent[] = [];
    for (const { instance, config } of changes) {
      const reader = this.readers.get(instance) as Reader<C>;
      reader.given = config;
      const event = this.kind.reconfigure?.(instance, config, reader.place);
      if (event !== undefined) events.push(event);
    }
    return events;
  }

  /**
   * The config the instance `name` has under `section` (its declaration, or
   * `configs.default`); in strict mode an undeclared name throws, naming `where` it was asked for.
   */
  configIn(section: ResolvedSection<C>, name: string, where: string): C {
    return section.instances.get(name) ?? this.undeclaredConfig(name, where, section);
  }

  /** True when `name` is declared in the section. */
  declares(name: string): boolean {
    return this.section.instances.has(name);
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
  private undeclaredConfig(name: string, where: string, section = this.section): C {
    const close = this.kind.warnsCloseName ? closeName(name, section.instances.keys()) : undefined;
    if (this.host.strict) throw new Error(UNKNOWN_INSTANCE(this.kind.section, name, where, close));
    if (close !== undefined) this.host.warnOnce(UNDECLARED_INSTANCE_CLOSE(this.kind.section, name, where, close));
    return section.defaultConfig;
  }
}
