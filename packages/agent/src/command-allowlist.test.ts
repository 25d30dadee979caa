import { COMMAND_ALLOWLIST_EXTENSION, encodeCommandAllowlist } from "@wap/ssh-wire/extensions";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allowlistOf, decideCommand } from "./command-allowlist.js";

const listOf = (commands: readonly string[]) =>
  allowlistOf({ extensions: { [COMMAND_ALLOWLIST_EXTENSION]: encodeCommandAllowlist(commands) } });

describe("the command allowlist of a certificate", () => {
  it("allows any command without the extension", () => {
    expect(decideCommand(allowlistOf({ extensions: { "permit-pty": "" } }), "rm -rf /")).toEqual({
      allowed: true,
    });
  });

  it("allows exactly the listed commands, never a prefix, a suffix or a shell", () => {
    const list = listOf(["uptime", "systemctl status nginx"]);
    expect(decideCommand(list, "uptime")).toEqual({ allowed: true });
    expect(decideCommand(list, "systemctl status nginx")).toEqual({ allowed: true });
    for (const command of ["uptime; id", "uptime ", " uptime", "systemctl status", "UPTIME", undefined, ""]) {
      const decision = decideCommand(list, command);
      expect(decision.allowed).toBe(false);
    }
    const refused = decideCommand(list, "id");
    expect(refused).toEqual({
      allowed: false,
      message:
        'the command "id" is not among those this certificate allows (allowed: "uptime", "systemctl status nginx")',
    });
  });

  it("refuses everything under a list it cannot read", () => {
    for (const value of [
      "",
      "not json",
      "[]",
      "{}",
      '["ok", 1]',
      JSON.stringify(["a\nb"]),
      JSON.stringify(Array(33).fill("x")),
    ]) {
      const list = allowlistOf({ extensions: { [COMMAND_ALLOWLIST_EXTENSION]: value } });
      expect(decideCommand(list, "ok").allowed).toBe(false);
    }
  });

  it("allows a command if and only if it is listed; messages are printable ASCII", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc
            .string({ minLength: 1, maxLength: 20 })
            .filter((s) => [...s].every((ch) => ch.charCodeAt(0) >= 0x20 && ch.charCodeAt(0) !== 0x7f)),
          {
            minLength: 1,
            maxLength: 32,
          },
        ),
        fc.string({ maxLength: 30 }),
        (commands, command) => {
          const decision = decideCommand(listOf(commands), command);
          expect(decision.allowed).toBe(commands.includes(command));
          if (!decision.allowed) expect(decision.message).toMatch(/^[\x20-\x7e]*$/);
        },
      ),
    );
  });
});
