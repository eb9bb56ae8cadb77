import { closeName, instancePlace, UNDECLARED_INSTANCE_CLOSE, UNKNOWN_INSTANCE } from '../config/config.messages';
import { applyOverrides, PolicySchema, ResolvedSection } from '../config/schema';
import { checkInstanceName } from '../kernel/instance-name';

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
  /** Makes the instance `name` from `config`; `place` names where the config was written, for errors. */
  make(name: string, config: C, place: string): I;
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

  constructor(
    private readonly kind: InstanceKind<C, I>,
    private readonly host: InstanceCacheHost,
  ) {}

  /** The instance `name`, made on first use; in strict mode an undeclared name throws, naming `where` it was asked for. */
  get(name: string, where: string): I {
    const existing = this.named.get(name);
    if (existing !== undefined) return existing;
    checkInstanceName(name, `${where}, ${this.kind.section} instance`);
    const declared = this.kind.configs.instances.get(name);
    const config = declared ?? this.undeclaredConfig(name, where);
    if (declared === undefined) this.host.countUndeclared(name);
    const place = instancePlace(
      this.kind.section,
      declared === undefined ? 'config' : 'instance',
      declared === undefined ? 'default' : name,
    );
    const instance = this.kind.make(name, config, place);
    this.named.set(name, instance);
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
      ? this.kind.configs.defaultConfig
      : (this.kind.configs.instances.get(name) ?? this.undeclaredConfig(name, where));
    const config = applyOverrides(this.kind.schema, base, overrides, place, (m) => this.host.warnOnce(m));
    const instance = this.kind.make(name, config, place);
    this.host.made(name, instance, true);
    return instance;
  }

  /** True when `name` is declared in the section. */
  declares(name: string): boolean {
    return this.kind.configs.instances.has(name);
  }

  /** Every shared instance made so far. */
  all(): I[] {
    return [...this.named.values()];
  }

  /** `configs.default`, for an undeclared `name`: refused in strict mode, a near miss of a declared name warned. */
  private undeclaredConfig(name: string, where: string): C {
    const close = this.kind.warnsCloseName ? closeName(name, this.kind.configs.instances.keys()) : undefined;
    if (this.host.strict) throw new Error(UNKNOWN_INSTANCE(this.kind.section, name, where, close));
    if (close !== undefined) this.host.warnOnce(UNDECLARED_INSTANCE_CLOSE(this.kind.section, name, where, close));
    return this.kind.configs.defaultConfig;
  }
}
