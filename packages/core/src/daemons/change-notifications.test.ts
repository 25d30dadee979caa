/**
 * Every operation that records a change concerning daemons declares it (`notifiesDaemons`), so
 * a new operation cannot record one and leave the daemons uninformed. The actions an operation
 * records are read from the source: the action literals in its definition and in the functions
 * it calls, transitively (by name, over the whole core).
 */
import { readdirSync, readFileSync } from "node:fs";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { allOperations } from "../platform/registry.js";
import { type DaemonChange, daemonNotifyingActions } from "./change-notifications.js";

interface Scope {
  readonly literals: Set<string>;
  readonly calls: Set<string>;
}

/** The string literals and the names of the functions called under `node`. */
function scopeOf(node: ts.Node): Scope {
  const scope: Scope = { literals: new Set(), calls: new Set() };
  const visit = (n: ts.Node) => {
    if (ts.isStringLiteral(n)) scope.literals.add(n.text);
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression)) scope.calls.add(n.expression.text);
    ts.forEachChild(n, visit);
  };
  visit(node);
  return scope;
}

function readCore() {
  const root = new URL("../", import.meta.url);
  const functions = new Map<string, Scope[]>();
  const operations = new Map<string, Scope>();
  const files = (readdirSync(root, { recursive: true }) as string[]).filter(
    (file) => file.endsWith(".ts") && !file.endsWith(".test.ts") && !file.startsWith("testing/"),
  );
  for (const file of files) {
    const source = ts.createSourceFile(
      file,
      readFileSync(new URL(file, root), "utf8"),
      ts.ScriptTarget.Latest,
      true,
    );
    const remember = (name: string, body: ts.Node) =>
      functions.set(name, [...(functions.get(name) ?? []), scopeOf(body)]);
    const visit = (n: ts.Node) => {
      if (ts.isFunctionDeclaration(n) && n.name && n.body) remember(n.name.text, n.body);
      if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.initializer) {
        const init = n.initializer;
        if (ts.isArrowFunction(init) || ts.isFunctionExpression(init)) remember(n.name.text, init.body);
      }
      if (
        ts.isCallExpression(n) &&
        ts.isIdentifier(n.expression) &&
        n.expression.text === "defineOperation"
      ) {
        const definition = n.arguments[0];
        const method =
          definition && ts.isObjectLiteralExpression(definition)
            ? definition.properties.find((p) => p.name?.getText() === "method")
            : undefined;
        if (method && ts.isPropertyAssignment(method) && ts.isPropertyAccessExpression(method.initializer))
          operations.set(method.initializer.name.text, scopeOf(definition as ts.Node));
      }
      ts.forEachChild(n, visit);
    };
    visit(source);
  }
  return { functions, operations };
}

const { functions, operations } = readCore();

/** The literals under `scope` and under every function it calls, transitively. */
function reach(scope: Scope): Scope {
  const seen = new Set<string>();
  const all: Scope = { literals: new Set(scope.literals), calls: new Set(scope.calls) };
  const pending = [...scope.calls];
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (seen.has(name)) continue;
    seen.add(name);
    for (const called of functions.get(name) ?? []) {
      for (const literal of called.literals) all.literals.add(literal);
      for (const next of called.calls) {
        all.calls.add(next);
        pending.push(next);
      }
    }
  }
  return all;
}

describe("daemon notifications", () => {
  it("finds the operations in the source", () => {
    expect(operations.size).toBeGreaterThan(100);
    expect(operations.has("setPrincipals")).toBe(true);
  });

  it("are declared by every operation that records a change concerning daemons", () => {
    const missing: string[] = [];
    for (const operation of allOperations) {
      const scope = operations.get(operation.method.localName);
      if (scope === undefined) continue;
      const reached = reach(scope);
      // An operation that records no change through `call.audit` tells the daemons itself.
      if (reached.calls.has("notifyDaemonsOfChanges")) continue;
      const needed = new Set<DaemonChange>();
      for (const [action, rule] of Object.entries(daemonNotifyingActions))
        if (rule && reached.literals.has(action)) needed.add(rule.change);
      const declared = new Set(operation.notifiesDaemons ?? []);
      const undeclared = [...needed].filter((change) => !declared.has(change));
      if (undeclared.length > 0) missing.push(`${operation.method.name}: ${undeclared.join(", ")}`);
    }
    expect(missing).toEqual([]);
  });

  it("are declared by the operations that change grants, authorities and targets", () => {
    const declared = Object.fromEntries(
      allOperations
        .filter((operation) => operation.notifiesDaemons !== undefined)
        .map((operation) => [operation.method.name, [...(operation.notifiesDaemons ?? [])]]),
    );
    expect(declared).toEqual({
      SetPrincipals: ["target"],
      AddSubjectsToPrincipal: ["principal_target"],
      RemoveSubjectsFromPrincipal: ["principal_target"],
      RevokeAllAccess: ["workspace"],
      AddTeamMember: ["team_targets"],
      RemoveTeamMember: ["team_targets"],
      DeleteTeam: ["workspace"],
      RemoveWorkspaceMember: ["workspace", "revocations"],
      DeleteServiceAccount: ["workspace", "revocations"],
      UpdateCertificateAuthority: ["authority_targets"],
      DeleteCertificateAuthority: ["authority_targets"],
      RolloverCertificateAuthority: ["authority_targets"],
      RotateCertificateAuthority: ["authority_targets"],
      RevokeCertificate: ["revocations"],
      UpdateTarget: ["target"],
      ApproveAccessRequest: ["access_request_target"],
      WithdrawAccessRequest: ["access_request_target", "revocations"],
    });
  });
});
