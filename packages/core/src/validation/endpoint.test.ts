import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { endpoint, workspaceName } from "./bounds.js";
import { isEndpoint, parseEndpoint } from "./endpoint.js";
import { controlCharacters, hasControlCharacters } from "./rules.js";

const port = fc.integer({ min: 1, max: 65_535 });
const hostname = fc.domain();

describe("endpoints", () => {
  it("are a host name, an IPv4 address or an IPv6 address (bracketed with a port), each with an optional port", () => {
    fc.assert(
      fc.property(hostname, fc.ipV4(), fc.ipV6(), port, (host, v4, v6, p) => {
        expect(parseEndpoint(host)).toEqual({ host, port: undefined, kind: "hostname" });
        expect(parseEndpoint(`${host}:${p}`)).toEqual({ host, port: p, kind: "hostname" });
        expect(parseEndpoint(`${v4}:${p}`)).toEqual({ host: v4, port: p, kind: "ipv4" });
        expect(parseEndpoint(v6)).toEqual({ host: v6, port: undefined, kind: "ipv6" });
        expect(parseEndpoint(`[${v6}]`)).toEqual({ host: v6, port: undefined, kind: "ipv6" });
        expect(parseEndpoint(`[${v6}]:${p}`)).toEqual({ host: v6, port: p, kind: "ipv6" });
      }),
    );
  });

  it("refuse whatever a program could read as an option, a second word or a token", () => {
    for (const value of [
      "-oProxyCommand=touch /tmp/x",
      "-oProxyCommand=/tmp/x",
      "-p",
      "web-01 -oProxyCommand=x",
      "web%h",
      '"web"',
      "web*",
      "web,db",
      "user@web",
      "web:0",
      "web:65536",
      "web:022",
      "web:",
      "web:22:22",
      "10.0.0.256",
      "1.2.3",
      "[10.0.0.1]:22",
      "[fd00::5]:",
      "fd00::5:22:x",
      "",
    ])
      expect(isEndpoint(value), value).toBe(false);
  });

  it("refuse any string that starts with '-' or holds anything but [A-Za-z0-9.:[\\]-]", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 40 }), (value) => {
        if (value.startsWith("-") || /[^A-Za-z0-9.:[\]-]/.test(value)) expect(isEndpoint(value)).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it("is the request rule: its refusal says the expected form", () => {
    const refused = endpoint.safeParse("-oProxyCommand=/tmp/x");
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.message).toBe(
      "must be a host name or an IP address with an optional port (web-01.internal, 10.0.0.5:4022, [fd00::5]:4022)",
    );
    expect(endpoint.safeParse("[fd00::5]:4022").success).toBe(true);
  });
});

describe("control characters", () => {
  const controls = [
    ...Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i)),
    ...Array.from({ length: 0x21 }, (_, i) => String.fromCharCode(0x7f + i)),
    "\u2028",
    "\u2029",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
  ];

  it("are C0, DEL, C1, the line separators and the bidirectional controls, and nothing printable", () => {
    for (const c of controls)
      expect(hasControlCharacters(`a${c}b`), c.codePointAt(0)!.toString(16)).toBe(true);
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 20 }), (value) => {
        const stripped = value.replace(new RegExp(controlCharacters.source, "gu"), "");
        expect(hasControlCharacters(stripped)).toBe(false);
      }),
    );
    expect(hasControlCharacters("Platform team – été 😀 中")).toBe(false);
  });

  it("are refused in names wherever they are, with a message that says so", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme-ascii", minLength: 3, maxLength: 20 }),
        fc.constantFrom(...controls),
        fc.nat(),
        (name, c, at) => {
          const i = at % (name.length + 1);
          const result = workspaceName.safeParse(`${name.slice(0, i)}${c}${name.slice(i)}`);
          expect(result.success).toBe(false);
          expect(result.error?.issues[0]?.message).toMatch(/must not contain (control|NUL) characters/);
        },
      ),
    );
    expect(workspaceName.safeParse("Platform team\nHost *\n  ProxyCommand touch /tmp/x\n#").success).toBe(
      false,
    );
  });
});
