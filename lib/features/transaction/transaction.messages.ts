import { describe } from '../../config/config.messages';
import { PREFIX } from '../../kernel/resilience.messages';

export const TX_IS_A_POOL = (who: string): string =>
  `${PREFIX}: ${who} was given a pool as { tx }: a pool runs each statement in its own transaction; ` +
  `pass the client (or ORM transaction) that holds BEGIN`;

export const TX_NOT_SUPPORTED = (who: string, tx: unknown): string =>
  `${PREFIX}: ${who}: cannot run SQL on ${describe(tx)}; a transaction must be a pg client, ` +
  `a TypeORM EntityManager or QueryRunner, or a Drizzle transaction`;

export const CLS_TRANSACTION_ENDED = (who: string): string =>
  `${PREFIX}: ${who}: the @nestjs-cls/transactional transaction ended before it could be used`;

export const TX_NOT_IN_TRANSACTION = (who: string): string =>
  `${PREFIX}: ${who} was given a client that is not inside a transaction (no BEGIN): each statement would commit on its own, ` +
  `even if the caller rolls back; run BEGIN on it first, or pass the ORM's transaction`;
