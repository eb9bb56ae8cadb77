/*
 * What `tsc` accepts and refuses for `@Idempotent`'s `principal` and `key`
 * and the module's `idempotency.principal`. Nothing here runs: each
 * `@ts-expect-error` must meet an error, or the compile fails.
 */
import type { Request } from 'express';
import type { FastifyRequest } from 'fastify';
import { Idempotent, IdempotencyModuleOptions, PlatformRequest } from 'resilience4nest';

interface OrderCreated {
  id: string;
  lines: number;
}

const byUser = (req: PlatformRequest): string | undefined => req.user?.id;

export const moduleOptions: IdempotencyModuleOptions[] = [
  // Unannotated, the request is a PlatformRequest: what Express and Fastify both give.
  { principal: (req) => req.user?.id },
  { principal: (req) => (req.method === 'POST' ? req.url : undefined) },
  { principal: byUser },
  { principal: 'shared' },
  // The platform's own request type is accepted, so whatever it adds can be read.
  { principal: (req: Request) => req.ip },
  { principal: (req: FastifyRequest) => req.ip },
  // A structural type of just what the resolver reads is accepted too.
  { principal: (req: { headers: Record<string, string | string[] | undefined> }) => String(req.headers['x-user']) },
  // @ts-expect-error a header may be a list or absent: the principal must be a string or undefined
  { principal: (req) => req.headers['x-user'] },
  // @ts-expect-error neither platform's request has a 'tenant'
  { principal: (req) => req.tenant },
  // @ts-expect-error the request is not a number
  { principal: (req: number) => String(req) },
  // @ts-expect-error only 'shared' may stand instead of a function
  { principal: 'everyone' },
];

export class Handlers {
  @Idempotent({ key: (event: OrderCreated) => event.id })
  async created(event: OrderCreated): Promise<void> {
    void event;
  }

  // A key may read fewer arguments than the method gets, or none at all.
  @Idempotent({ key: () => 'one', fingerprint: (event: OrderCreated, attempt: number) => [event.id, attempt] })
  async retried(event: OrderCreated, attempt: number): Promise<void> {
    void event;
    void attempt;
  }

  @Idempotent({ principal: (req: Request) => req.get('x-customer-id') })
  async route(): Promise<void> {}

  @Idempotent()
  async plain(): Promise<void> {}

  // @ts-expect-error the key reads an OrderCreated, the method gets a string
  @Idempotent({ key: (event: OrderCreated) => event.id })
  async wrongKey(id: string): Promise<void> {
    void id;
  }

  // @ts-expect-error the fingerprint reads a second argument the method never gets
  @Idempotent({ key: (event: OrderCreated) => event.id, fingerprint: (_e: OrderCreated, attempt: number) => attempt })
  async wrongFingerprint(event: OrderCreated): Promise<void> {
    void event;
  }

  // @ts-expect-error a key is a string (or undefined for none)
  @Idempotent({ key: (event: OrderCreated) => event.lines })
  async numericKey(event: OrderCreated): Promise<void> {
    void event;
  }
}
