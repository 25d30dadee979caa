#!/usr/bin/env bash
# Every publishable package, built, through publint and @arethetypeswrong/cli. Entries under
# ./test-support/ resolve only from source (the `dev-source` condition) for the repository's own
# tests and are not part of what is published: attw leaves them out.
set -euo pipefail
cd "$(dirname "$0")/.."
pnpm build
# Every package not marked private: what would be published.
publishable=$(node -e '
  const fs = require("node:fs");
  for (const dir of fs.readdirSync("packages")) {
    const manifest = `packages/${dir}/package.json`;
    if (fs.existsSync(manifest) && !JSON.parse(fs.readFileSync(manifest, "utf8")).private) console.log(dir);
  }')
for p in $publishable; do
  publint --strict "packages/$p"
  excluded=$(node -e 'const e = Object.keys(require(process.argv[1]).exports ?? {}); console.log(e.filter((k) => k.startsWith("./test-support/")).join(" "))' "./packages/$p/package.json")
  # shellcheck disable=SC2086
  attw --pack "packages/$p" --profile esm-only --format table-flipped ${excluded:+--exclude-entrypoints $excluded}
done
