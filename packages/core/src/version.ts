/** This release of the platform. Kept in step with the packages' `version` by the release script. */
export const platformVersion = "0.1.0";

/** The version of the platform.v1 API this release implements (spec section 9). */
export const apiVersion = "1.0.0";
