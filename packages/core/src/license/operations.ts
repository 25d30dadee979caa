/**
 * LicenseService.GetLicense: the instance's plan, whether the licence is in force, and when it
 * ends. No licence is the free self-hosted plan; an invalid licence reads `plan: "invalid"`,
 * `active: false`, and an expired one keeps its plan with `active: false`.
 *
 * @module
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { LicenseService } from "@wap/api";
import * as z from "zod";
import { integrationsOf } from "../operations/integrations.js";
import { defineOperation } from "../operations/operation.js";
import { inspectLicense } from "./license.js";

export const getLicense = defineOperation({
  method: LicenseService.method.getLicense,
  access: { kind: "caller", callers: ["user", "service_account"] },
  input: z.object({}),
  async run({ services, now }) {
    const status = inspectLicense(integrationsOf(services).license ?? {}, now);
    return {
      plan: status.plan,
      active: status.active,
      ...(status.state === "valid" || status.state === "expired"
        ? { expiresAt: timestampFromDate(status.license.expiresAt) }
        : {}),
    };
  },
});

export const licenseOperations = [getLicense];
