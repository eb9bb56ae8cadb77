/** Metadata key holding the policy layers a method's decorators declared. */
export const RESILIENCE_LAYERS = 'resilience4nest:layers';
