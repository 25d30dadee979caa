/**
 * The test projects of the monorepo, one per package. Shared by `vitest.config.ts`
 * (which hands them to `test.projects`) and by anyone running a single project:
 * `pnpm vitest run --project core`.
 */
const packages = [
  "api",
  "ssh-wire",
  "core",
  "storage-sql",
  "storage-sqlite",
  "storage-postgres",
  "server",
  "client",
  "console",
  "cli",
  "agent",
] as const;

export const projects = [
  ...packages.map((name) => ({
    extends: true as const,
    test: {
      name,
      root: `packages/${name}`,
      include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    },
  })),
  {
    extends: true as const,
    test: { name: "examples", root: "examples", include: ["**/*.test.ts"] },
  },
  {
    extends: true as const,
    test: { name: "bench", root: "bench", include: ["*.test.ts"] },
  },
  {
    // `pnpm release` and installs of what it writes (npm tarballs, Debian packages).
    extends: true as const,
    test: { name: "release", root: "scripts", include: ["*.test.ts"] },
  },
];
