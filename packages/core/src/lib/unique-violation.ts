/**
 * What a client is told when a write breaks a uniqueness rule the operation did not check
 * itself: the kind of resource and the field, in the API's words. The storage port names the rule
 * `<table>.<column>`; table, column and index names are the schema's and never leave the server
 * (the log keeps them, as the error's cause).
 *
 * @module
 */

/** Columns whose value the caller chose, by the API field that carries it. */
const callerFields: Readonly<Record<string, string>> = {
  name: "name",
  email: "email",
  username: "username",
  domain: "domain",
  verified_domain: "domain",
  serial: "serial",
};

/** Tables whose rows the API calls by another name than the table's singular. */
const resourceNames: Readonly<Record<string, string>> = {
  certificate_authorities: "certificate authority",
  workspace_domains: "domain claim",
  workspace_members: "membership",
  issued_certificates: "certificate",
};

/** The client's message for a broken uniqueness rule `<table>.<column>`. */
export function alreadyExistsMessage(rule: string): string {
  const [table = "", column = ""] = rule.split(".");
  const field = callerFields[column];
  const resource =
    resourceNames[table] ?? (/^[a-z_]+s$/.test(table) ? table.slice(0, -1).replaceAll("_", " ") : "");
  if (field === undefined || resource === "") {
    return "this resource already exists (a concurrent request may have created it): read it, or retry";
  }
  return `a ${resource} with this ${field} already exists: choose another ${field}`;
}
