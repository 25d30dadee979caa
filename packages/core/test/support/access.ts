/**
 * Helpers for the workspace-access tests: members of a given role, service-account callers, an
 * SSH authority, and a resolver pointed at a DNS server of the test.
 */

import { CertificateKeyType, CertificateService, ServiceAccountService } from "@wap/api";
import type { ServiceAccountCaller, UserCaller, WorkspaceRole } from "../../src/context.js";
import type { TestPlatform } from "../support.js";

export type Owner = Awaited<ReturnType<TestPlatform["owner"]>>;
export interface Person {
  readonly caller: UserCaller;
  readonly email: string;
}

let counter = 0;

/** Signs up a new user and makes them a member of the workspace with `role`. */
export async function memberWithRole(
  t: TestPlatform,
  workspaceId: string,
  role: WorkspaceRole,
): Promise<Person> {
  const person = await t.signUp(`${role}${++counter}x${Math.random().toString(36).slice(2, 6)}`);
  const now = t.clock.now();
  await t.storage.members.insert({
    workspaceId,
    userId: person.caller.userId,
    role,
    createdAt: now,
    updatedAt: now,
  });
  return person;
}

/** Creates a service account through the API and returns it as a caller. */
export async function serviceAccountCaller(
  t: TestPlatform,
  owner: Owner,
  role: "viewer" | "editor",
): Promise<ServiceAccountCaller> {
  const { serviceAccount, token } = await t.call(
    owner.caller,
    ServiceAccountService.method.createServiceAccount,
    {
      workspaceId: owner.workspaceId,
      name: `sa-${role}-${++counter}`,
      roleName: role,
    },
  );
  const { caller } = await t.platform.authenticate({ bearer: token });
  if (caller.kind !== "service_account" || caller.serviceAccountId !== serviceAccount?.id) {
    throw new Error("the service account token did not authenticate");
  }
  return caller;
}

/** An Ed25519 SSH authority through the API (the first of the workspace becomes the default). */
export async function sshAuthority(t: TestPlatform, owner: Owner, name = `ssh-${++counter}`) {
  const { certificateAuthority } = await t.call(
    owner.caller,
    CertificateService.method.createCertificateAuthority,
    {
      workspaceId: owner.workspaceId,
      name,
      keyType: CertificateKeyType.ED25519,
    },
  );
  return certificateAuthority!;
}
