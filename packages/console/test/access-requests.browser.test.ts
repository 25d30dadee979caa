/**
 * Just-in-time access in the console, in Debian's chromium against a real server: a member asks
 * for a login held on request, another member (whom the grant's policy names) sees the count of
 * requests waiting for them rise without a reload, approves with a reason after an in-page
 * confirmation naming who gets what, and the requester's page shows the approval as it happens.
 * Nobody is offered their own request to approve; a viewer the policy does not name sees no
 * approve button; the owner withdraws, an approver denies with a reason, and the history says
 * who did what.
 */
import { spawnSync } from "node:child_process";
import { createServer as createNetServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  CertificateKeyType,
  CertificateService,
  GrantKind,
  InvitationService,
  PrincipalService,
  PrincipalType,
  TargetService,
  UserService,
  WorkspaceService,
} from "@wap/api";
import { bearer, clientsFor, transportFor } from "@wap/test-kit/clients";
import { restCall } from "@wap/test-kit/http";
import { startTestServer, type TestServer } from "@wap/test-kit/server";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const consoleRoot = dirname(dirname(fileURLToPath(import.meta.url)));
const password = "correct horse battery staple";

let server: TestServer;
let base: string;
let browser: Browser;
let workspaceId: string;
const people = {
  ada: { name: "Ada Lovelace", username: "ada", role: "owner" },
  amy: { name: "Amy Archer", username: "amy", role: "editor" },
  ben: { name: "Ben Bishop", username: "ben", role: "admin" },
  vic: { name: "Vic Vance", username: "vic", role: "viewer" },
} as const;
type Who = keyof typeof people;
const ids = {} as Record<Who, string>;
const tokens = {} as Record<Who, string>;
const email = (who: Who) => `${people[who].username}@example.com`;

async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** A page of its own (its own cookies) signed in as `who`, on `path`. */
async function signedIn(who: Who, path: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${base}${path}`);
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
  await page.getByLabel("Email", { exact: true }).fill(email(who));
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  return page;
}

const requestsPath = () => `/w/${workspaceId}/access-requests`;

beforeAll(async () => {
  const build = spawnSync(process.execPath, [join(consoleRoot, "scripts", "ensure-built.mjs")], {
    stdio: "inherit",
  });
  expect(build.status).toBe(0);
  const port = await freePort();
  base = `http://localhost:${port}`;
  server = await startTestServer({ port, publicUrl: base, shutdownGraceSeconds: 1 });
  const api = clientsFor(transportFor("connect-json-h1", server.url), {
    users: UserService,
    workspaces: WorkspaceService,
    invitations: InvitationService,
    certificates: CertificateService,
    targets: TargetService,
    principals: PrincipalService,
  });
  for (const who of Object.keys(people) as Who[]) {
    const { name, username } = people[who];
    const registered = await restCall(server.url, "POST", "/v1/register", {
      name,
      email: email(who),
      username,
      password,
    });
    expect(registered.status).toBe(200);
    const signed = await restCall(server.url, "POST", "/v1/login", { email: email(who), password });
    tokens[who] = signed.body.accessToken as string;
    ids[who] = (await api.users.whoami({}, bearer(tokens[who]))).user!.id;
  }
  const owner = bearer(tokens.ada);
  workspaceId = (await api.workspaces.createWorkspace({ name: "Difference Engines" }, owner)).workspace!.id;
  const { link } = await api.invitations.refreshInviteToken({ workspaceId }, owner);
  for (const who of ["amy", "ben", "vic"] as const) {
    await api.invitations.acceptInvitation(
      { token: link.slice(link.lastIndexOf("/") + 1) },
      bearer(tokens[who]),
    );
    await api.workspaces.updateWorkspaceMember(
      { workspaceId, userId: ids[who], roleName: people[who].role },
      owner,
    );
  }
  await api.certificates.createCertificateAuthority(
    { workspaceId, name: "ssh-users", keyType: CertificateKeyType.ED25519 },
    owner,
  );
  const targetId = (await api.targets.createTarget({ workspaceId, name: "db-1" }, owner)).target!.id;
  await api.principals.setPrincipals({ workspaceId, targetId, usernames: ["deploy"] }, owner);
  const { principals } = await api.principals.listPrincipals({ workspaceId, targetId, limit: 10 }, owner);
  // Amy holds deploy on db-1 only on request; editors and admins approve (Amy is an editor).
  await api.principals.addSubjectsToPrincipal(
    {
      workspaceId,
      id: principals[0]!.id,
      subjectIds: [ids.amy],
      type: PrincipalType.USER,
      kind: GrantKind.ON_REQUEST,
      approval: {
        maxDuration: { seconds: 7200n, nanos: 0 },
        approverRoles: ["editor", "admin"],
        reasonRequired: true,
      },
    },
    owner,
  );
  browser = await chromium.launch({
    executablePath: process.env.WAP_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe("access requests in the console", { timeout: 90_000 }, () => {
  it("a member asks, another approves after a confirmation, and the requester sees it approved", async () => {
    // Ben (an admin the policy names) waits on another page: nothing is waiting yet.
    const ben = await signedIn("ben", `/w/${workspaceId}`);
    const benNav = ben.getByRole("navigation", { name: "Workspace" });
    await benNav.getByRole("link", { name: "Access requests" }).waitFor();
    expect(await ben.getByTestId("decisions-badge").count()).toBe(0);

    const amy = await signedIn("amy", requestsPath());
    await amy.getByRole("heading", { level: 1, name: "Access requests" }).waitFor();
    const ask = amy.getByRole("form", { name: "Ask for access" });
    await ask.getByLabel("Login and target", { exact: true }).selectOption({ label: "deploy on db-1" });
    const minutes = ask.getByLabel("Duration in minutes", { exact: true });
    // The grant's maximum, said and enforced by the form.
    expect(await minutes.getAttribute("max")).toBe("120");
    await ask.getByText("At most 2 hours, the grant's maximum.", { exact: false }).waitFor();
    await minutes.fill("30");
    // The policy requires a reason: the form does too.
    expect(
      await ask.getByLabel("Reason (required)", { exact: true }).getAttribute("required"),
    ).not.toBeNull();
    await ask.getByLabel("Reason (required)", { exact: true }).fill("rotate the replication keys");
    await ask.getByRole("button", { name: "Ask for access" }).click();
    const mine = amy.getByRole("list", { name: "Requests" }).getByRole("listitem").first();
    await mine.getByText("pending: 0 of 1 approvals", { exact: false }).waitFor();
    // Amy is an editor, whom the policy names, but never decides her own request.
    expect(await amy.getByRole("button", { name: /^Approve / }).count()).toBe(0);
    await amy.getByText("No request is waiting for your decision.").waitFor();

    // The event stream brings the count to Ben's navigation, without a reload.
    await benNav.getByTestId("decisions-badge").filter({ hasText: "1" }).waitFor();
    expect(
      await benNav.getByRole("link", { name: "Access requests 1 waiting for your decision" }).count(),
    ).toBe(1);
    await benNav.getByRole("link", { name: /^Access requests/ }).click();
    const row = "Amy Archer as deploy on db-1";
    const waiting = ben.getByRole("listitem", { name: `Request of ${row}` });
    await waiting.getByText("rotate the replication keys").waitFor();
    await waiting
      .getByLabel(`Reason for your decision on ${row}`, { exact: true })
      .fill("matches the change ticket");
    await waiting.getByRole("button", { name: `Approve ${row}` }).click();
    // Nothing changed yet: the page asks, naming who gets what, for how long.
    await waiting
      .getByRole("group", { name: "Let Amy Archer log in as deploy on db-1 for 30 minutes, from now?" })
      .waitFor();
    await waiting.getByRole("button", { name: "Cancel" }).click();
    await waiting.getByRole("button", { name: `Approve ${row}` }).click();
    await waiting.getByRole("button", { name: `Yes, approve ${row}` }).click();
    await ben.getByText("No request is waiting for your decision.").waitFor();
    await benNav.getByTestId("decisions-badge").waitFor({ state: "detached" });

    // Amy's page follows the stream: approved, by whom and why.
    await mine.getByText(/^approved until /).waitFor();
    await mine
      .getByRole("list", { name: "History" })
      .getByText("matches the change ticket")
      .first()
      .waitFor();
    expect(await mine.getByRole("list", { name: "History" }).textContent()).toMatch(
      /Requested by Amy Archer.*rotate the replication keys.*Approval by Ben Bishop.*Approved by Ben Bishop until/,
    );
    await ben.context().close();
    await amy.context().close();
  });

  it("a viewer the policy does not name sees no approve button; the owner may withdraw but not approve", async () => {
    const vic = await signedIn("vic", requestsPath());
    await vic.getByRole("heading", { level: 1, name: "Access requests" }).waitFor();
    await vic.getByText("No request is waiting for your decision.").waitFor();
    await vic.getByText("You hold no login that needs an approval", { exact: false }).waitFor();
    await vic.getByText("No access request yet.").waitFor();
    expect(await vic.getByRole("button", { name: /^(Approve|Deny|Withdraw) / }).count()).toBe(0);
    expect(await vic.getByTestId("decisions-badge").count()).toBe(0);
    await vic.context().close();

    // The owner administers the workspace (sees and withdraws every request), but the policy
    // names editors and admins only: no approve button.
    const ada = await signedIn("ada", requestsPath());
    const item = ada.getByRole("list", { name: "Requests" }).getByRole("listitem").first();
    await item.getByText(/^approved until /).waitFor();
    expect(await ada.getByRole("button", { name: /^(Approve|Deny) / }).count()).toBe(0);
    const row = "Amy Archer as deploy on db-1";
    await item.getByRole("button", { name: `Withdraw ${row}` }).click();
    await item
      .getByRole("group", {
        name: "End Amy Archer's access as deploy on db-1 now? The certificates issued under it are revoked.",
      })
      .waitFor();
    await item.getByRole("button", { name: `Yes, withdraw ${row}` }).click();
    await item.getByText("withdrawn", { exact: true }).first().waitFor();
    await item.getByRole("list", { name: "History" }).getByText("Withdrawn").waitFor();
    expect(await item.getByRole("list", { name: "History" }).textContent()).toContain(
      "Withdrawn by Ada Lovelace",
    );
    expect(await item.getByRole("button", { name: /^Withdraw / }).count()).toBe(0);
    await ada.context().close();
  });

  it("a denial, after its confirmation, reaches the requester's page with its reason", async () => {
    const amy = await signedIn("amy", requestsPath());
    const ask = amy.getByRole("form", { name: "Ask for access" });
    await ask.getByLabel("Duration in minutes", { exact: true }).fill("15");
    await ask.getByLabel("Reason (required)", { exact: true }).fill("look at the slow queries");
    await ask.getByRole("button", { name: "Ask for access" }).click();
    const mine = amy.getByRole("list", { name: "Requests" }).getByRole("listitem").first();
    await mine.getByText("pending: 0 of 1 approvals", { exact: false }).waitFor();

    const ben = await signedIn("ben", requestsPath());
    const row = "Amy Archer as deploy on db-1";
    const waiting = ben.getByRole("listitem", { name: `Request of ${row}` });
    await waiting.getByLabel(`Reason for your decision on ${row}`, { exact: true }).fill("use the replica");
    await waiting.getByRole("button", { name: `Deny ${row}` }).click();
    await waiting
      .getByRole("group", {
        name: "Refuse Amy Archer the login as deploy on db-1 for 15 minutes? A denied request cannot be approved later.",
      })
      .getByRole("button", { name: `Yes, deny ${row}` })
      .click();
    await ben.getByText("No request is waiting for your decision.").waitFor();

    await mine.getByText("denied", { exact: true }).first().waitFor();
    expect(await mine.getByRole("list", { name: "History" }).textContent()).toMatch(
      /Denied by Ben Bishop.*use the replica/,
    );
    expect(await mine.getByRole("button", { name: /^Withdraw / }).count()).toBe(0);
    await ben.context().close();
    await amy.context().close();
  });

  it("the mailed link opens the request on its workspace's page", async () => {
    const amy = await signedIn("amy", `/w/${workspaceId}`);
    await amy.getByRole("navigation", { name: "Workspace" }).waitFor();
    const listed = await restCall(
      server.url,
      "GET",
      `/v1/workspaces/${workspaceId}/access_requests`,
      undefined,
      {
        token: tokens.amy,
      },
    );
    const id = (listed.body.requests as { id: string; state: string }[]).find(
      (r) => r.state === "ACCESS_REQUEST_STATE_WITHDRAWN",
    )!.id;
    await amy.goto(`${base}/access-requests?workspace=${workspaceId}&request=${id}`);
    await amy.getByRole("heading", { level: 1, name: "Access requests" }).waitFor();
    expect(new URL(amy.url()).pathname).toBe(requestsPath());
    await amy.locator('li[aria-current="true"]').getByText("withdrawn", { exact: true }).first().waitFor();
    await amy.context().close();
  });
});
