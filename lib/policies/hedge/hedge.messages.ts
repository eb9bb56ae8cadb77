import { PREFIX } from '../../kernel/resilience.messages';
import { shownText } from '../../config/value-preview';

export const HEDGE_NOT_SAFE = (target: string, instance: string): string =>
  `${PREFIX}: @Hedge on ${target} would run the method more than once at a time, but it is not declared safe to repeat: ` +
  `add @Idempotent to the method, or set 'safe: true' on hedging instance '${instance}' if running it twice is harmless`;

export const HEDGE_ON_TRANSACTION = (target: string, instance: string): string =>
  `${PREFIX}: @Hedge on ${target} (hedging instance '${instance}') is refused: the method is @Idempotent({ transactional: true }), ` +
  `and its hedged copies would run in one transaction, so both copies' writes would commit. ` +
  `Remove @Hedge from it (a transactional method is not hedged), or hedge the calls it makes outside the transaction`;

/** A hedge sharing the budget of a retry that has none; a name a placeholder gave is shown as the placeholder. */
export const HEDGE_BUDGET_WITHOUT_RETRY_BUDGET = (place: string, retry: string): string =>
  `${PREFIX}: ${place}: 'budget' names retry instance '${shownText(retry)}', which has no budget; ` +
  `give retry instance '${shownText(retry)}' a budget ({ ratio, maxTokens }), or give this hedge instance a budget of its own`;

/** A live change would turn a running hedge's `safe` around. */
export const SAFE_NOT_LIVE = (place: string, before: boolean, after: boolean): string =>
  `${PREFIX}: invalid change of ${place}: key 'safe' cannot change while the hedge runs (${before} -> ${after}): ` +
  `methods and pipelines are checked against it when they are wired; restart the application to apply it. Nothing was changed`;

export const HEDGE_KEY_OPTIONAL = (target: string, instance: string): string =>
  `${PREFIX}: @Hedge on ${target} would run a call without an idempotency key more than once at a time: ` +
  `its @Idempotent says 'required: false', so such a call runs unprotected; ` +
  `make the key required (remove 'required: false'), or set 'safe: true' on hedging instance '${instance}' if running it twice is harmless`;
