/**
 * The import rules of the monorepo, checked by `pnpm lint` (dependency-cruiser). Packages meet
 * only at their public entries (tests also through the private @wap/test-kit); the core never imports an adapter; the client and the contract
 * stay loadable in browsers.
 */
const entries = [
  "packages/api/src/index\\.ts",
  // Each file of the contract on its own, for a program that calls few services.
  "packages/api/src/gen/platform/v1/[a-z_]+_pb\\.ts",
  "packages/ssh-wire/src/(index|encoding|forms|extensions)\\.ts",
  "packages/audit-chain/src/index\\.ts",
  "packages/core/src/(index|internal)\\.ts",
  "packages/core/src/storage/index\\.ts",
  "packages/core/src/testing/index\\.ts",
  "packages/core/src/ssh-keys\\.ts",
  "packages/core/src/audit-chain\\.ts",
  "packages/client/src/(index(\\.browser)?|signed-transport)\\.ts",
  "packages/storage-sql/src/index\\.ts",
  "packages/storage-sqlite/src/index\\.ts",
  "packages/storage-postgres/src/(testing/)?index\\.ts",
  "packages/server/src/index\\.ts",
  "packages/agent/src/index\\.ts",
  "packages/cli/src/program\\.ts",
  // The private kit the packages' tests share.
  "packages/test-kit/src/[^/]+\\.ts",
];

/**
 * The layers of @wap/core (docs/architecture.md), bottom first. A layer imports only its own
 * layer and those below; the one exception is operations/, whose `Services` and `PlatformConfig`
 * name the types of the areas' settings and ports (for types only: the platform composes them).
 */
const core = "packages/core/src";
const base = ["crypto", "lib"];
const foundation = [
  "errors\\.ts",
  "context\\.ts",
  "runtime\\.ts",
  "version\\.ts",
  "error-reasons/",
  "operations/",
  "validation/",
  "storage/",
  "access/",
];
/**
 * The areas, in levels: an area imports only areas of lower levels, so that no two areas form a
 * cycle. A new import between areas of one level moves the importing area up a level.
 */
const areaLevels = [
  ["domains", "events", "license", "mail", "principals", "tokens", "util", "workspaces"],
  ["audit"],
  ["auth", "certificates", "recordings"],
  ["billing", "credentials", "devices", "invitations", "members", "service-accounts"],
  ["daemons", "step-ups", "teams"],
  ["access-requests", "targets", "users"],
  ["sessions", "sso", "webhooks"],
  ["daemon-streams"],
];
const areas = areaLevels.flat();
/** What composes the areas, and the package's entries. */
const top = ["platform/", "testing/", "index\\.ts", "internal\\.ts", "ssh-keys\\.ts", "audit-chain\\.ts"];
const under = (names) =>
  `^${core}/(${names.map((n) => (n.endsWith("/") || n.includes("\\.") ? n : `${n}/`)).join("|")})`;

const layerRules = [
  {
    name: "core-base-stands-alone",
    severity: "error",
    comment: "crypto/ and lib/ are the bottom of the core: they import nothing else of it.",
    from: { path: under(base), pathNot: "\\.test\\.ts$" },
    to: { path: `^${core}/`, pathNot: under(base) },
  },
  {
    name: "core-foundation-below-areas",
    severity: "error",
    comment:
      "Errors, call context, the operation's declaration, validation, the storage port and the role table know no area.",
    from: { path: under(foundation), pathNot: [under(["operations/"]), "\\.test\\.ts$"] },
    to: { path: `^${core}/`, pathNot: under([...base, ...foundation]) },
  },
  {
    name: "core-services-name-area-types-only",
    severity: "error",
    comment:
      "operations/ declares the Services and PlatformConfig the platform composes: it names the areas' types, never their code.",
    from: { path: under(["operations/"]), pathNot: "\\.test\\.ts$" },
    to: { path: `^${core}/`, pathNot: under([...base, ...foundation]), dependencyTypesNot: ["type-only"] },
  },
  {
    name: "core-areas-below-platform",
    severity: "error",
    comment: "An area never imports what composes the areas (platform/) or an entry of the package.",
    from: { path: under(areas), pathNot: "\\.test\\.ts$" },
    to: { path: under(top) },
  },
  ...areaLevels.map((level, i) => ({
    name: `core-area-level-${i}`,
    severity: "error",
    comment: `The areas ${level.join(", ")} import only areas of lower levels (no cycle between areas).`,
    from: { path: under(level), pathNot: "\\.test\\.ts$" },
    to: { path: under(areaLevels.slice(i).flat()), pathNot: `^${core}/$1` },
  })),
  {
    name: "core-folders-have-a-layer",
    severity: "error",
    comment:
      "Every file of the core sits in a layer: a new folder is added to one in .dependency-cruiser.cjs.",
    from: {
      path: `^${core}/`,
      pathNot: [under([...base, ...foundation, ...areas, ...top]), "\\.test\\.ts$"],
    },
    to: {},
  },
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: "no-circular",
      severity: "error",
      comment:
        "An import cycle (other than through types) makes load order matter and areas impossible to read on their own.",
      from: { path: "^packages" },
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } },
    },
    {
      name: "packages-meet-at-entries",
      severity: "error",
      comment:
        "Another package is reached through its public entry (its package name), never a path into its src/ or test/.",
      // The tests' global set-up is loaded without the condition that maps packages to sources.
      from: { path: "^(packages/[^/]+)/", pathNot: "^packages/test-kit/src/global-setup\\.ts$" },
      to: { path: "^packages/[^/]+/", pathNot: ["^$1/", `^(${entries.join("|")})$`] },
    },
    {
      name: "test-kit-only-in-tests",
      severity: "error",
      comment: "@wap/test-kit is never published: only tests, benchmarks and the kit itself use it.",
      from: { path: "^packages/[^/]+/src/", pathNot: ["^packages/test-kit/", "\\.test\\.ts$"] },
      to: { path: "^packages/test-kit/" },
    },
    {
      name: "core-imports-no-adapter",
      severity: "error",
      comment:
        "The core runs over a storage interface; adapters and transports depend on it, not the reverse.",
      from: { path: "^packages/core/src", pathNot: "\\.test\\.ts$" },
      to: { path: "^packages/(storage-[^/]+|server|client|agent|cli|console)/" },
    },
    {
      name: "ssh-wire-stands-alone",
      severity: "error",
      comment:
        "@wap/ssh-wire is what the CLI and the agent install for SSH formats: Node built-ins only, nothing else.",
      from: { path: "^packages/ssh-wire/src", pathNot: "\\.test\\.ts$" },
      to: { pathNot: "^packages/ssh-wire/src/", dependencyTypesNot: ["core"] },
    },
    {
      name: "audit-chain-stands-alone",
      severity: "error",
      comment:
        "@wap/audit-chain is what an auditor's `wap audit verify` runs: Node built-ins only, nothing else.",
      from: { path: "^packages/audit-chain/src", pathNot: "\\.test\\.ts$" },
      to: { pathNot: "^packages/audit-chain/src/", dependencyTypesNot: ["core"] },
    },
    {
      name: "cli-and-agent-import-no-core",
      severity: "error",
      comment:
        "The CLI and the agent install on users' machines without the server's dependencies: SSH formats come from @wap/ssh-wire.",
      from: { path: "^packages/(cli|agent)/src", pathNot: "\\.test\\.ts$" },
      to: { path: "^packages/core/" },
    },
    {
      name: "client-imports-no-core",
      severity: "error",
      comment: "@wap/client loads in browsers and small scripts: it needs the contract, not the core.",
      from: { path: "^packages/client/src", pathNot: "\\.test\\.ts$" },
      to: { path: "^packages/core/" },
    },
    {
      name: "api-is-only-the-contract",
      severity: "error",
      comment: "@wap/api is generated code with @bufbuild/protobuf as its only run-time dependency.",
      from: { path: "^packages/api/src", pathNot: "\\.test\\.ts$" },
      to: { dependencyTypes: ["npm", "npm-dev", "npm-optional", "npm-peer"], pathNot: "@bufbuild/protobuf" },
    },
    {
      name: "browser-code-without-node",
      severity: "error",
      comment: "The contract and the client's browser entry must not reach Node built-ins.",
      from: {
        path: "^packages/(api/src|client/src/(index\\.browser|browser-client|platform-client|clients|session|paginate)\\.ts)",
        pathNot: "\\.test\\.ts$",
      },
      to: { dependencyTypes: ["core"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(dist|node_modules)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      conditionNames: ["dev-source", "import", "types", "default"],
      exportsFields: ["exports"],
      mainFields: ["module", "main", "types"],
      extensions: [".ts", ".js"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
