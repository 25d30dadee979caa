/**
 * Importing the core loads none of its integrations (Stripe, SAML, OpenID Connect, WebAuthn,
 * SMTP, the outbound HTTP client): each is imported where first used. A fresh Node process imports
 * the core's entry with a module hook that reports every module resolved.
 */
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const run = promisify(execFile);
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const entryOf = (name: string) => pathToFileURL(join(import.meta.dirname, `../src/${name}.ts`)).href;

/** Prints, as JSON, the package of every module resolved while `process.argv[1]` is imported. */
const probe = `
import { register } from "node:module";
import { MessageChannel } from "node:worker_threads";
const { port1, port2 } = new MessageChannel();
const resolved = new Set();
port1.on("message", (url) => resolved.add(url));
const hook = \`export function initialize({ port }) { globalThis.port = port; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  globalThis.port.postMessage(result.url);
  return result;
}\`;
register("data:text/javascript," + encodeURIComponent(hook), { data: { port: port2 }, transferList: [port2] });
await import(process.argv[1]);
// The hook's last messages cross a thread: a turn of the event loop lets them arrive.
await new Promise((resolve) => setImmediate(resolve));
port1.close();
const packages = new Set();
for (const url of resolved) {
  const match = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(url.slice(url.lastIndexOf("/node_modules/")));
  if (match) packages.add(match[1]);
}
process.stdout.write(JSON.stringify([...packages].sort()));
`;

it.each(["index", "internal"])(
  "imports none of the integrations with the core's entry %s.ts",
  async (name) => {
    const { stdout } = await run(
      process.execPath,
      ["--conditions=dev-source", "--import", tsx, "--input-type=module", "-e", probe, entryOf(name)],
      { cwd: join(import.meta.dirname, "..") },
    );
    const loaded = JSON.parse(stdout) as string[];
    // The probe sees what the core does load.
    expect(loaded).toEqual(expect.arrayContaining(["@bufbuild/protobuf", "zod"]));
    for (const integration of [
      "stripe",
      "@node-saml/node-saml",
      "openid-client",
      "@simplewebauthn/server",
      "nodemailer",
      "undici",
    ]) {
      expect(loaded, integration).not.toContain(integration);
    }
  },
);
