import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { errorCodes } from "@wap/core";
import { httpStatusOfCode } from "@wap/core/internal";
import { describe, expect, it } from "vitest";
import { connectCodeOf } from "../errors.js";
import { checkedConnectVersion, codeToHttpStatus } from "./connect-protocol.js";

const require = createRequire(import.meta.url);

function installedVersion(name: string): string {
  // The package's own manifest, found next to its resolved entry.
  const entry = require.resolve(name);
  const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}/`.length);
  return (JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { version: string }).version;
}

describe("connect-es internals", () => {
  it.each(["@connectrpc/connect", "@connectrpc/connect-node"])(
    "are used only with the %s release they were checked against",
    (name) => {
      expect(installedVersion(name)).toBe(checkedConnectVersion);
    },
  );

  it("are imported only through connect-protocol.ts", async () => {
    const { readdirSync } = await import("node:fs");
    const src = new URL("./", import.meta.url);
    const files = (readdirSync(src, { recursive: true }) as string[]).filter(
      (file) => file.endsWith(".ts") && !file.endsWith("connect-protocol.ts"),
    );
    const offenders = files.filter((file) =>
      /from "@connectrpc\/connect\/protocol/.test(readFileSync(new URL(file, src), "utf8")),
    );
    expect(offenders).toEqual([]);
  });
});

describe("the core's table of HTTP statuses (docs/errors.md)", () => {
  it.each(errorCodes)("agrees with connect-es for %s", (code) => {
    expect(httpStatusOfCode[code]).toBe(codeToHttpStatus(connectCodeOf(code)));
  });
});
