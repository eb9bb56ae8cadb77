/** Starts every message of the package, so a log line says where it came from. */
export const PREFIX = 'resilience4nest';

/** An optional peer a feature needs cannot be loaded; `explicitly` says how to pass it instead, where there is a way. */
export const MISSING_PEER = (peer: string, feature: string, cause: string, explicitly?: string): string =>
  `${PREFIX}: ${feature} needs the optional peer dependency '${peer}', which cannot be loaded (install it: npm install ${peer}; ` +
  `in a bundled app, let the bundler include '${peer}' or ship it in node_modules beside the bundle` +
  `${explicitly === undefined ? '' : `; or ${explicitly}`}): ${cause}`;

export const DECORATOR_ON_NON_METHOD = (decorator: string, target: string): string =>
  `${PREFIX}: @${decorator} can only decorate a method, but was applied to ${target}`;

/** A decorator given no instance name; `shown` is the value as messages show options (credentials hidden). */
export const DECORATOR_BAD_NAME = (decorator: string, target: string, shown: string): string =>
  `${PREFIX}: @${decorator} on ${target} needs an instance name (a non-empty string), got ${shown}`;

export const DECORATOR_BAD_KEY = (decorator: string, target: string, shown: string): string =>
  `${PREFIX}: @${decorator} on ${target}: option 'key' must be a function of the method's arguments returning a string, got ${shown}`;

export const KEY_NOT_A_STRING = (target: string, shown: string): string =>
  `${PREFIX}: ${target}: the key function must return a string, got ${shown}`;

export const DECORATOR_TWICE = (decorator: string, target: string): string =>
  `${PREFIX}: @${decorator} appears twice on ${target}; a method has one ${decorator} layer`;

export const CALLED_BEFORE_BOOTSTRAP = (target: string): string =>
  `${PREFIX}: ${target} was called before the resilience pipeline was built (before onModuleInit); it ran unprotected`;

export const UNWIRED_AFTER_BOOTSTRAP = (target: string): string =>
  `${PREFIX}: ${target} ran unprotected: it was called after ResilienceModule bootstrapped, on an instance whose resilience pipeline was never built ` +
  `(an instance Nest did not create or did not hand to the module, a request-scoped provider, or decorators from a second copy of resilience4nest)`;

export const DECORATED_BY_ANOTHER_COPY = (target: string): string =>
  `${PREFIX}: ${target} carries decorators from another copy of resilience4nest than the one ResilienceModule comes from; ` +
  `they are not wired and the method runs unprotected (install a single copy: \`npm ls resilience4nest\`, then \`npm dedupe\`)`;

export const REQUEST_SCOPED = (target: string): string =>
  `${PREFIX}: ${target} is request-scoped; its resilience decorators are not applied (move the protected calls to a singleton provider)`;

export const INVALID_DEADLINE_HEADER = (header: string, value: string): string =>
  `${PREFIX}: ignored header '${header}' with value ${JSON.stringify(value.slice(0, 40))}: expected a non-negative integer of milliseconds; the default budget applies`;

export const DECORATOR_ON_STATIC = (decorator: string, target: string): string =>
  `${PREFIX}: @${decorator} cannot decorate the static method ${target}; Nest wires only methods of the instances it creates, so decorate an instance method of a provider or controller`;

export const DECORATOR_ON_PLAIN_VALUE = (decorator: string, target: string, type: string): string =>
  `${PREFIX}: @${decorator} on ${target}: the method is declared to return ${type}, a plain value; decorated methods return a Promise or an Observable (make it async, or return an Observable)`;

export const TOO_MANY_UNDECLARED_INSTANCES = (policy: string, name: string, max: number): string =>
  `${PREFIX}: ${policy} instance '${name}' is not declared, and ${max} undeclared ${policy} instances exist already (module option 'maxUndeclaredInstances'), ` +
  `none of which can be evicted (each holds state a restart would lose); names built from request data would add instances and metric series without end: declare the instances, or raise the option`;

// The key is request data (a tenant, a host): the message, which reaches HTTP answers, leaves it out.
export const TOO_MANY_KEYS = (policy: string, name: string, max: number): string =>
  `${PREFIX}: ${policy} instance '${name}' has ${max} keys already (section option '${policy}.keys.max'), none of which can be evicted ` +
  `(each holds state a restart would lose: an OPEN breaker, a bulkhead with calls in flight, a rate limiter with waiters); a new key is refused: raise the option`;
