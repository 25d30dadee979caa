/**
 * The account a benchmark acts as: a user signed in on its client, owning one workspace.
 *
 * @module
 */
import type { PlatformClient } from "@wap/client";

const password = "benchmark password";

/**
 * Registers `<handle>@example.com` (username `handle`), signs the client in and creates the
 * workspace `handle`.
 */
export async function signUpWorkspaceOwner(client: PlatformClient, name: string, handle: string) {
  const email = `${handle}@example.com`;
  await client.auth.register({ name, email, username: handle, password });
  const { accessToken } = await client.login(email, password);
  const { workspace } = await client.workspaces.createWorkspace({ name: handle });
  return { accessToken, workspaceId: workspace!.id };
}
