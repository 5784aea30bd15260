/** The field manager of every apply kubeception makes (server-side apply); a leaf module, no API client. */
export const FIELD_MANAGER = 'kubeception';
