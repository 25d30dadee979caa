/**
 * The defaults of `PlatformConfig`: each area's defaults together, which only the platform
 * that composes the areas knows.
 *
 * @module
 */
import { defaultAccessRequestConfig } from "../access-requests/config.js";
import { defaultAccountConfig } from "../auth/account-config.js";
import type { PlatformConfig } from "../operations/services.js";
import { defaultRecordingConfig } from "../recordings/config.js";
import { defaultWorkspaceQuotaConfig } from "../workspaces/quotas.js";

export const defaultPlatformConfig: PlatformConfig = {
  ...defaultAccountConfig,
  ...defaultRecordingConfig,
  ...defaultWorkspaceQuotaConfig,
  ...defaultAccessRequestConfig,
  accessTokenTtlSeconds: 900,
  refreshTokenTtlSeconds: 30 * 24 * 3600,
  lastUsedResolutionSeconds: 60,
};
