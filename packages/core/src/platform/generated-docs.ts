/**
 * The documents written from the core's own tables, by `pnpm docs:generate`
 * (scripts/write-docs.ts); `test/generated-docs.test.ts` fails when one on disk is stale.
 *
 * @module
 */
import { renderErrorsDoc } from "../error-reasons/describe.js";
import { errorReasons } from "../error-reasons/registry.js";
import { renderPermissionsDoc } from "./permissions-doc.js";
import { renderValidationDoc, validationBounds } from "./validation-table.js";

export interface GeneratedDoc {
  /** From the root of the repository. */
  readonly path: string;
  render(): string;
}

export const generatedDocs: readonly GeneratedDoc[] = [
  { path: "docs/permissions.md", render: renderPermissionsDoc },
  { path: "docs/errors.md", render: () => renderErrorsDoc(errorReasons) },
  { path: "docs/validation.md", render: () => renderValidationDoc(validationBounds) },
];
