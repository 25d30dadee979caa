import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { alreadyExistsMessage } from "./unique-violation.js";

const identifier = fc.stringMatching(/^[a-z][a-z0-9_]{0,30}$/);

describe("the message of a broken uniqueness rule", () => {
  it("names the resource and the field in the API's words", () => {
    expect(alreadyExistsMessage("targets.name")).toBe(
      "a target with this name already exists: choose another name",
    );
    expect(alreadyExistsMessage("service_accounts.name")).toBe(
      "a service account with this name already exists: choose another name",
    );
    expect(alreadyExistsMessage("certificate_authorities.name")).toContain("a certificate authority");
    expect(alreadyExistsMessage("users.email")).toContain("with this email");
  });

  it("never carries a table, column or index name, whatever the rule", () => {
    fc.assert(
      fc.property(identifier, identifier, (table, column) => {
        const message = alreadyExistsMessage(`${table}.${column}`);
        expect(message).not.toMatch(/[._]/);
        if (table.length > 3) expect(message).not.toContain(table);
        if (column.length > 3 && !["name", "email", "username", "domain", "serial"].includes(column))
          expect(message).not.toContain(column);
      }),
    );
    expect(alreadyExistsMessage("users_username_lower_key")).not.toContain("users");
  });
});
