/**
 * fast-check arbitraries for RPC requests, derived from the protobuf descriptors: a valid-shaped
 * canonical-JSON request for any message (scalars at the edges of their types, enums by name and number,
 * lists, maps, oneofs, nested messages, well-known types), with string fields biased by their
 * names toward identifiers and values the fixtures hold, and malformations of every kind
 * (wrong types, unknown fields, nulls, both names of a field, non-object roots).
 */
import { type DescField, type DescMessage, type DescOneof, ScalarType } from "@bufbuild/protobuf";
import fc from "fast-check";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** The kinds of resource an identifier field may name. */
export type IdKind =
  | "workspace"
  | "user"
  | "ca"
  | "team"
  | "target"
  | "principal"
  | "serviceAccount"
  | "daemon";

/** Values the fixtures hold, for string fields whose names say what they carry. */
export interface ValuePools {
  /** Identifiers of both workspaces' resources (and of their users), by kind. */
  readonly ids: Readonly<Record<IdKind, readonly string[]>>;
  readonly domains: readonly string[];
  readonly emails: readonly string[];
  /** Tokens and codes the fuzzer may know (those of workspace A only). */
  readonly secrets: readonly string[];
  readonly passwords: readonly string[];
  /** OpenSSH public keys (`ssh-ed25519 AAAA...`). */
  readonly sshPublicKeys: readonly string[];
  /** PEM SPKI public keys of ECDSA P-256 keys. */
  readonly p256Pems: readonly string[];
  /** PEM certificate signing requests. */
  readonly csrs: readonly string[];
  /** The service whose requests are made: what its `id` fields name. */
  readonly service?: string;
}

// --- strings ---------------------------------------------------------------------------------

// Lengths at and past the validation bounds come from the bounds themselves (fuzz-bounds.ts); these
// probe parsers: empty, short, UUID-sized, and one huge string.
const probeLengths = [0, 1, 2, 3, 4, 7, 8, 36, 1024, 65_536];

const printable = fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c));

/** Printable ASCII: what may travel in an HTTP header. */
export const headerText = (maxLength = 64) => fc.string({ unit: printable, maxLength });

/** Strings that have broken parsers, validators and SQL before. */
export const trickyString: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(fc.constantFrom(...probeLengths), fc.constantFrom("x", "é", "😀", "-", " ", "a1", "\u0000"))
    .map(([n, c]) => c.repeat(n)),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: printable, maxLength: 40 }),
  fc.constantFrom(
    "\u0000",
    "\uD800",
    "\uDFFF",
    "a\uD800b",
    "\u202Eevil",
    "\r\n",
    "\uFEFF",
    "../../etc/passwd",
    "%2e%2e%2f",
    "%",
    "%ZZ",
    "%00",
    "' OR '1'='1",
    "'; drop table users; --",
    "<script>alert(1)</script>",
    // A template placeholder on purpose: log and template injection.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text is the probe.
    "${jndi:ldap://x}",
    "\\",
    '"',
    "null",
    "undefined",
    "NaN",
    "0",
    "-1",
    "true",
    " ",
    "\t",
    "*",
    "?",
    "#",
    "/",
    "//",
    ":verify",
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
    "00000000000000000000000000000000",
    "{00000000-0000-0000-0000-000000000000}",
  ),
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => u.replaceAll("-", "")),
);

const hostname = fc.oneof(
  fc.domain(),
  fc.constantFrom(
    "example.com",
    "EXAMPLE.com.",
    "a..b",
    "-a.com",
    "a-.com",
    "123.456",
    "localhost",
    "*.x.com",
  ),
);

const url = fc.oneof(
  // Unroutable on purpose: the server may try to reach what it is given.
  fc.constantFrom(
    "http://127.0.0.1:9/",
    "https://127.0.0.1:9/.well-known/openid-configuration",
    "http://[::1]:9/metadata.xml",
    "https://localhost:9/idp",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "not a url",
    "https://",
    "//x",
  ),
  fc.webUrl().map((u) => u.replace(/^(https?:\/\/)[^/:?#]+/, "$1127.0.0.1:9")),
);

function oneOfPool(pool: readonly string[]): fc.Arbitrary<string> | undefined {
  return pool.length > 0 ? fc.constantFrom(...pool) : undefined;
}

/** Mixes what a field's name suggests (most of the time) with tricky strings. */
function mix(...likely: Array<fc.Arbitrary<string> | undefined>): fc.Arbitrary<string> {
  const arbitraries = likely.filter((a): a is fc.Arbitrary<string> => a !== undefined);
  if (arbitraries.length === 0) return trickyString;
  return fc.oneof({ arbitrary: fc.oneof(...arbitraries), weight: 3 }, { arbitrary: trickyString, weight: 1 });
}

const idKindOfService: Readonly<Record<string, IdKind>> = {
  TeamService: "team",
  ServiceAccountService: "serviceAccount",
  CertificateService: "ca",
  TargetService: "target",
  PrincipalService: "principal",
  DaemonService: "daemon",
};

/** The kinds of resource an identifier field names, when its name (or its service) says. */
function idKindsOf(name: string, service: string | undefined): readonly IdKind[] | undefined {
  if (name === "workspaceId") return ["workspace"];
  if (name === "userId" || name === "newOwner") return ["user"];
  if (/^teamIds?$/.test(name)) return ["team"];
  if (name === "caId") return ["ca"];
  if (name === "targetId") return ["target"];
  if (name === "daemonId") return ["daemon"];
  if (/^subjectIds?$/.test(name)) return ["user", "team", "serviceAccount"];
  if (name === "actorIds") return ["user", "serviceAccount"];
  const kind = name === "id" && service !== undefined ? idKindOfService[service] : undefined;
  return kind ? [kind] : undefined;
}

/** An identifier: mostly one of the kind the field names, sometimes any other, or none at all. */
function identifier(name: string, pools: ValuePools): fc.Arbitrary<string> {
  const all = Object.values(pools.ids).flat();
  const kinds = idKindsOf(name, pools.service);
  const named = kinds ? kinds.flatMap((kind) => pools.ids[kind]) : all;
  const choices: Array<fc.WeightedArbitrary<string>> = [{ arbitrary: fc.uuid(), weight: 1 }];
  if (named.length > 0) choices.push({ arbitrary: fc.constantFrom(...named), weight: 6 });
  if (all.length > 0) choices.push({ arbitrary: fc.constantFrom(...all), weight: 1 });
  return mix(fc.oneof(...choices));
}

/**
 * A well-formed identifier for a field: one of the fixtures' resources of the kind its name
 * says (any of theirs when it says none), or a fresh UUID when there are none.
 */
export function fixtureId(name: string, pools: ValuePools): fc.Arbitrary<string> {
  const kinds = idKindsOf(name, pools.service);
  const named = kinds ? kinds.flatMap((kind) => pools.ids[kind]) : Object.values(pools.ids).flat();
  return named.length > 0 ? fc.constantFrom(...named) : fc.uuid();
}

/** A string for a field, from its (JSON) name. */
export function stringFor(name: string, pools: ValuePools): fc.Arbitrary<string> {
  if (name === "id" || /Ids?$/.test(name) || name === "newOwner") return identifier(name, pools);
  if (/domain/i.test(name)) return mix(oneOfPool(pools.domains), hostname);
  if (/email/i.test(name)) return mix(oneOfPool(pools.emails), fc.emailAddress());
  if (/password/i.test(name))
    return mix(oneOfPool(pools.passwords), fc.string({ minLength: 8, maxLength: 40 }));
  if (/token|code/i.test(name))
    return mix(oneOfPool(pools.secrets), fc.stringMatching(/^[0-9a-f]{32}$/), fc.string({ maxLength: 80 }));
  if (name === "publicKey") return mix(oneOfPool(pools.sshPublicKeys));
  if (name === "authPubkey") return mix(oneOfPool(pools.p256Pems));
  if (name === "csr") return mix(oneOfPool(pools.csrs));
  if (/roleName/.test(name))
    return mix(fc.constantFrom("owner", "admin", "editor", "viewer", "Admin", "root"));
  if (/url$|Url$|picture/i.test(name)) return mix(url);
  if (name === "endpoints")
    return mix(
      fc.constantFrom("10.0.0.1:22", "[::1]:22", "host.example.com:2222", "host:0", "host:65536", "10.0.0.1"),
    );
  if (/^(usernames|username|principals|users)$/.test(name))
    return mix(fc.constantFrom("deploy", "root", "ubuntu", "a".repeat(33), "-x", "UPPER", "ada"));
  if (/^(eventTypes|actions)$/.test(name))
    return mix(fc.constantFrom("workspace.update", "service_account.create", "team.delete", "x.y"));
  if (name === "actorTypes") return mix(fc.constantFrom("user", "service_account", "daemon", "system"));
  if (name === "provider") return mix(fc.constantFrom("github", "google", "oidc", "saml"));
  if (name === "authMethod") return mix(fc.constantFrom("tpm", "soft"));
  if (name === "credentialJson") return mix(fc.json({ maxDepth: 2 }), fc.constant("{}"));
  if (/name$|Name$/.test(name))
    return mix(
      fc.constantFrom("probe", "probe-2", "fuzz name", "Fuzz Tester"),
      fc.stringMatching(/^[a-z][a-z0-9-]{2,20}$/),
    );
  if (/privateIps/.test(name)) return mix(fc.ipV4(), fc.ipV6());
  return mix(fc.string({ maxLength: 40 }));
}

// --- scalars ---------------------------------------------------------------------------------

const int32Edges = [0, 1, -1, 255, 256, 384, 521, 2048, 3072, 4096, 8192, 2 ** 31 - 1, -(2 ** 31)];
const uint32Edges = [0, 1, 2 ** 32 - 1];
const int64Edges = ["0", "-1", "9007199254740993", "9223372036854775807", "-9223372036854775808"];
const uint64Edges = ["0", "1", "18446744073709551615"];

function scalarArbitrary(scalar: ScalarType, name: string, pools: ValuePools): fc.Arbitrary<Json> {
  switch (scalar) {
    case ScalarType.STRING:
      return stringFor(name, pools);
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.BYTES:
      return fc
        .tuple(fc.uint8Array({ maxLength: 64 }), fc.boolean())
        .map(([bytes, urlSafe]) => Buffer.from(bytes).toString(urlSafe ? "base64url" : "base64"));
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return fc.oneof(
        fc.integer({ min: -3, max: 120 }),
        fc.constantFrom(...int32Edges),
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
        // Canonical JSON also takes 32-bit integers as strings.
        fc.integer({ min: -5, max: 120 }).map(String),
      );
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.oneof(fc.constantFrom(...uint32Edges), fc.integer({ min: 0, max: 2 ** 32 - 1 }));
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return fc.oneof(
        fc.constantFrom(...int64Edges),
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
        fc.integer({ min: -1000, max: 1000 }),
      );
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return fc.oneof(
        fc.constantFrom(...uint64Edges),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String),
      );
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      return fc.oneof(
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.constantFrom("NaN", "Infinity", "-Infinity", 0, -0, 3.4e38, 1e-45),
      );
  }
}

// --- well-known types ------------------------------------------------------------------------

const timestamp = fc.oneof(
  fc.integer({ min: -400, max: 4000 }).map((days) => new Date(Date.now() + days * 86_400_000).toISOString()),
  fc
    .date({
      min: new Date("0001-01-01T00:00:00Z"),
      max: new Date("9999-12-31T23:59:59Z"),
      noInvalidDate: true,
    })
    .map((d) => d.toISOString()),
  fc.constantFrom(
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999999Z",
    "1970-01-01T00:00:00Z",
    "2001-01-01T00:00:00+01:00",
    "2026-01-01T00:00:00.123456789Z",
    "2026-13-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "10000-01-01T00:00:00Z",
    "yesterday",
    "",
  ),
);

const duration = fc.oneof(
  fc.integer({ min: -100, max: 400_000_000 }).map((s) => `${s}s`),
  fc.constantFrom(
    // Durations at and past the TTL bounds come from the bounds (fuzz-bounds.ts); these probe
    // the JSON form and the protobuf range.
    "0s",
    "1s",
    "3600s",
    "86400s",
    "315576000000s",
    "315576000001s",
    "-315576000000s",
    "1.5s",
    "0.000000001s",
    "1.0000000001s",
    "1h",
    "s",
    "",
  ),
);

function wellKnown(typeName: string): fc.Arbitrary<Json> | undefined {
  switch (typeName) {
    case "google.protobuf.Timestamp":
      return timestamp;
    case "google.protobuf.Duration":
      return duration;
    case "google.protobuf.FieldMask":
      return fc.constantFrom("name", "name,description", "", "a.b,c");
    case "google.protobuf.Empty":
      return fc.constant({});
    case "google.protobuf.Struct":
      return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>, {
        maxKeys: 3,
      });
    case "google.protobuf.Value":
      return fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>;
    case "google.protobuf.ListValue":
      return fc.array(fc.jsonValue({ maxDepth: 1 }) as fc.Arbitrary<Json>, { maxLength: 3 });
    case "google.protobuf.Any":
      return fc.constantFrom<Json>(
        { "@type": "type.googleapis.com/google.protobuf.Empty" },
        { "@type": "x" },
        {},
      );
    default:
      return undefined;
  }
}

// --- messages --------------------------------------------------------------------------------

const maxDepth = 3;

function enumArbitrary(values: readonly { name: string; number: number }[]): fc.Arbitrary<Json> {
  return fc.oneof(
    { arbitrary: fc.constantFrom(...values.map((v) => v.name)), weight: 4 },
    { arbitrary: fc.constantFrom(...values.map((v) => v.number)), weight: 2 },
    { arbitrary: fc.constantFrom(-1, 99, 2 ** 31 - 1, -(2 ** 31)), weight: 1 },
  );
}

/** One element (or the value of a singular field) of `field`. */
function elementArbitrary(field: DescField, pools: ValuePools, depth: number): fc.Arbitrary<Json> {
  const name = field.jsonName;
  switch (field.fieldKind) {
    case "scalar":
      return scalarArbitrary(field.scalar, name, pools);
    case "enum":
      return enumArbitrary(field.enum.values);
    case "message":
      return messageValue(field.message, pools, depth + 1);
    case "list":
      if (field.listKind === "scalar") return scalarArbitrary(field.scalar, name, pools);
      if (field.listKind === "enum") return enumArbitrary(field.enum.values);
      return messageValue(field.message, pools, depth + 1);
    case "map":
      if (field.mapKind === "scalar") return scalarArbitrary(field.scalar, name, pools);
      if (field.mapKind === "enum") return enumArbitrary(field.enum.values);
      return messageValue(field.message, pools, depth + 1);
  }
}

/** Short lists; lists at and past their bounds come from the bounds (fuzz-bounds.ts). */
const listLength = fc.integer({ min: 0, max: 3 });

function fieldArbitrary(field: DescField, pools: ValuePools, depth: number): fc.Arbitrary<Json> {
  if (field.fieldKind === "list") {
    const element = elementArbitrary(field, pools, depth);
    return listLength.chain((n) => fc.array(element, { minLength: n, maxLength: n }));
  }
  if (field.fieldKind === "map") {
    const key =
      field.mapKey === ScalarType.STRING
        ? fc.oneof(fc.constantFrom("permit-pty", "force-command", "source-address", "hostname"), trickyString)
        : fc.integer({ min: -10, max: 10 }).map(String);
    return fc.dictionary(key, elementArbitrary(field, pools, depth), { maxKeys: 4 }) as fc.Arbitrary<Json>;
  }
  return elementArbitrary(field, pools, depth);
}

function messageValue(message: DescMessage, pools: ValuePools, depth: number): fc.Arbitrary<Json> {
  const known = wellKnown(message.typeName);
  if (known) return known;
  if (depth > maxDepth) return fc.constant({});
  return messageArbitrary(message, pools, { depth });
}

export interface MessageOptions {
  readonly depth?: number;
  /** Fields (proto names) present in every request: those the REST path binds. */
  readonly required?: readonly string[];
}

/** A valid-shaped canonical-JSON object for `message` (values may still break its rules). */
export function messageArbitrary(
  message: DescMessage,
  pools: ValuePools,
  options: MessageOptions = {},
): fc.Arbitrary<JsonObject> {
  const depth = options.depth ?? 0;
  const required = new Set(options.required ?? []);
  const model: Record<string, fc.Arbitrary<Json>> = {};
  const requiredKeys: string[] = [];
  for (const field of message.fields) {
    if (field.oneof) continue;
    model[field.jsonName] = fieldArbitrary(field, pools, depth);
    if (required.has(field.name)) requiredKeys.push(field.jsonName);
  }
  const plain = fc.record(model, { requiredKeys });
  const oneofs = message.oneofs.map((oneof) => oneofArbitrary(oneof, pools, depth));
  if (oneofs.length === 0) return plain as fc.Arbitrary<JsonObject>;
  return fc
    .tuple(plain, ...oneofs)
    .map(([fields, ...members]) => Object.assign({}, fields, ...members) as JsonObject);
}

/** At most one member of a oneof, as the contract allows. */
function oneofArbitrary(oneof: DescOneof, pools: ValuePools, depth: number): fc.Arbitrary<JsonObject> {
  const members = oneof.fields.map((field) =>
    fieldArbitrary(field, pools, depth).map((value): JsonObject => ({ [field.jsonName]: value })),
  );
  return fc.oneof({ arbitrary: fc.constant({}), weight: 1 }, { arbitrary: fc.oneof(...members), weight: 4 });
}

// --- malformations ---------------------------------------------------------------------------

/** A value of some JSON type, for putting where another type belongs. */
const anyJson: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(42, -1, 1.5, 1e308, 2 ** 53, "text", "", true, false, null, [], {}, [1, "a"], {
    a: 1,
  }),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
);

/** The ways a structured request can be wrong. */
export type Malformation =
  | { readonly kind: "wrong-type"; readonly field: number; readonly value: Json }
  | { readonly kind: "unknown-field"; readonly name: string; readonly value: Json }
  | { readonly kind: "null-field"; readonly field: number }
  | { readonly kind: "both-names"; readonly field: number }
  | { readonly kind: "oneof-twice" }
  | { readonly kind: "not-an-object"; readonly value: Json };

export const malformation: fc.Arbitrary<Malformation> = fc.oneof(
  fc.record({ kind: fc.constant("wrong-type" as const), field: fc.nat(), value: anyJson }),
  fc.record({
    kind: fc.constant("unknown-field" as const),
    name: fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom("__proto__", "constructor", "@type", "")),
    value: anyJson,
  }),
  fc.record({ kind: fc.constant("null-field" as const), field: fc.nat() }),
  fc.record({ kind: fc.constant("both-names" as const), field: fc.nat() }),
  fc.constant({ kind: "oneof-twice" as const }),
  fc.record({ kind: fc.constant("not-an-object" as const), value: anyJson }),
);

/** Applies a malformation to a request of `message`. */
export function malform(message: DescMessage, request: JsonObject, how: Malformation): Json {
  const fields = message.fields;
  const pick = (i: number) => (fields.length > 0 ? fields[i % fields.length] : undefined);
  const copy: JsonObject = { ...request };
  switch (how.kind) {
    case "wrong-type": {
      const field = pick(how.field);
      copy[field?.jsonName ?? "bogus"] = how.value;
      return copy;
    }
    case "unknown-field":
      // defineProperty: "__proto__" must become a key, not the prototype.
      Object.defineProperty(copy, how.name, { value: how.value, enumerable: true, writable: true });
      return copy;
    case "null-field": {
      const field = pick(how.field);
      copy[field?.jsonName ?? "bogus"] = null;
      return copy;
    }
    case "both-names": {
      const field = pick(how.field);
      if (!field) return copy;
      copy[field.name] = copy[field.jsonName] ?? "x";
      copy[field.jsonName] = copy[field.jsonName] ?? "y";
      return copy;
    }
    case "oneof-twice": {
      for (const oneof of message.oneofs) {
        for (const field of oneof.fields) copy[field.jsonName] = copy[field.jsonName] ?? {};
      }
      return copy;
    }
    case "not-an-object":
      return how.value;
  }
}

/** Renames keys to their proto names (`workspace_id`), which canonical JSON parsers also accept. */
export function withProtoNames(message: DescMessage, request: Json): Json {
  if (request === null || typeof request !== "object" || Array.isArray(request)) return request;
  const renamed: JsonObject = {};
  for (const [key, value] of Object.entries(request)) {
    const field = message.fields.find((f) => f.jsonName === key);
    renamed[field ? field.name : key] = value;
  }
  return renamed;
}
