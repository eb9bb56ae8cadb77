export * from './idempotency-store';
export * from './memory-idempotency-store';
export * from './postgres-idempotency-store';
export * from './redis-idempotency-store';
