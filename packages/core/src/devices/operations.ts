/**
 * The caller's devices: ListUserDevices and DeleteUserDevice (UserService).
 *
 * A "device" is a way the user is signed in: a CLI device (kind "cli", its key and session) or a
 * browser or API login session (kind "web"). Deleting either signs it out at once.
 *
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type UserDeviceSchema, UserService } from "@wap/api";
import * as z from "zod";
import { auditAccount } from "../auth/audit.js";
import { callerUser } from "../auth/caller-user.js";
import { NotFoundError } from "../errors.js";
import { defineOperation } from "../operations/operation.js";
import { uuid } from "../validation/rules.js";

type DeviceMessage = MessageInitShape<typeof UserDeviceSchema>;

export const listUserDevices = defineOperation({
  method: UserService.method.listUserDevices,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({}),
  async run({ services, ctx, now }) {
    const user = await callerUser(services, ctx);
    const [devices, sessions] = await Promise.all([
      services.storage.userDevices.listByUser(user.id),
      services.storage.authSessions.listActiveForUser(user.id, now),
    ]);
    const deviceSessions = new Set(devices.map((d) => d.sessionId));
    const live = new Set(sessions.map((s) => s.id));
    const cli: DeviceMessage[] = devices
      // A device whose session was revoked (password reset, logout) is signed out.
      .filter((d) => d.expiresAt > now && live.has(d.sessionId))
      .map((d) => ({
        id: d.id,
        name: d.name,
        kind: "cli",
        createdAt: timestampFromDate(d.createdAt),
        expiresAt: timestampFromDate(d.expiresAt),
        ...(d.lastUsedAt === null ? {} : { lastUsedAt: timestampFromDate(d.lastUsedAt) }),
      }));
    const web: DeviceMessage[] = sessions
      .filter((s) => !deviceSessions.has(s.id))
      .map((s) => ({
        id: s.id,
        name: s.userAgent === "" ? "unknown client" : s.userAgent,
        kind: "web",
        createdAt: timestampFromDate(s.createdAt),
        expiresAt: timestampFromDate(s.expiresAt),
      }));
    return { devices: [...cli, ...web] };
  },
});

export const deleteUserDevice = defineOperation({
  method: UserService.method.deleteUserDevice,
  access: { kind: "caller", callers: ["user"] },
  input: z.object({ id: uuid }),
  async run({ input, services, ctx, now }) {
    const { id } = input;
    const user = await callerUser(services, ctx);
    const found = await services.storage.transaction(async (tx) => {
      const device = await tx.userDevices.findById(id);
      let revoke: { sessionId: string; resource: string } | null = null;
      if (device && device.userId === user.id) {
        await tx.userDevices.delete(user.id, id);
        revoke = { sessionId: device.sessionId, resource: `device:${id}` };
      } else {
        const session = await tx.authSessions.findById(id);
        if (session && session.userId === user.id) revoke = { sessionId: id, resource: `session:${id}` };
      }
      if (revoke === null) return false;
      await tx.authSessions.revoke(revoke.sessionId, now);
      await auditAccount(tx, services, ctx, {
        userId: user.id,
        action: "user.device.delete",
        resource: revoke.resource,
        at: now,
      });
      return true;
    });
    // Another user's device is "not found" too.
    if (!found) throw new NotFoundError(`device ${id} not found`);
    return {};
  },
});

export const deviceOperations = [listUserDevices, deleteUserDevice];
