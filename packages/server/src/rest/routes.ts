/**
 * The REST route table, compiled from the `google.api.http` annotations of the services: no route is
 * written by hand.
 *
 * @module
 */
import {
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescService,
  getOption,
  hasOption,
} from "@bufbuild/protobuf";
import { type HttpRule, httpRule } from "@wap/api";
import { InvalidArgumentError } from "@wap/core";
import { resolveFieldPath, textFieldKind } from "./fields.js";
import { compareSpecificity, matchSegments, type PathTemplate, parsePathTemplate } from "./path-template.js";

/** One compiled binding: the main rule of a method or one of its `additional_bindings`. */
export interface RestRoute {
  readonly method: DescMethod;
  /** The binding itself (for an additional binding, that binding, not the parent rule). */
  readonly rule: HttpRule;
  /** Upper-case HTTP method, or `*` for a custom rule that accepts any method. */
  readonly httpMethod: string;
  readonly template: PathTemplate;
}

/** A request routed to an RPC. */
export interface RestMatch {
  readonly method: DescMethod;
  readonly rule: HttpRule;
  /** The template that matched, as written in the annotation. */
  readonly template: string;
  /** Percent-decoded path variables, keyed by dotted proto field path (`workspace_id`). */
  readonly pathParams: Readonly<Record<string, string>>;
}

/** The path exists but not for this HTTP method: answer 405 with `Allow: <allowedMethods>`. */
export interface RestMethodNotAllowed {
  readonly allowedMethods: readonly string[];
}

export interface RestRoutes {
  readonly routes: readonly RestRoute[];
  /**
   * Routes a request. Returns null when no template matches the path. Throws InvalidArgumentError
   * when the route is found but a path variable is not valid percent-encoding.
   */
  match(httpMethod: string, pathname: string): RestMatch | RestMethodNotAllowed | null;
}

const methodOrder = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

export function createRestRoutes(services: readonly DescService[]): RestRoutes {
  const routes: RestRoute[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, httpRule)) continue;
      const rule = getOption(method, httpRule);
      routes.push(compileRoute(method, rule));
      for (const extra of rule.additionalBindings) {
        if (extra.additionalBindings.length > 0) {
          throw new Error(`${method.parent.typeName}.${method.name}: additional_bindings may not nest`);
        }
        routes.push(compileRoute(method, extra));
      }
    }
  }
  const withVerb = routes.filter((r) => r.template.verb !== undefined);
  const withoutVerb = routes.filter((r) => r.template.verb === undefined);

  return {
    routes,
    match(httpMethod, pathname) {
      if (!pathname.startsWith("/")) return null;
      const path = pathname.slice(1).split("/");
      const last = path[path.length - 1]!;

      // Split the verb at the last colon; only when no verb template matches may a variable keep it.
      let hits: Hit[] = [];
      const colon = last.lastIndexOf(":");
      if (colon >= 0) {
        const verb = last.slice(colon + 1);
        const base = [...path.slice(0, -1), last.slice(0, colon)];
        hits = collect(
          withVerb.filter((r) => r.template.verb === verb),
          base,
        );
      }
      if (hits.length === 0) hits = collect(withoutVerb, path);
      if (hits.length === 0) return null;

      const wanted = httpMethod.toUpperCase();
      const allowed = hits.filter((h) => h.route.httpMethod === wanted || h.route.httpMethod === "*");
      if (allowed.length === 0) {
        const methods = [...new Set(hits.map((h) => h.route.httpMethod))];
        return { allowedMethods: methods.sort(byMethodOrder) };
      }
      // Stable sort: among equally specific templates, the first declared wins.
      const best = allowed.sort((a, b) => compareSpecificity(a.route.template, b.route.template))[0]!;
      return {
        method: best.route.method,
        rule: best.route.rule,
        template: best.route.template.source,
        pathParams: bindVariables(best),
      };
    },
  };
}

interface Hit {
  readonly route: RestRoute;
  readonly path: readonly string[];
  readonly starts: readonly number[];
}

function collect(routes: readonly RestRoute[], path: readonly string[]): Hit[] {
  const hits: Hit[] = [];
  for (const route of routes) {
    const starts = matchSegments(route.template, path, literalEquals);
    if (starts) hits.push({ route, path, starts });
  }
  return hits;
}

function literalEquals(raw: string, literal: string): boolean {
  if (raw === literal) return true;
  // `%76%31` is `v1`: percent-encoded unreserved characters do not change a literal.
  return raw.includes("%") && safeDecode(raw) === literal;
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

function bindVariables(hit: Hit): Record<string, string> {
  const params: Record<string, string> = Object.create(null);
  for (const variable of hit.route.template.variables) {
    const raw = hit.path.slice(hit.starts[variable.start], hit.starts[variable.end]);
    const decoded = raw.map((segment) => {
      // Multi-segment variables use reserved expansion: an encoded slash stays encoded (http.proto).
      const text = variable.multiSegment ? segment.replace(/%2F/gi, "%252F") : segment;
      const value = safeDecode(text);
      if (value === undefined) {
        throw new InvalidArgumentError(
          `path parameter {${variable.fieldPath}} is not valid percent-encoding: "${segment}"`,
          { violations: [{ field: variable.fieldPath, description: "invalid percent-encoding" }] },
        );
      }
      return value;
    });
    params[variable.fieldPath] = decoded.join("/");
  }
  return params;
}

function byMethodOrder(a: string, b: string): number {
  const ia = methodOrder.indexOf(a);
  const ib = methodOrder.indexOf(b);
  if (ia >= 0 && ib >= 0) return ia - ib;
  if (ia >= 0 || ib >= 0) return ia >= 0 ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compileRoute(method: DescMethod, rule: HttpRule): RestRoute {
  const where = `${method.parent.typeName}.${method.name}`;
  const pattern = rule.pattern;
  let httpMethod: string;
  let source: string;
  switch (pattern.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      httpMethod = pattern.case.toUpperCase();
      source = pattern.value;
      break;
    case "custom":
      httpMethod = pattern.value.kind === "*" ? "*" : pattern.value.kind.toUpperCase();
      source = pattern.value.path;
      break;
    default:
      throw new Error(`${where}: google.api.http rule has no pattern`);
  }
  let template: PathTemplate;
  try {
    template = parsePathTemplate(source);
  } catch (e) {
    throw new Error(`${where}: ${(e as Error).message}`);
  }
  // Catch annotation typos when the server starts, not on the first request.
  for (const variable of template.variables) {
    const chain = resolveFieldPath(method.input, variable.fieldPath.split("."), "name");
    if (!chain) throw new Error(`${where}: path variable {${variable.fieldPath}} names no request field`);
    const leaf = chain[chain.length - 1]!;
    if (textFieldKind(leaf) === undefined || leaf.fieldKind === "list") {
      throw new Error(`${where}: path variable {${variable.fieldPath}} must bind a singular scalar field`);
    }
  }
  checkBody(where, method.input, rule.body);
  return { method, rule, httpMethod, template };
}

function checkBody(where: string, input: DescMessage, body: string): void {
  if (body === "" || body === "*") return;
  const field: DescField | undefined = input.fields.find((f) => f.name === body);
  if (!field) throw new Error(`${where}: body "${body}" names no top-level request field`);
}
