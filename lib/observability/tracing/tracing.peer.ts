import type * as OpenTelemetryApi from '@opentelemetry/api';
import type { OptionalPeer } from '../../kernel/optional-peer';

/** The OpenTelemetry API, as much of it as the tracing uses. */
export type OpenTelemetry = typeof OpenTelemetryApi;

/** @opentelemetry/api: the active span, the tracer provider and baggage. */
export const OPENTELEMETRY_API: OptionalPeer<OpenTelemetry> = {
  name: '@opentelemetry/api',
  // Loaded on first use, never imported: without the peer nothing of it is loaded.
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-return
  load: () => require('@opentelemetry/api'),
};
