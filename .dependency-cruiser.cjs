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
  "packages/core/src/index\\.ts",
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

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
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
