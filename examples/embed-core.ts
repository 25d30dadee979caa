/**
 * Embedding the platform in your own Node service: no HTTP server, just the core over the
 * embedded SQLite storage. Every RPC of the contract is `platform.invoke(method, ctx, request)`.
 *
 * Run: `node --conditions=dev-source --import tsx examples/embed-core.ts`
 */
import { create } from "@bufbuild/protobuf";
import {
  AuthorityType,
  AuthService,
  CertificateKeyType,
  CertificateService,
  WorkspaceService,
} from "@wap/api";
import { createCallContext, createMasterKeyStore, createPlatform, generateMasterKey } from "@wap/core";
import { createSqliteStorage } from "@wap/storage-sqlite";

export async function main(): Promise<{ workspaceId: string; caPublicKey: string }> {
  const platform = await createPlatform({
    storage: await createSqliteStorage({ filename: ":memory:" }),
    // Keep the master key somewhere safe (a secrets manager, a file with mode 0600): it seals CA keys.
    keyStore: createMasterKeyStore({ masterKey: generateMasterKey() }),
  });
  const anonymous = createCallContext({ kind: "anonymous" });
  const invoke = platform.invoke.bind(platform);

  await invoke(
    AuthService.method.register,
    anonymous,
    create(AuthService.method.register.input, {
      name: "Ada Lovelace",
      email: "ada@example.com",
      username: "ada",
      password: "correct horse battery staple",
    }),
  );
  const { accessToken } = await invoke(
    AuthService.method.login,
    anonymous,
    create(AuthService.method.login.input, {
      email: "ada@example.com",
      password: "correct horse battery staple",
    }),
  );

  // Resolve the token to a caller once, then act as that caller.
  const { caller } = await platform.authenticate({ bearer: accessToken });
  const ada = createCallContext(caller, { requestId: "example-1" });
  const { workspace } = await invoke(
    WorkspaceService.method.createWorkspace,
    ada,
    create(WorkspaceService.method.createWorkspace.input, {
      name: "Analytical Engines",
    }),
  );
  const { certificateAuthority } = await invoke(
    CertificateService.method.createCertificateAuthority,
    ada,
    create(CertificateService.method.createCertificateAuthority.input, {
      workspaceId: workspace!.id,
      name: "ssh-users",
      keyType: CertificateKeyType.ED25519,
      authorityType: AuthorityType.SSH,
    }),
  );
  await platform.close();
  return { workspaceId: workspace!.id, caPublicKey: certificateAuthority!.publicKey };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { workspaceId, caPublicKey } = await main();
  console.log(`workspace ${workspaceId}\nTrustedUserCAKeys line: ${caPublicKey}`);
}
