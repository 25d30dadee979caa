/**
 * The test projects of the monorepo. Shared by `vitest.config.ts` (which hands them to
 * `test.projects`) and by anyone running a single project: `pnpm vitest run --project core`.
 *
 * - One project per package, without isolation: a test process runs many files one after the
 *   other and loads the packages once (loading the server from source costs seconds of CPU per
 *   process). Tests keep their state in the platforms and servers they make, never in modules.
 * - `own-process`: files that need a process of their own (PKCS#11 loads SoftHSM2 once per
 *   process, with the configuration of the first token it sees).
 * - `release`: what users install and run as they would (`pnpm release`'s npm tarballs and
 *   Debian packages installed, the server's worker processes, the console and a gRPC-Web client
 *   in Debian's chromium), each file in its own process.
 */
const packages = [
  "api",
  "ssh-wire",
  "audit-chain",
  "core",
  "storage-sql",
  "storage-sqlite",
  "storage-postgres",
  "server",
  "client",
  "console",
  "cli",
  "agent",
  "test-kit",
] as const;

/** Files that must run in a fresh process, by path from the repository's root. */
const ownProcess = [
  "packages/core/src/crypto/pkcs11/token.test.ts",
  "packages/core/test/pkcs11-authorities.test.ts",
  "packages/server/test/pkcs11.test.ts",
];

/** Release checks, by path from the repository's root. */
const release = [
  "scripts/release.test.ts",
  "packages/server/test/workers.test.ts",
  "packages/console/test/console.browser.test.ts",
  "packages/console/test/access-requests.browser.test.ts",
  "packages/console/test/grpc-web.browser.test.ts",
  "packages/console/test/webhooks.browser.test.ts",
  "packages/console/test/ssh-watch.browser.test.ts",
];

const inPackage = (name: string) => (path: string) => path.startsWith(`packages/${name}/`);
const fromPackage = (name: string) => (path: string) => path.slice(`packages/${name}/`.length);

export const projects = [
  ...packages.map((name) => ({
    extends: true as const,
    test: {
      name,
      root: `packages/${name}`,
      include: ["src/**/*.test.ts", "test/**/*.test.ts"],
      exclude: [
        "**/node_modules/**",
        ...[...ownProcess, ...release].filter(inPackage(name)).map(fromPackage(name)),
      ],
      isolate: false,
    },
  })),
  {
    extends: true as const,
    test: { name: "own-process", include: ownProcess, isolate: true },
  },
  {
    extends: true as const,
    test: { name: "release", include: release, isolate: true },
  },
  {
    extends: true as const,
    test: { name: "examples", root: "examples", include: ["**/*.test.ts"], isolate: false },
  },
  {
    extends: true as const,
    test: { name: "bench", root: "bench", include: ["*.test.ts"], isolate: false },
  },
];
