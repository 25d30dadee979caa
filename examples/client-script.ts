/**
 * Scripting against a running server with the typed client: sign in (registering on first run),
 * make sure a workspace and an SSH CA exist, and print the CA's public key for sshd's
 * TrustedUserCAKeys.
 *
 * Run against `pnpm start`: `node --conditions=dev-source --import tsx examples/client-script.ts http://127.0.0.1:8080`
 */

import { CertificateKeyType } from "@wap/api";
import { Code, ConnectError, createPlatformClient } from "@wap/client";

export async function main(baseUrl: string, email = "ops@example.com", password = "a long example password") {
  const client = createPlatformClient({ baseUrl });
  try {
    await client.login(email, password);
  } catch (error) {
    if (!(error instanceof ConnectError && error.code === Code.Unauthenticated)) throw error;
    await client.auth.register({ name: "Ops Robot", email, username: "ops", password });
    await client.login(email, password);
  }
  const { user } = await client.users.whoami({});
  let [workspace] = (await client.workspaces.listWorkspaces({})).workspaces;
  workspace ??= (await client.workspaces.createWorkspace({ name: "Operations" })).workspace!;
  const { certificateAuthorities } = await client.certificates.listCertificateAuthorities({
    workspaceId: workspace.id,
  });
  const ca =
    certificateAuthorities.find((candidate) => candidate.name === "ssh-users") ??
    (
      await client.certificates.createCertificateAuthority({
        workspaceId: workspace.id,
        name: "ssh-users",
        keyType: CertificateKeyType.ED25519,
      })
    ).certificateAuthority!;
  await client.logout();
  return { user: user!, workspace, ca };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { user, workspace, ca } = await main(process.argv[2] ?? "http://127.0.0.1:8080");
  console.log(`${user.username} in ${workspace.name}: ${ca.publicKey}`);
}
