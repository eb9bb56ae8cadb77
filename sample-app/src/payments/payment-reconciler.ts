import { IdempotencyReconciler } from 'resilience4nest';
import { Dependencies } from '../downstream/dependencies';
import { fetchJson, DownstreamHttpError } from '../downstream/http-client';

/**
 * Settles a payment whose earlier attempt ended without an answer (the
 * process died, or the provider's reply was lost, leaving it "pending"):
 * if the provider holds a charge under the attempt's downstream key, that
 * charge is the answer; if it holds none, the payment never happened and
 * may run again; if the provider cannot say, the client waits.
 */
export function paymentReconciler(dependencies: Dependencies): IdempotencyReconciler {
  return async (stale) => {
    const downstreamKey = stale.downstreamKey('charge');
    try {
      const { chargeId } = await fetchJson<{ chargeId: string }>(
        'payments',
        `${dependencies.payments.url}/charges/${encodeURIComponent(downstreamKey)}`,
      );
      const paymentId = (stale.request as { body?: { paymentId?: string } } | undefined)?.body?.paymentId;
      return { action: 'complete', status: 201, body: { status: 'charged', paymentId, chargeId } };
    } catch (error) {
      if (error instanceof DownstreamHttpError && error.status === 404) return { action: 'run' };
      return { action: 'wait' };
    }
  };
}
