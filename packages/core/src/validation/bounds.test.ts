import { create } from "@bufbuild/protobuf";
import { DurationSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type * as z from "zod";
import {
  caLifetimeBounds,
  certificateTtlBounds,
  description,
  newPassword,
  personName,
  plainName,
  profileUsername,
  resourceName,
  serviceAccountName,
  serviceAccountRoleName,
  tokenExpiryBounds,
  username,
  workspaceName,
} from "./bounds.js";
import {
  codePointLength,
  durationSeconds,
  durationText,
  email,
  isLoopbackUrl,
  looksLikeUuid,
  paging,
  timestamp,
  uuid,
  webUrlProblem,
} from "./rules.js";

/** Strings of exactly `length` code points, including astral characters (2 UTF-16 units each). */
const stringOfLength = (
  length: number,
  chars = fc.oneof(
    fc.constantFrom("a", "Z", "7"),
    fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 }),
    fc.constantFrom("é", "😀", "中"),
  ),
) => fc.array(chars, { minLength: length, maxLength: length }).map((parts) => parts.join(""));

const accepts = (schema: z.ZodType, value: unknown) => schema.safeParse(value).success;

const lengthBounds: Array<[string, z.ZodType, number, number]> = [
  ["workspace name", workspaceName, 3, 256],
  ["team/CA name", plainName, 1, 256],
  ["description", description, 0, 1000],
  ["person name", personName, 3, 256],
  ["new password", newPassword, 8, 256],
];

describe("length bounds count code points and are inclusive", () => {
  for (const [label, schema, min, max] of lengthBounds) {
    it(`${label}: ${min} to ${max}`, () => {
      fc.assert(
        fc.property(fc.integer({ min, max }), fc.nat(), (length, seed) => {
          const value = fc.sample(stringOfLength(length), { seed, numRuns: 1 })[0]!;
          expect(codePointLength(value)).toBe(length);
          expect(accepts(schema, value)).toBe(true);
        }),
        { numRuns: 60 },
      );
      if (min > 0) expect(accepts(schema, "x".repeat(min - 1))).toBe(false);
      expect(accepts(schema, "x".repeat(max + 1))).toBe(false);
      // 256 astral characters are 512 UTF-16 units but still 256 characters.
      expect(accepts(schema, "😀".repeat(max))).toBe(max >= min);
    });
  }
});

describe("resource names (service accounts, targets)", () => {
  const validName = fc
    .tuple(fc.constantFrom(..."abcXYZ019"), fc.array(fc.constantFrom(..."abcXYZ019-_"), { maxLength: 255 }))
    .map(([first, rest]) => first + rest.join(""));
  it("accepts 1 to 256 characters of the pattern", () => {
    fc.assert(
      fc.property(validName, (name) => {
        expect(accepts(resourceName, name)).toBe(true);
      }),
    );
  });
  it("rejects a leading '-' or '_', other characters, empty and 257 characters", () => {
    fc.assert(
      fc.property(validName, fc.constantFrom("-", "_", ".", " ", "é", "/"), (name, bad) => {
        expect(accepts(resourceName, bad + name)).toBe(false);
        if (bad !== "-" && bad !== "_") expect(accepts(resourceName, name + bad)).toBe(false);
      }),
    );
    expect(accepts(resourceName, "")).toBe(false);
    expect(accepts(resourceName, "a".repeat(256))).toBe(true);
    expect(accepts(resourceName, "a".repeat(257))).toBe(false);
  });
});

describe("service-account role names", () => {
  it("are empty, viewer or editor", () => {
    for (const ok of ["", "viewer", "editor"]) expect(accepts(serviceAccountRoleName, ok)).toBe(true);
    fc.assert(
      fc.property(fc.string(), (value) => {
        expect(accepts(serviceAccountRoleName, value)).toBe(["", "viewer", "editor"].includes(value));
      }),
    );
  });
});

describe("usernames (Register)", () => {
  it("are 3 to 32 characters, starting and ending with a letter or digit", () => {
    expect(accepts(username, "ab")).toBe(false);
    expect(accepts(username, "abc")).toBe(true);
    expect(accepts(username, "z".repeat(32))).toBe(true);
    expect(accepts(username, "a".repeat(33))).toBe(false);
    expect(accepts(username, "a-b_c")).toBe(true);
    expect(accepts(username, "-abc")).toBe(false);
    expect(accepts(username, "abc_")).toBe(false);
  });
});

describe("names that look like ids", () => {
  it("no username or service-account name has the form of a UUID, in any spelling", () => {
    const spellings = fc.tuple(fc.uuid(), fc.boolean(), fc.boolean()).map(([id, upper, bare]) => {
      const cased = upper ? id.toUpperCase() : id;
      return bare ? cased.replaceAll("-", "") : cased;
    });
    fc.assert(
      fc.property(spellings, (id) => {
        expect(accepts(profileUsername, id)).toBe(false);
        expect(accepts(serviceAccountName, id)).toBe(false);
        expect(looksLikeUuid(id)).toBe(true);
      }),
    );
  });

  it("names with anything but hex digits and hyphens are not id-shaped", () => {
    const name = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{1,30}[g-z]$/);
    fc.assert(
      fc.property(name, (value) => {
        expect(looksLikeUuid(value)).toBe(false);
        expect(accepts(profileUsername, value)).toBe(true);
      }),
    );
  });
});

describe("picture URLs", () => {
  const label = fc.string({ unit: fc.constantFrom(..."abcxyz019"), minLength: 1, maxLength: 12 });
  const host = fc
    .tuple(label, fc.constantFrom("example.com", "example.org", "cdn.test"))
    .map(([a, b]) => `${a}.${b}`);
  const segment = fc.string({ unit: fc.constantFrom(..."abz09-_.~%?=&#"), maxLength: 40 });
  it("https URLs are accepted; http only when allowed; other schemes never", () => {
    fc.assert(
      fc.property(host, segment, fc.boolean(), (domain, path, allowHttp) => {
        expect(webUrlProblem(`https://${domain}/${path}`, { allowHttp })).toBeNull();
        expect(webUrlProblem(`http://${domain}/${path}`, { allowHttp }) === null).toBe(allowHttp);
      }),
    );
    const scheme = fc.constantFrom("javascript", "data", "vbscript", "file", "ftp", "blob", "about");
    fc.assert(
      fc.property(scheme, fc.string(), fc.boolean(), (name, rest, allowHttp) => {
        expect(webUrlProblem(`${name}:${rest}`, { allowHttp })).not.toBeNull();
      }),
    );
  });

  it("loopback public URLs are recognised; others are not", () => {
    for (const url of [
      "http://localhost:8080",
      "http://127.0.0.1",
      "http://[::1]:3000",
      "http://app.localhost",
    ]) {
      expect(isLoopbackUrl(url)).toBe(true);
    }
    for (const url of [
      "https://example.com",
      "http://10.0.0.1",
      "http://localhost.example.com",
      "nonsense",
    ]) {
      expect(isLoopbackUrl(url)).toBe(false);
    }
  });
});

describe("durations", () => {
  const bounds: Array<[string, { min: number; max: number }]> = [
    ["CA lifetime 730h..87600h", caLifetimeBounds],
    ["certificate TTLs 1m..8760h", certificateTtlBounds],
    ["token expiry 5m..30d", tokenExpiryBounds],
  ];
  const duration = (seconds: number, nanos = 0) =>
    create(DurationSchema, { seconds: BigInt(seconds), nanos });
  for (const [label, range] of bounds) {
    it(label, () => {
      const schema = durationSeconds(range);
      fc.assert(
        fc.property(fc.integer({ min: range.min, max: range.max }), (seconds) => {
          expect(schema.parse(duration(seconds))).toBe(seconds);
        }),
      );
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 1_000_000 }), (past) => {
          expect(accepts(schema, duration(range.min - past))).toBe(false);
          expect(accepts(schema, duration(range.max + past))).toBe(false);
        }),
      );
      // A nanosecond either side of a bound counts.
      expect(accepts(schema, duration(range.min - 1, 999_999_999))).toBe(false);
      expect(accepts(schema, duration(range.max, 1))).toBe(false);
    });
  }
  it("are whole seconds: any fraction is refused with the form expected, never rounded", () => {
    const schema = durationSeconds(certificateTtlBounds);
    fc.assert(
      fc.property(
        fc.integer({ min: certificateTtlBounds.min, max: certificateTtlBounds.max - 1 }),
        fc.integer({ min: 1, max: 999_999_999 }),
        (seconds, nanos) => {
          const result = schema.safeParse(duration(seconds, nanos));
          expect(result.success).toBe(false);
          expect(result.error?.issues[0]?.message).toContain(`whole number of seconds such as "3600s"`);
          expect(result.error?.issues[0]?.message).toContain(
            `(got ${durationText(duration(seconds, nanos))})`,
          );
        },
      ),
    );
  });
  it("are written as the JSON mapping writes them", () => {
    expect(durationText(duration(3600, 500_000_000))).toBe("3600.5s");
    expect(durationText(duration(0, 1))).toBe("0.000000001s");
    expect(durationText(duration(-1, -500_000_000))).toBe("-1.5s");
    expect(durationText(duration(60))).toBe("60s");
  });
});

describe("timestamps", () => {
  const at = (seconds: bigint, nanos = 0) => create(TimestampSchema, { seconds, nanos });
  it("accept the range of the Timestamp type and nothing outside it", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -62_135_596_800n, max: 253_402_300_799n }),
        fc.integer({ min: 0, max: 999_999_999 }),
        (seconds, nanos) => {
          expect(accepts(timestamp, at(seconds, nanos))).toBe(true);
        },
      ),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 12n }), (past) => {
        expect(accepts(timestamp, at(-62_135_596_800n - past))).toBe(false);
        expect(accepts(timestamp, at(253_402_300_799n + past))).toBe(false);
      }),
    );
    expect(accepts(timestamp, at(0n, -1))).toBe(false);
    expect(accepts(timestamp, at(0n, 1_000_000_000))).toBe(false);
  });
});

describe("uuids, emails and paging", () => {
  it("uuids are 8-4-4-4-12 hex in any case and come out lower-case", () => {
    fc.assert(
      fc.property(fc.uuid(), (value) => {
        expect(uuid.parse(value.toUpperCase())).toBe(value.toLowerCase());
      }),
    );
    for (const bad of [
      "",
      "not-a-uuid",
      "0000000-0000-0000-0000-000000000000",
      "00000000-0000-0000-0000-0000000000000",
      "g0000000-0000-0000-0000-000000000000",
    ]) {
      expect(accepts(uuid, bad)).toBe(false);
    }
  });
  it("emails are at most 256 characters", () => {
    const domainOf = (length: number) =>
      `${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(60)}.${"e".repeat(length - 183)}`;
    const at256 = `${"a".repeat(64)}@${domainOf(191)}`;
    expect(at256.length).toBe(256);
    expect(accepts(email, "ada@example.com")).toBe(true);
    expect(accepts(email, at256)).toBe(true);
    expect(accepts(email, `a${at256}`)).toBe(false);
    for (const bad of ["", "ada", "ada@", "@example.com", "a b@example.com"])
      expect(accepts(email, bad)).toBe(false);
  });
  it("limit is 1 to 100 and offset at least 0", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1000, max: 1000 }), (n) => {
        expect(accepts(paging.limit, n)).toBe(n >= 1 && n <= 100);
        expect(accepts(paging.offset, n)).toBe(n >= 0);
      }),
    );
  });
});
