/** How long before expiry a certificate is replaced, unless told otherwise. */
export const defaultRenewBeforeMs = 5 * 60_000;
