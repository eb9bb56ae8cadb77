import { closeName, instancePlace, UNDECLARED_INSTANCE_CLOSE, UNKNOWN_INSTANCE } from '../config/config.messages';
import { applyOverrides, PolicySchema, ResolvedSection } from '../config/schema';
import { checkInstanceName } from '../kernel/instance-name';
import { ConfigChangedEvent, sameSetting } from '../kernel/config-change';

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
  /** Makes the instance `name` from `config`; `place` names where the config was written, for errors. */
  make(name: string, config: C, place: string): I;
  /** Checks what `make` checks beyond the schema (e.g. a shared rate limiter's store); throws naming `place`. */
  check?(config: C, place: string): void;
  /** Runs `instance` with `config` from now on, keeping its state; absent for a kind that is not reconfigured live. */
  reconfigure?(instance: I, config: C): ConfigChangedEvent | undefined;
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
  /** Counts an undeclared name (throws past `maxUndeclaredInstances`). */
  countUndeclared(name: string): void;
  /** Logs `message` once. */
  warnOnce(message: string): void;
  /** Every instance made, shared (by name) or private to one decorated method (`derived`). */
  made(name: string, instance: unknown, derived: boolean): void;
}

/**
 * The instances of one kind, by name, each made on first use from its
 * declaration or `configs.default`; and the private instances of decorated
 * methods, made from a config with overrides applied.
 */
export class InstanceCache<C extends object, I> {
  private readonly named = new Map<string, I>();
  /** Every instance that reads its config from the section, by instance. */
  private readonly readers = new Map<I, Reader<C>>();
  private section: ResolvedSection<C>;

  constructor(
    private readonly kind: InstanceKind<C, I>,
    private readonly host: InstanceCacheHost,
  ) {
    this.section = kind.configs;
  }

  /** The declared instances and `configs.default` in force. */
  get configs(): ResolvedSection<C> {
    return this.section;
  }

  /** The instance `name`, made on first use; in strict mode an undeclared name throws, naming `where` it was asked for. */
  get(name: string, where: string): I {
    const existing = this.named.get(name);
    if (existing !== undefined) return existing;
    checkInstanceName(name, `${where}, ${this.kind.section} instance`);
    const declared = this.section.instances.get(name);
    const config = declared ?? this.undeclaredConfig(name, where);
    if (declared === undefined) this.host.countUndeclared(name);
    const place = instancePlace(
      this.kind.section,
      declared === undefined ? 'config' : 'instance',
      declared === undefined ? 'default' : name,
    );
    const instance = this.kind.make(name, config, place);
    this.named.set(name, instance);
    this.follow(instance, place, config, (section) => section.instances.get(name) ?? section.defaultConfig);
    this.host.made(name, instance, false);
    return instance;
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
    const config = applyOverrides(this.kind.schema, base, overrides, place, warn);
    const instance = this.kind.make(name, config, place);
    this.follow(instance, place, config, (section) => {
      const next = anonymous ? section.defaultConfig : (section.instances.get(name) ?? section.defaultConfig);
      return applyOverrides(this.kind.schema, next, overrides, place, warn);
    });
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
    const config = applyOverrides(this.kind.schema, base, patch, place, (m) => this.host.warnOnce(m));
    this.kind.check?.(config, place);
    const instances = new Map(this.section.instances).set(name, config);
    return { defaultConfig: this.section.defaultConfig, instances };
  }

  /**
   * What moving to `section` would change: each instance whose config
   * differs from the one it was given, with its new config, checked.
   * Throws (naming where the bad value was written) before anything changes.
   */
  plan(section: ResolvedSection<C>): PendingChange<C, I>[] {
    const changes: PendingChange<C, I>[] = [];
    for (const [instance, reader] of this.readers) {
      const config = reader.configFor(section);
      if (sameSetting(config, reader.given)) continue;
      this.kind.check?.(config, reader.place);
      changes.push({ instance, config });
    }
    return changes;
  }

  /** Moves to `section` and applies the `changes` {@link InstanceCache.plan} found for it; returns their events. */
  commit(section: ResolvedSection<C>, changes: readonly PendingChange<C, I>[]): ConfigChangedEvent[] {
    this.section = section;
    const events: ConfigChangedEvent[] = [];
    for (const { instance, config } of changes) {
      (this.readers.get(instance) as Reader<C>).given = config;
      const event = this.kind.reconfigure?.(instance, config);
      if (event !== undefined) events.push(event);
    }
    return events;
  }

  /** True when `name` is declared in the section. */
  declares(name: string): boolean {
    return this.section.instances.has(name);
  }

  /** Every shared instance made so far. */
  all(): I[] {
    return [...this.named.values()];
  }

  /** `configs.default`, for an undeclared `name`: refused in strict mode, a near miss of a declared name warned. */
  private undeclaredConfig(name: string, where: string): C {
    const close = this.kind.warnsCloseName ? closeName(name, this.section.instances.keys()) : undefined;
    if (this.host.strict) throw new Error(UNKNOWN_INSTANCE(this.kind.section, name, where, close));
    if (close !== undefined) this.host.warnOnce(UNDECLARED_INSTANCE_CLOSE(this.kind.section, name, where, close));
    return this.section.defaultConfig;
  }
}
