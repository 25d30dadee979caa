/**
 * The console in a real browser (Debian's chromium through playwright-core) against a real
 * server: sign-up and the mailed link, a workspace with an SSH authority, an invitation accepted
 * by a second person, a service account, the host agent enrolled with the copied token and
 * accepted, a login granted, a terminal with a real shell, its recording played and downloaded, a
 * passkey on the DevTools virtual authenticator, a CLI login started by `wap login --no-browser`
 * approved, the audit log exported; teams, domains verified by their TXT record, an OIDC provider
 * through which a new person signs in (enforced SSO hiding the password), billing, a rollover.
 *
 * With WAP_CONSOLE_SCREENSHOTS=1 it also writes docs/console/*.png.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer as createNetServer } from "node:net";
import { hostname, tmpdir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { type Agent, enroll, startAgent } from "@wap/agent";
import { createArgon2PasswordHasher } from "@wap/core";
import { createServer, type RunningServer, silentLogger } from "@wap/server";
import { startOidcIdp, type TestIdp } from "@wap/test-kit/oidc-idp";
import { startTxtDnsServer, type TxtDnsServer } from "@wap/test-kit/txt-dns";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const consoleRoot = dirname(dirname(fileURLToPath(import.meta.url)));
const repositoryRoot = join(consoleRoot, "..", "..");
/** The `wap` command line's entry, run from source for the CLI-login approval. */
const cliBin = join(repositoryRoot, "packages", "cli", "src", "bin.ts");
const screenshots = process.env.WAP_CONSOLE_SCREENSHOTS
  ? join(consoleRoot, "..", "..", "docs", "console")
  : undefined;
const password = "correct horse battery staple";
const ada = { name: "Ada Lovelace", email: "ada@example.com", username: "ada" };

let server: RunningServer;
let base: string;
let dataDir: string;
let stateDir: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let daemon: Agent | undefined;
/** The DNS server domain verification asks, and the TXT records it serves. */
let dns: TxtDnsServer;
const txtRecords = new Map<string, string[][]>();
let idp: TestIdp | undefined;
/** The local account the agent starts terminals as: the one running the tests. */
const login = userInfo().username;

async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The first link to `path` in a mail to `to` in the outbox, waiting for the mail. */
async function mailedLink(to: string, path: string): Promise<string> {
  const outbox = join(dataDir, "outbox");
  const pattern = new RegExp(
    `${base.replace(/[.:/]/g, "\\$&")}${path}\\?token=[A-Za-z0-9_-]+(?:&next=[A-Za-z0-9%._~-]+)?`,
  );
  for (;;) {
    for (const file of await readdir(outbox).catch(() => [] as string[])) {
      // The outbox keeps each link on one line, as a person copies it.
      const mail = await readFile(join(outbox, file), "utf8");
      const link = mail.includes(`To: ${to}`) ? pattern.exec(mail)?.[0] : undefined;
      if (link) return link;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function shot(name: string, target: Page = page) {
  if (!screenshots) return;
  await target.waitForLoadState("networkidle").catch(() => undefined);
  await target.screenshot({ path: join(screenshots, `${name}.png`) });
}

async function heading(text: string | RegExp, target: Page = page) {
  await target.getByRole("heading", { level: 1, name: text }).waitFor();
}

/** Polls until `check` holds (the test's timeout bounds the wait). */
async function untilAsync(check: () => Promise<boolean>) {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 50));
}

/**
 * The RPCs among `methods` the page sent while `act` ran (a change handler sends at once, so two
 * animation frames after the keys are enough to see a call the keys started).
 */
async function callsDuring(methods: string[], act: () => Promise<void>, target: Page = page) {
  const sent: string[] = [];
  const seen = (request: { url: () => string }) => {
    const method = request.url().split("/").pop() ?? "";
    if (methods.includes(method)) sent.push(method);
  };
  target.on("request", seen);
  try {
    await act();
    await target.evaluate(
      "new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))",
    );
  } finally {
    target.off("request", seen);
  }
  return sent;
}

async function go(path: string) {
  await page.goto(`${base}${path}`);
}

async function signIn(target: Page, email: string) {
  await target.getByLabel("Email", { exact: true }).fill(email);
  await target.getByLabel("Password", { exact: true }).fill(password);
  await target.getByRole("button", { name: "Sign in", exact: true }).click();
}

beforeAll(async () => {
  // The server serves the built console: build it if it is missing or stale.
  const build = spawnSync(process.execPath, [join(consoleRoot, "scripts", "ensure-built.mjs")], {
    stdio: "inherit",
  });
  expect(build.status).toBe(0);
  if (screenshots) await mkdir(screenshots, { recursive: true });

  dataDir = await mkdtemp(join(tmpdir(), "wap-console-test-"));
  dns = await startTxtDnsServer((name) => txtRecords.get(name));
  stateDir = await mkdtemp(join(tmpdir(), "wap-console-daemon-"));
  // Passkeys are bound to a host name, so the browser uses localhost (a secure context over http).
  const port = await freePort();
  base = `http://localhost:${port}`;
  server = await createServer({
    host: "127.0.0.1",
    port,
    dataDir,
    publicUrl: base,
    logger: silentLogger,
    rateLimit: { authenticatedPoints: 0, anonymousPoints: 0 },
    shutdownGraceSeconds: 1,
    platformOptions: {
      passwords: createArgon2PasswordHasher({ memoryCost: 1024, timeCost: 1 }),
      dns: dns.resolver,
    },
    // The identity provider of the SSO test listens on loopback over plain HTTP.
    integrations: { sso: { allowInsecureHttp: true, allowNetworks: ["127.0.0.0/8"] } },
  });
  browser = await chromium.launch({
    executablePath: process.env.WAP_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
  page = await context.newPage();
  if (process.env.WAP_DEBUG_CONSOLE) {
    page.on("console", (m) => console.log(`[browser ${m.type()}] ${m.text()}`));
    page.on("pageerror", (e) => console.log(`[browser error] ${e.message}`));
  }
});

afterAll(async () => {
  await daemon?.stop();
  await browser?.close();
  await server?.close();
  await idp?.close();
  await dns?.close();
  await rm(dataDir, { recursive: true, force: true });
  await rm(stateDir, { recursive: true, force: true });
});

describe("the console in a browser", { timeout: 60_000 }, () => {
  let workspaceUrl: string;

  it("signs up, verifies the email through the mailed link, signs in and creates a workspace", async () => {
    await go("/");
    await heading("Sign in");
    await shot("sign-in");
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByLabel("Name", { exact: true }).fill(ada.name);
    await page.getByLabel("Email", { exact: true }).fill(ada.email);
    await page.getByLabel("Username", { exact: true }).fill(ada.username);
    await page.getByLabel("Password", { exact: true }).fill(password);
    await page.getByRole("button", { name: "Create account" }).click();
    await heading("Check your mail");

    await page.goto(await mailedLink(ada.email, "/verify-email"));
    await page.getByText("Your email address is verified.").waitFor();
    // Signed in since the sign-up, in this browser.
    await page.getByRole("link", { name: "Continue", exact: true }).click();
    await heading("Workspaces");
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await heading("Sign in");
    await signIn(page, ada.email);
    await heading("Workspaces");
    await page.getByText("No workspace yet").waitFor();

    await page.getByLabel("Name", { exact: true }).fill("Analytical Engines");
    await page.getByLabel("Description", { exact: true }).fill("Engines and the people who run them");
    await page.getByRole("button", { name: "Create workspace" }).click();
    await heading("Analytical Engines");
    workspaceUrl = new URL(page.url()).pathname;
    expect(workspaceUrl).toMatch(/^\/w\/[0-9a-f-]{36}$/);
    // The overview says what is set up and what comes next.
    const setup = page.getByRole("region", { name: "Getting started" });
    await setup.getByText("Next step: Create an SSH certificate authority. 0 of 4 done.").waitFor();
    expect(await setup.getByRole("listitem").allTextContents()).toEqual([
      expect.stringMatching(/^To do Create an SSH certificate authority/),
      expect.stringMatching(/^To do Enrol a machine and accept it/),
      expect.stringMatching(/^To do Grant a login/),
      expect.stringMatching(/^To do Log in/),
    ]);
    await shot("overview");
  });

  it("keeps the session past the access token with the refresh cookie", async () => {
    await context.clearCookies({ name: "session" });
    await page.reload();
    await heading("Analytical Engines");
    const names = (await context.cookies()).map((c) => c.name);
    expect(names).toContain("session");
  });

  it("serves a robots.txt that keeps crawlers out, and describes and titles each page", async () => {
    const robots = await fetch(`${base}/robots.txt`);
    expect(robots.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    const rules = (await robots.text()).split("\n").filter((l) => l !== "" && !l.startsWith("#"));
    expect(rules).toEqual(["User-agent: *", "Disallow: /"]);

    const description = () => page.locator('meta[name="description"]').getAttribute("content");
    await go(`${workspaceUrl}/targets`);
    await heading("Targets");
    await expect.poll(description).toBe("Machines to log in to, and who may log in as which account.");
    expect(await page.title()).toBe("Targets · Workspace Access Platform");
    await go(`${workspaceUrl}/audit`);
    await heading("Audit log");
    await expect.poll(description).toBe("Who did what, to what, and when: filter and export.");
  });

  it("creates an SSH authority and shows its public key and the sshd and known_hosts lines", async () => {
    await go(`${workspaceUrl}/authorities`);
    await page.getByText("No certificate authority yet").waitFor();
    await page.getByLabel("Name", { exact: true }).fill("ssh-users");
    // The first authority of its kind becomes the default without being asked.
    await page.getByRole("button", { name: "Create authority" }).click();
    await page.getByRole("cell", { name: "active, default" }).waitFor();
    await page.getByRole("textbox", { name: "Public key", exact: true }).waitFor();
    expect(await page.getByRole("textbox", { name: "Public key", exact: true }).inputValue()).toMatch(
      /^ssh-ed25519 AAAA/,
    );
    expect(await page.getByRole("textbox", { name: "known_hosts line", exact: true }).inputValue()).toMatch(
      /^@cert-authority \* ssh-ed25519 /,
    );
    expect(await page.getByRole("textbox", { name: "sshd snippet", exact: true }).inputValue()).toContain(
      "TrustedUserCAKeys",
    );
    await shot("certificates");

    // Key sizes: none to choose for Ed25519; RSA offers what the server takes, 3072 by default.
    expect(await page.getByLabel("Key size", { exact: true }).count()).toBe(0);
    await page.getByLabel("Key type", { exact: true }).selectOption({ label: "RSA" });
    expect(await page.getByLabel("Key size", { exact: true }).locator("option").allTextContents()).toEqual([
      "3072 bits (the default)",
      "2048 bits",
      "4096 bits (slow to make and to sign with)",
    ]);
    await page.getByLabel("Key type", { exact: true }).selectOption({ label: "Ed25519" });
    // The first X.509 authority is the default of its kind too, beside the SSH one.
    await page.getByLabel("Name", { exact: true }).fill("mtls");
    await page
      .getByLabel("Kind", { exact: true })
      .selectOption({ label: "X.509 (TLS client and server certificates)" });
    await page.getByRole("button", { name: "Create authority" }).click();
    await expect.poll(() => page.getByRole("cell", { name: "active, default" }).count()).toBe(2);
    // Its details open on creation.
    await page
      .getByText("Add the new CA certificate (shown above after the rollover) to every trust store")
      .waitFor();
    expect(await page.getByText(/sshd/).count()).toBe(0);
  });

  it("invites a second person, who signs in through the link and joins", async () => {
    await go(`${workspaceUrl}/members`);
    await page.getByRole("button", { name: "Create invitation link" }).click();
    const link = await page.getByRole("textbox", { name: "Invitation link", exact: true }).inputValue();
    expect(link).toMatch(new RegExp(`^${base}/invites/`));
    await shot("members");

    const registered = await fetch(`${base}/v1/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Bob Babbage", email: "bob@example.com", username: "bob", password }),
    });
    expect(registered.status).toBe(200);
    const other = await browser.newContext();
    try {
      const bob = await other.newPage();
      await bob.goto(link);
      await bob.getByText("You are invited to join Analytical Engines.").waitFor();
      await shot("invitation", bob);
      await bob.getByRole("link", { name: "Sign in" }).click();
      await signIn(bob, "bob@example.com");
      await bob.getByRole("button", { name: "Join Analytical Engines" }).click();
      await heading("Analytical Engines", bob);
    } finally {
      await other.close();
    }
    await go(`${workspaceUrl}/members`);
    await page.getByRole("cell", { name: "bob@example.com" }).waitFor();
  });

  it("keeps an invitation through sign-up, the mailed verification link and back", async () => {
    await go(`${workspaceUrl}/members`);
    await page.getByRole("button", { name: /^(Create invitation link|Make a new link)$/ }).click();
    const link = await page.getByRole("textbox", { name: "Invitation link", exact: true }).inputValue();
    const invitePath = new URL(link).pathname;
    const fresh = await browser.newContext();
    try {
      const carol = await fresh.newPage();
      await carol.goto(link);
      await carol.getByText("You are invited to join Analytical Engines.").waitFor();
      await carol.getByRole("link", { name: "Sign in" }).click();
      await heading("Sign in", carol);
      await carol.getByRole("link", { name: "Create an account" }).click();
      await heading("Create an account", carol);
      expect(new URL(carol.url()).searchParams.get("next")).toBe(invitePath);
      await carol.getByLabel("Name", { exact: true }).fill("Carol Shaw");
      await carol.getByLabel("Email", { exact: true }).fill("carol@example.com");
      await carol.getByLabel("Username", { exact: true }).fill("carol");
      await carol.getByLabel("Password", { exact: true }).fill(password);
      await carol.getByRole("button", { name: "Create account" }).click();
      await heading("Check your mail", carol);
      await carol.getByText("The link brings you back to your invitation.").waitFor();

      const verification = await mailedLink("carol@example.com", "/verify-email");
      expect(new URL(verification).searchParams.get("next")).toBe(invitePath);
      await carol.goto(verification);
      await carol.getByText("Your email address is verified.").waitFor();
      await carol.getByRole("link", { name: "Continue to your invitation" }).click();
      await carol.getByRole("button", { name: "Join Analytical Engines" }).click();
      await heading("Analytical Engines", carol);
    } finally {
      await fresh.close();
    }
  });

  it("shows a viewer what a viewer can do, and says who can do the rest", async () => {
    const other = await browser.newContext();
    try {
      const bob = await other.newPage();
      await bob.goto(`${base}${workspaceUrl}`);
      await heading("Sign in", bob);
      await signIn(bob, "bob@example.com");
      await heading("Analytical Engines", bob);
      const viewer = "your role here is viewer.";
      await bob.getByText(`You cannot delete the workspace. Only owners can do this; ${viewer}`).waitFor();
      const setup = bob.getByRole("region", { name: "Getting started" });
      await setup.getByText("Next step: Enrol a machine and accept it. 1 of 4 done.").waitFor();
      expect(await setup.getByRole("listitem").nth(1).textContent()).toContain(
        `Owners, admins and editors can do this; ${viewer}`,
      );
      expect(await setup.getByRole("listitem").nth(3).textContent()).toMatch(
        /^Not shown to your role Log in/,
      );
      await bob
        .getByText(`You cannot change the workspace's settings. Owners and admins can do this; ${viewer}`)
        .waitFor();
      expect(await bob.getByRole("button", { name: "Delete workspace" }).count()).toBe(0);
      expect(await bob.getByRole("button", { name: /^Save/ }).count()).toBe(0);
      const nav = bob.getByRole("navigation", { name: "Workspace" });
      await nav.getByRole("link", { name: "Targets" }).waitFor();
      for (const hidden of ["Audit log", "Single sign-on", "Billing"])
        expect(await nav.getByRole("link", { name: hidden }).count(), hidden).toBe(0);
      await shot("viewer-overview", bob);

      await nav.getByRole("link", { name: "Members" }).click();
      await heading("Members", bob);
      await bob.getByRole("cell", { name: "ada@example.com" }).waitFor();
      await bob.getByText(`You cannot invite people. Owners and admins can do this; ${viewer}`).waitFor();
      expect(
        await bob.getByRole("button", { name: /invitation link|Remove |Make .* owner|Change role/ }).count(),
      ).toBe(0);
      expect(await bob.getByRole("combobox", { name: /^Role of / }).count()).toBe(0);

      await nav.getByRole("link", { name: "Daemons" }).click();
      await heading("Daemons", bob);
      await bob
        .getByText(
          `You cannot enrol machines, accept or delete daemons. Owners, admins and editors can do this; ${viewer}`,
        )
        .waitFor();
      expect(await bob.getByRole("button", { name: /enrolment token/ }).count()).toBe(0);

      await nav.getByRole("link", { name: "Targets" }).click();
      await heading("Targets", bob);
      await bob.getByText(/^You cannot add targets\./).waitFor();
      expect(await bob.getByRole("button", { name: "Add target" }).count()).toBe(0);

      await nav.getByRole("link", { name: "Certificates" }).click();
      await bob.getByRole("button", { name: "Details of ssh-users" }).click();
      await bob.getByRole("textbox", { name: "Public key", exact: true }).waitFor();
      await bob.getByText(/^You cannot create or change authorities\./).waitFor();
      expect(
        await bob
          .getByRole("button", { name: /Delete ssh-users|Deactivate|Roll over|Create authority/ })
          .count(),
      ).toBe(0);

      await bob.goto(`${base}${workspaceUrl}/audit`);
      await bob
        .getByText(`You cannot read the audit log. Owners and admins can do this; ${viewer}`)
        .waitFor();
      await shot("viewer-audit", bob);
    } finally {
      await other.close();
    }
  });

  it("creates a service account and shows its token once", async () => {
    await go(`${workspaceUrl}/service-accounts`);
    await page.getByLabel("Name", { exact: true }).fill("deploy-bot");
    await page.getByRole("button", { name: "Create service account" }).click();
    const token = await page
      .getByRole("textbox", { name: "Service account token", exact: true })
      .inputValue();
    expect(token.length).toBeGreaterThan(20);
    await page.getByRole("cell", { name: /^deploy-bot/ }).waitFor();
  });

  it("enrols the daemon with the copied command, accepts it and sees it online", async () => {
    await go(`${workspaceUrl}/daemons`);
    await page.getByRole("button", { name: "Create enrolment token" }).click();
    const command = await page.getByRole("textbox", { name: "Enrolment command", exact: true }).inputValue();
    const match =
      /^export WAP_ENROLL_TOKEN=(\S+); curl -fsSL (\S+)\/install\/agent\.sh \| sudo --preserve-env=WAP_ENROLL_TOKEN sh$/.exec(
        command.trim(),
      );
    expect(match?.[2]).toBe(base);
    // The real host agent (the library behind `wap-agent`), enrolled with the copied token.
    const hostKey = join(stateDir, "host_key");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hostKey]);
    await enroll({ server: server.url, token: match![1]!, stateDir: join(stateDir, "state"), name: "web-1" });
    daemon = await startAgent({
      stateDir: join(stateDir, "state"),
      sshdDir: join(stateDir, "sshd"),
      hostKeyFile: `${hostKey}.pub`,
      sshAddresses: ["127.0.0.1:2222"],
      users: [login],
      hostname: "web-1",
      log: () => undefined,
    });
    // The workspace event stream brings it in without a reload.
    await page.getByRole("button", { name: "Accept web-1" }).click();
    await page.getByRole("heading", { name: "Waiting for approval" }).waitFor({ state: "detached" });
    await page.getByRole("cell", { name: "accepted" }).waitFor();
    const record = page.getByLabel("Record sessions on web-1", { exact: true });
    await record.click();
    await expect.poll(() => record.isChecked()).toBe(true);
    await page.getByRole("row", { name: /web-1 online accepted/ }).waitFor();
    await shot("daemons");
  });

  it("grants a login on the target and opens a terminal that runs a command", async () => {
    await go(`${workspaceUrl}/targets`);
    // The endpoint form is said in words, and the server's refusal names the field and the form.
    const endpoints = page.getByLabel("Endpoints", { exact: true });
    const hint = await endpoints.getAttribute("aria-describedby");
    expect(await page.locator(`[id="${hint}"]`).textContent()).toMatch(
      /^Host names or IP addresses, each with an optional port/,
    );
    const form = page.getByRole("form", { name: "Add target" });
    await form.getByLabel("Name", { exact: true }).fill("bad-endpoint");
    await endpoints.fill("-oProxyCommand=touch /tmp/x");
    await form.getByRole("button", { name: "Add target" }).click();
    await form
      .getByRole("alert")
      .filter({ hasText: "endpoints.0: must be a host name or an IP address with an optional port" })
      .waitFor();
    expect(await page.getByRole("cell", { name: /bad-endpoint/ }).count()).toBe(0);
    await page
      .getByRole("button", { name: /^Access to / })
      .first()
      .click();
    // Targets trust SSH authorities only: the X.509 one is not offered.
    expect(
      await page.getByLabel("SSH certificate authority", { exact: true }).locator("option").allTextContents(),
    ).toEqual(["ssh-users (default)"]);
    await page.getByLabel("Unix username", { exact: true }).fill(login);
    await page.getByRole("button", { name: "Add username" }).click();
    await page.getByRole("heading", { name: `as ${login}` }).waitFor();
    await page
      .getByLabel(new RegExp(`^Member to log in to .+ as ${login}$`))
      .selectOption({ label: `${ada.name} (${ada.email})` });
    await page.getByRole("button", { name: `Grant login as ${login}`, exact: true }).click();
    await page.getByRole("button", { name: new RegExp(`^Revoke Ada Lovelace as ${login}`) }).waitFor();
    await shot("targets");

    // The daemon learns of the grant through a notification and a sync; until then it refuses.
    const adaId = await page.evaluate<string>(
      "fetch('/v1/whoami').then((r) => r.json()).then((b) => b.user.id)",
    );
    const principalsFile = join(stateDir, "sshd", "principals", login);
    await untilAsync(async () => (await readFile(principalsFile, "utf8").catch(() => "")).includes(adaId));
    await go(`${workspaceUrl}/sessions`);
    await page.getByLabel("Log in as", { exact: true }).selectOption(login);
    for (;;) {
      await page.getByRole("button", { name: "Open terminal" }).click();
      const opened = await Promise.race([
        page.waitForURL(/\/terminal\//, { timeout: 5_000 }).then(() => true),
        page
          .getByRole("alert")
          .waitFor({ timeout: 5_000 })
          .then(() => false),
      ]).catch(() => false);
      if (opened) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await heading(`Terminal: ${login} on web-1`);
    await page.getByTestId("terminal-state").filter({ hasText: "Connected" }).waitFor();
    await page.locator(".xterm").click();
    await page.keyboard.type("echo hello-$((6*7))\n");
    await page.locator(".xterm-rows", { hasText: "hello-42" }).waitFor();
    await shot("terminal");

    // Closing asks first, in the page, naming the session; Cancel leaves it running.
    await page.getByRole("button", { name: "Close session" }).click();
    const question = page.getByRole("group", {
      name: `Close this session as ${login} on web-1? Its shell and every program it started end.`,
    });
    await question.waitFor();
    await question.getByRole("button", { name: "Cancel" }).click();
    await page.locator(".xterm").click();
    await page.keyboard.type("echo still-$((6*7))\n");
    await page.locator(".xterm-rows", { hasText: "still-42" }).waitFor();

    await go(workspaceUrl);
    await page.getByText("Everything is set up: people can log in.").waitFor();
    await page.goBack();
    await page.getByRole("button", { name: "Close session" }).click();
    await page.getByRole("button", { name: "Yes, close the session" }).click();
    await page
      .getByTestId("terminal-state")
      .filter({ hasText: /Session ended|Disconnected/ })
      .waitFor();
  });

  it("shows a grant's limits and edits them; the daemon then lets in only certificates carrying them", async () => {
    await go(`${workspaceUrl}/targets`);
    await page
      .getByRole("button", { name: /^Access to / })
      .first()
      .click();
    const summary = page.getByTitle("Limits of Ada Lovelace");
    expect(await summary.textContent()).toBe("no limits (the authority's options)");
    await page.getByRole("button", { name: "Edit limits of Ada Lovelace" }).click();
    const form = page.getByRole("form", { name: "Limits of Ada Lovelace's grant" });
    await form.getByLabel("No limits (certificates carry the authority's options)").uncheck();
    await form.getByLabel("Pin to the address the certificate is issued to").check();
    await form.getByLabel("Allow a PTY").check();
    await form.getByLabel("Allowed commands (one per line; none: any)").fill("uptime\ndf -h");
    await form.getByRole("button", { name: "Save limits of Ada Lovelace" }).click();
    await summary
      .filter({ hasText: "allows PTY; from the address it was issued to; commands: uptime; df -h" })
      .waitFor();
    // A bad block is refused with the field named, and nothing changes.
    await page.getByRole("button", { name: "Edit limits of Ada Lovelace" }).click();
    await form.getByLabel("Source addresses (one address or CIDR block per line)").fill("10.0.0.0/33");
    await form.getByRole("button", { name: "Save limits of Ada Lovelace" }).click();
    await form.getByRole("alert").filter({ hasText: "limits.sourceCidrs.0" }).waitFor();
    await shot("grant-limits");
    // The daemon now lists the grant's certificate principal instead of the bare id.
    const adaId = await page.evaluate<string>(
      "fetch('/v1/whoami').then((r) => r.json()).then((b) => b.user.id)",
    );
    const principalsFile = join(stateDir, "sshd", "principals", login);
    await untilAsync(async () =>
      new RegExp(`^${adaId}\\+[0-9a-f]{16}$`, "m").test(
        await readFile(principalsFile, "utf8").catch(() => ""),
      ),
    );
    // Back to no limits, as the rest of the walk expects.
    await form.getByLabel("No limits (certificates carry the authority's options)").check();
    await form.getByRole("button", { name: "Save limits of Ada Lovelace" }).click();
    await summary.filter({ hasText: "no limits (the authority's options)" }).waitFor();
    await untilAsync(async () =>
      new RegExp(`^${adaId}$`, "m").test(await readFile(principalsFile, "utf8").catch(() => "")),
    );
  });

  it("shows the addresses a daemon reports for approval, and approves them", async () => {
    // As a later SyncDaemon leaves it: a changed address waits beside the approved one.
    const workspaceId = workspaceUrl.split("/").at(-1)!;
    const { storage } = server.platform.services;
    const [web] = (await storage.targets.list(workspaceId, { limit: 10, offset: 0 })).items.filter(
      (t) => t.name === "web-1",
    );
    await storage.targets.update(workspaceId, web!.id, { reportedEndpoints: ["127.0.0.2:2222"] }, new Date());
    await go(`${workspaceUrl}/targets`);
    const note = page.getByRole("note").filter({ hasText: "Its daemon reports 127.0.0.2:2222" });
    await note.waitFor();
    expect(await note.textContent()).toContain("its host certificate names 127.0.0.1:2222 until you approve");
    await page.getByRole("button", { name: "Approve the addresses of web-1" }).click();
    await note.waitFor({ state: "detached" });
    expect((await storage.targets.findById(workspaceId, web!.id))?.endpoints).toEqual(["127.0.0.2:2222"]);
    // Back as it was, for what follows.
    await storage.targets.update(workspaceId, web!.id, { endpoints: ["127.0.0.1:2222"] }, new Date());
  });

  it("changes access, roles and ownership only with their buttons; arrow keys on a select change nothing", async () => {
    const keys = ["ArrowDown", "ArrowDown", "ArrowUp", "ArrowDown", "End", "Home"];
    await go(`${workspaceUrl}/targets`);
    await page
      .getByRole("button", { name: /^Access to / })
      .first()
      .click();
    const grantSelect = page.getByLabel(new RegExp(`^Member to log in to .+ as ${login}$`));
    expect(
      await callsDuring(["AddSubjectsToPrincipal"], async () => {
        await grantSelect.focus();
        for (const key of keys) await page.keyboard.press(key);
      }),
    ).toEqual([]);
    await grantSelect.selectOption({ label: "Bob Babbage (bob@example.com)" });
    await page.getByRole("button", { name: `Grant login as ${login}`, exact: true }).click();
    const revokeBob = page.getByRole("button", { name: `Revoke Bob Babbage as ${login}`, exact: true });
    await revokeBob.click();
    const question = page.getByRole("group", {
      name: new RegExp(`^Revoke Bob Babbage's login to .+ as ${login}\\?$`),
    });
    await question.waitFor();
    await shot("confirm-revoke");
    await question.getByRole("button", { name: "Cancel" }).click();
    await revokeBob.click();
    await question.getByRole("button", { name: `Yes, revoke Bob Babbage as ${login}` }).click();
    await revokeBob.waitFor({ state: "detached" });

    await go(`${workspaceUrl}/members`);
    const role = page.getByLabel("Role of Bob Babbage", { exact: true });
    await role.waitFor();
    const before = await role.inputValue();
    expect(
      await callsDuring(
        ["UpdateWorkspaceMember", "UpdateWorkspaceOwner", "RemoveWorkspaceMember"],
        async () => {
          await role.focus();
          for (const key of keys) await page.keyboard.press(key);
        },
      ),
    ).toEqual([]);
    await role.selectOption(before);
    expect(await page.getByRole("button", { name: "Change role of Bob Babbage" }).isDisabled()).toBe(true);
    await role.selectOption("editor");
    await page.getByRole("button", { name: "Change role of Bob Babbage" }).click();
    const change = page.getByRole("group", { name: `Make Bob Babbage an editor instead of a ${before}?` });
    await change.getByRole("button", { name: "Yes, change role of Bob Babbage" }).click();
    await change.waitFor({ state: "detached" });
    await untilAsync(async () => (await role.inputValue()) === "editor");
    await page.getByRole("button", { name: "Remove Bob Babbage", exact: true }).click();
    await page
      .getByRole("group", {
        name: "Remove Bob Babbage (bob@example.com) from the workspace? They lose every login granted here.",
      })
      .getByRole("button", { name: "Cancel" })
      .click();
    await page.getByRole("button", { name: "Make Bob Babbage owner", exact: true }).waitFor();
  });

  it("plays the session's recording in the page and downloads it as .cast", async () => {
    await go(`${workspaceUrl}/recordings`);
    await page
      .getByRole("button", { name: /^Play recording / })
      .first()
      .click();
    await page.locator(".ap-player").waitFor();
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page
        .getByRole("button", { name: /^Download recording / })
        .first()
        .click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/\.cast$/);
    const cast = await readFile((await download.path())!, "utf8");
    expect(JSON.parse(cast.split("\n")[0]!)).toMatchObject({ version: 2 });
    expect(cast).toContain("hello-42");
    await shot("recordings");
  });

  it("registers a passkey, signs out and signs in again with it", async () => {
    const cdp = await context.newCDPSession(page);
    await cdp.send("WebAuthn.enable");
    await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    await go("/account");
    await page.getByLabel("Passkey name", { exact: true }).fill("Virtual key");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByRole("cell", { name: "Virtual key", exact: true }).waitFor();
    await shot("account");
    // Renamed in the page (no browser dialog): Escape steps back, Save name applies.
    let dialogs = 0;
    page.on("dialog", (dialog) => {
      dialogs++;
      void dialog.dismiss();
    });
    await page.getByRole("button", { name: "Rename Virtual key" }).click();
    const rename = page.getByRole("form", { name: "Rename Virtual key" });
    const newName = rename.getByLabel("New name of Virtual key", { exact: true });
    expect(await newName.inputValue()).toBe("Virtual key");
    await newName.fill("Throwaway");
    await newName.press("Escape");
    await rename.waitFor({ state: "detached" });
    await page.getByRole("cell", { name: "Virtual key", exact: true }).waitFor();
    await page.getByRole("button", { name: "Rename Virtual key" }).click();
    await newName.fill("Laptop key");
    await rename.getByRole("button", { name: "Save name" }).click();
    await page.getByRole("cell", { name: "Laptop key", exact: true }).waitFor();
    await page.getByRole("button", { name: "Rename Laptop key" }).waitFor();
    expect(dialogs).toBe(0);

    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await heading("Sign in");
    await page.getByRole("button", { name: "Sign in with a passkey" }).click();
    await heading("Workspaces");
  });

  it("approves a CLI login started by `wap login --no-browser`", async () => {
    const configDir = await mkdtemp(join(tmpdir(), "wap-console-cli-"));
    try {
      // The CLI from its sources, as a person would run it, with a config directory of its own.
      const cli = spawn(
        process.execPath,
        ["--conditions=dev-source", "--import", "tsx", cliBin, "login", "--server", base, "--no-browser"],
        {
          cwd: repositoryRoot,
          env: { PATH: process.env.PATH, HOME: configDir, WAP_CONFIG_DIR: configDir, LANG: "C.UTF-8" },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      let stdout = "";
      let stderr = "";
      cli.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk;
      });
      const exited = new Promise<number | null>((resolve) => cli.once("close", resolve));
      await new Promise<void>((resolve, reject) => {
        cli.stderr.setEncoding("utf8").on("data", (chunk: string) => {
          stderr += chunk;
          if (stderr.includes("Waiting for the sign-in")) resolve();
        });
        void exited.then(() => reject(new Error(`wap login ended early: ${stderr}`)));
      });
      const url = /(https?:\/\/\S+\/cli-login\?\S+)/.exec(stderr)?.[1];
      expect(url, stderr).toMatch(new RegExp(`^${base}/cli-login\\?code=`));
      const userCode = /Type this code on the page, then approve: (\S+)/.exec(stderr)?.[1];
      expect(userCode, stderr).toBeDefined();

      // A link whose login does not exist offers nothing to approve.
      await page.goto(`${base}/cli-login?code=bogus`);
      await page.getByRole("alert").waitFor();
      expect(await page.getByRole("button", { name: "Approve" }).count()).toBe(0);

      await page.goto(url!);
      await heading("Approve a CLI sign-in");
      // A wrong code says how many tries are left before the login is cancelled.
      await page
        .getByLabel("Code shown by the CLI", { exact: true })
        .fill(userCode === "BBBB-BBBB" ? "CCCC-CCCC" : "BBBB-BBBB");
      await page.getByRole("button", { name: "Approve" }).click();
      await page
        .getByRole("alert")
        .filter({ hasText: "3 wrong codes cancel the login (2 more tries left)" })
        .waitFor();
      await page.getByText(hostname()).first().waitFor();
      await page.getByLabel("Code shown by the CLI", { exact: true }).fill(userCode!);
      await shot("cli-login");
      await page.getByRole("button", { name: "Approve" }).click();
      await page.getByText("Approved: the command line is signed in as you.").waitFor();

      expect(await exited, stderr).toBe(0);
      expect(stdout).toContain(`Signed in to ${base} as`);
      expect(stdout).toContain(ada.email);
    } finally {
      await rm(configDir, { recursive: true, force: true });
    }
  });

  it("shows the audit log with people and things by name, filters it, and exports it as CSV and JSON", async () => {
    await go(`${workspaceUrl}/audit`);
    const table = page.getByRole("table", { name: "Audit events" });
    await table.waitFor();
    expect(await page.getByRole("row").count()).toBeGreaterThan(3);
    // The authority's creation: by Ada, named with her email, about ssh-users.
    const created = table
      .getByRole("row")
      .filter({ hasText: "certificate_authority.create" })
      .filter({ hasText: "ssh-users" });
    await expect.poll(() => created.first().textContent()).toContain(`${ada.name}${ada.email}`);
    expect(await created.first().textContent()).toContain("ssh-userscertificate authority");
    await shot("audit");

    await created.first().getByRole("button", { name: "ssh-users" }).click();
    await expect
      .poll(() => page.getByLabel("Resource", { exact: true }).inputValue())
      .toMatch(/^certificate_authority:/);
    await untilAsync(async () => {
      const rows = await table.getByRole("row").allTextContents();
      return rows.length > 1 && rows.slice(1).every((r) => r.includes("ssh-users"));
    });
    await page.getByRole("button", { name: "Clear the actor, action and resource filters" }).click();
    await page.getByLabel("Actor", { exact: true }).selectOption({ label: "Bob Babbage (bob@example.com)" });
    await untilAsync(async () => {
      const rows = await table.getByRole("row").allTextContents();
      return rows.length > 1 && rows.slice(1).every((r) => r.includes("Bob Babbagebob@example.com"));
    });
    await page.getByRole("button", { name: "Clear the actor, action and resource filters" }).click();
    const [csv] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Export CSV" }).click(),
    ]);
    const csvText = await readFile((await csv.path())!, "utf8");
    expect(csvText.split("\n").length).toBeGreaterThan(3);
    expect(csvText.split("\r\n")[0]).toBe(
      "id,workspaceId,actorId,actorType,action,ipAddress,userAgent,statusCode,timestamp,resource,actorName,actorEmail,resourceName",
    );
    expect(csvText).toMatch(/,certificate_authority\.create,.*,Ada Lovelace,ada@example\.com,ssh-users\r\n/);
    const [json] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Export JSON" }).click(),
    ]);
    const jsonText = await readFile((await json.path())!, "utf8");
    expect(jsonText).toContain("workspace");
  });

  it("works at phone width", async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${base}${workspaceUrl}/targets`);
    await heading("Targets", phone);
    const menu = phone.getByRole("button", { name: "Menu" });
    await menu.click();
    await phone
      .getByRole("navigation", { name: "Workspace" })
      .getByRole("link", { name: "Audit log" })
      .click();
    await heading("Audit log", phone);
    const overflow = await phone.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
    expect(overflow).toBeLessThanOrEqual(0);
    await shot("phone", phone);
    await phone.close();
  });

  it("administers teams, domains, single sign-on and billing, and rolls an authority over", async () => {
    await go(`${workspaceUrl}/teams`);
    await heading("Teams");
    await page.getByLabel("Name", { exact: true }).fill("Engines");
    await page.getByRole("button", { name: "Create team" }).click();
    const addToTeam = page.getByLabel("Add a member to Engines", { exact: true });
    expect(
      await callsDuring(["AddTeamMember"], async () => {
        await addToTeam.focus();
        for (const key of ["ArrowDown", "ArrowDown", "ArrowUp", "End", "Home"])
          await page.keyboard.press(key);
      }),
    ).toEqual([]);
    await addToTeam.selectOption({ label: ada.name });
    await page.getByRole("button", { name: "Add to Engines", exact: true }).click();
    await page.getByRole("button", { name: `Remove ${ada.name} from Engines` }).waitFor();

    await go(`${workspaceUrl}/domains`);
    await heading("Domains");
    await page.getByLabel("Domain", { exact: true }).fill("Analytical.Example");
    await page.getByRole("button", { name: "Add domain" }).click();
    const record = page.getByRole("textbox", { name: "TXT record for analytical.example", exact: true });
    await record.waitFor();
    expect(await record.inputValue()).toMatch(/^analytical\.example\. IN TXT "[^"]+"$/);
    await shot("domains");

    await go(`${workspaceUrl}/sso`);
    await heading("Single sign-on");
    const oidc = page.getByRole("region", { name: "OpenID Connect" });
    await oidc.getByLabel("Name", { exact: true }).fill("Corporate IdP");
    await oidc.getByLabel("Issuer URL", { exact: true }).fill("https://idp.analytical.example");
    await oidc.getByLabel("Client ID", { exact: true }).fill("wap-console");
    await oidc.getByLabel("Client secret", { exact: true }).fill("a client secret");
    await oidc.getByRole("button", { name: "Save OIDC provider" }).click();
    await oidc.getByText("Saved.").waitFor();
    await page.reload();
    await heading("Single sign-on");
    // The form shows the saved provider once its query has answered after the reload.
    const issuer = oidc.getByLabel("Issuer URL", { exact: true });
    await untilAsync(async () => (await issuer.inputValue()) === "https://idp.analytical.example");
    // The secret is write-only: never sent back to the page.
    expect(await oidc.getByLabel("Client secret", { exact: true }).inputValue()).toBe("");

    await go(`${workspaceUrl}/billing`);
    await heading("Billing and licence");
    await page.getByText("Billing is not set up on this server.").waitFor();
    await shot("billing");

    await go(`${workspaceUrl}/authorities`);
    await page.getByRole("button", { name: "Details of ssh-users" }).click();
    const publicKey = page.getByRole("textbox", { name: "Public key", exact: true });
    const before = await publicKey.inputValue();
    await page.getByRole("button", { name: "Roll over" }).click();
    await page.getByText("Rolled over: the new public key is shown above.").waitFor();
    await untilAsync(async () => (await publicKey.inputValue()) !== before);
    expect(await publicKey.inputValue()).toMatch(/^ssh-ed25519 AAAA/);
  });

  it("verifies the domain by its TXT record and signs a new person in through the identity provider", async () => {
    await go(`${workspaceUrl}/domains`);
    const record = await page
      .getByRole("textbox", { name: "TXT record for analytical.example", exact: true })
      .inputValue();
    const token = /"([^"]+)"$/.exec(record)![1]!;
    txtRecords.set("analytical.example", [[token]]);
    await page.getByRole("button", { name: "Verify analytical.example" }).click();
    await page.getByText("analytical.example is verified.").waitFor();

    idp = await startOidcIdp(`${base}/v1/sso/oidc/callback`);
    idp.users.set("grace", {
      sub: "grace",
      email: "grace@analytical.example",
      email_verified: true,
      name: "Grace Hopper",
      preferred_username: "grace",
    });
    await go(`${workspaceUrl}/sso`);
    const oidc = page.getByRole("region", { name: "OpenID Connect" });
    await oidc.getByLabel("Issuer URL", { exact: true }).fill(idp.issuer);
    await oidc.getByLabel("Client ID", { exact: true }).fill("wap-confidential");
    await oidc.getByLabel("Client secret", { exact: true }).fill("wap-confidential-secret");
    await oidc.getByLabel("Create accounts on first sign-in", { exact: true }).check();
    await oidc.getByLabel("Enforce SSO for the workspace's domains", { exact: true }).check();
    await oidc.getByRole("button", { name: "Save OIDC provider" }).click();
    await oidc.getByText("Saved.").waitFor();

    // Someone new, in a browser of their own: the domain's enforced SSO hides the password.
    const graceContext = await browser.newContext();
    try {
      const grace = await graceContext.newPage();
      await grace.goto(`${base}/sign-in`);
      await heading("Sign in", grace);
      await grace.getByLabel("Email", { exact: true }).fill("grace@analytical.example");
      await grace.getByText("Your organisation signs you in through its identity provider.").waitFor();
      expect(await grace.getByLabel("Password", { exact: true }).count()).toBe(0);
      await grace.getByRole("link", { name: "Continue with Corporate IdP" }).click();
      // The server's own page names the provider's host before the browser leaves for it; when it
      // shows something else (an error page), say what.
      const continueLink = grace.locator("a#continue");
      await continueLink.waitFor().catch(async (error: unknown) => {
        const shown = await grace.locator("body").textContent();
        throw new Error(`no link to the identity provider at ${grace.url()}; the page says: ${shown}`, {
          cause: error,
        });
      });
      await continueLink.click();
      // The provider's development sign-in and consent forms.
      await grace.locator('input[name="login"]').fill("grace");
      await grace.locator('input[name="password"]').fill("any");
      await grace.locator('button[type="submit"]').click();
      await grace.locator('button[type="submit"]').click();
      await heading("Workspaces", grace);
      // Created on first sign-in and a member of the workspace that owns the domain.
      await grace.getByRole("option", { name: "Analytical Engines" }).waitFor({ state: "attached" });
    } finally {
      await graceContext.close();
    }
  });

  it("shows single sign-on's errors, and resets a forgotten password through the mailed link", async () => {
    await go("/sso?error=The%20identity%20provider%20refused%20the%20sign-in");
    await heading("Single sign-on");
    expect(await page.getByRole("alert").textContent()).toBe("The identity provider refused the sign-in");

    const fresh = await browser.newContext();
    try {
      const visitor = await fresh.newPage();
      await visitor.goto(`${base}/forgot-password`);
      await heading("Reset your password", visitor);
      await visitor.getByLabel("Email", { exact: true }).fill(ada.email);
      await visitor.getByRole("button", { name: "Send reset link" }).click();
      await visitor.getByText("If an account uses that address, a reset link is on its way.").waitFor();
      await visitor.goto(await mailedLink(ada.email, "/reset-password"));
      await heading("Choose a new password", visitor);
      const newPassword = "a new and longer passphrase";
      await visitor.getByLabel("New password", { exact: true }).fill(newPassword);
      await visitor.getByLabel("Repeat it", { exact: true }).fill(newPassword);
      await visitor.getByRole("button", { name: "Set password" }).click();
      await visitor.getByText("Your password is changed. Every other session was signed out.").waitFor();
      await visitor.getByRole("link", { name: "Sign in" }).click();
      await heading("Sign in", visitor);
      await visitor.getByLabel("Email", { exact: true }).fill(ada.email);
      await visitor.getByLabel("Password", { exact: true }).fill(newPassword);
      await visitor.getByRole("button", { name: "Sign in", exact: true }).click();
      await heading("Workspaces", visitor);
    } finally {
      await fresh.close();
    }
  });
});

describe("the console's build", () => {
  it("names only permissions of the server's role table", async () => {
    const { permissions } = await import("@wap/core");
    const sources = join(consoleRoot, "src");
    const named = new Set<string>();
    for (const file of await readdir(sources, { recursive: true })) {
      if (!/\.tsx?$/.test(file)) continue;
      const code = await readFile(join(sources, file), "utf8");
      for (const m of code.matchAll(
        /(?:need=|can\(|whoCan\(|reason\()"([a-z_]+\.[a-z_]+)"|\["[^"]*", "[^"]*", "([a-z_]+\.[a-z_]+)"\]/g,
      ))
        named.add(m[1] ?? m[2]!);
    }
    expect(named.size).toBeGreaterThan(10);
    expect([...named].filter((p) => !(permissions as readonly string[]).includes(p))).toEqual([]);
  });

  it("loads at most 300 kB of gzipped JavaScript up front; xterm and the player are separate chunks", async () => {
    const dist = join(consoleRoot, "dist");
    const html = await readFile(join(dist, "index.html"), "utf8");
    const initial = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    expect(initial.length).toBeGreaterThan(0);
    let gzipped = 0;
    for (const file of initial) gzipped += gzipSync(await readFile(join(dist, file))).length;
    expect(gzipped).toBeLessThanOrEqual(300 * 1024);
    const assets = await readdir(join(dist, "assets"));
    expect(assets.some((f) => /^terminal-.*\.js$/.test(f))).toBe(true);
    expect(assets.some((f) => /^player-.*\.js$/.test(f))).toBe(true);
    expect(initial.some((f) => /terminal|player/.test(f))).toBe(false);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  });
});
