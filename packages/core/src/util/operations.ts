/**
 * UtilService, the parts that describe the server itself: GetVersion and ListRoles.
 *
 * @module
 */

import { UtilService } from "@wap/api";
import * as z from "zod";
import { roles } from "../access/permissions.js";
import { defineOperation } from "../operations/operation.js";
import { apiVersion, platformVersion } from "../version.js";

export const getVersion = defineOperation({
  method: UtilService.method.getVersion,
  // Clients probe it before signing in.
  access: { kind: "public" },
  input: z.object({}),
  async run() {
    return { version: platformVersion, apiVersion };
  },
});

export const listRoles = defineOperation({
  method: UtilService.method.listRoles,
  access: { kind: "caller", callers: ["user", "service_account"] },
  input: z.object({}),
  async run() {
    return {
      roles: roles.map((role) => ({
        name: role.name,
        description: role.description,
        permissions: [...role.permissions],
        assignableToUsers: role.assignableToUsers,
        assignableToServiceAccounts: role.assignableToServiceAccounts,
      })),
    };
  },
});

export const utilOperations = [getVersion, listRoles];
