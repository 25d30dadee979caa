/**
 * No import cycle between the folders of @wap/core, run time only (`pnpm lint`). Types are left
 * out here: `operations/` names the areas' types in the `Services` it declares, which the layer
 * rules of .dependency-cruiser.cjs allow; those rules also hold the areas to their levels, types
 * included.
 */
const main = require("./.dependency-cruiser.cjs");

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "core-no-folder-cycle",
      severity: "error",
      comment:
        "The folders of the core import each other in one direction only (docs/architecture.md, layers).",
      scope: "folder",
      from: { path: "^packages/core/src/" },
      to: { path: "^packages/core/src/", circular: true },
    },
  ],
  options: {
    ...main.options,
    tsPreCompilationDeps: false,
    exclude: { path: "(^|/)(dist|node_modules)/|\\.test\\.ts$" },
  },
};
