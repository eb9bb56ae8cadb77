/** Injection token of the simulated inventory service. */
export const INVENTORY_API = 'INVENTORY_API';
/** Injection token of the simulated payment provider. */
export const PAYMENT_PROVIDER = 'PAYMENT_PROVIDER';
