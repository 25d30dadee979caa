/**
 * Path templates of `google.api.http` rules (google/api/http.proto):
 *
 *     Template = "/" Segments [ Verb ] ;
 *     Segments = Segment { "/" Segment } ;
 *     Segment  = "*" | "**" | LITERAL | Variable ;
 *     Variable = "{" FieldPath [ "=" Segments ] "}" ;
 *     Verb     = ":" LITERAL ;
 *
 * Parsing happens once, when the routes are built; a malformed template is a bug in the contract,
 * so it throws a plain Error rather than a request error.
 *
 * @module
 */

/** One segment of a template: a literal, `*` (exactly one segment) or `**` (zero or more). */
export type TemplateSegment =
  | { readonly kind: "literal"; readonly value: string }
  | { readonly kind: "single" }
  | { readonly kind: "multi" };

/** A `{field}` or `{field=pattern}`: it spans template segments `start` (inclusive) to `end` (exclusive). */
export interface TemplateVariable {
  /** Dotted proto field names, e.g. `workspace_id` or `config.name`. */
  readonly fieldPath: string;
  readonly start: number;
  readonly end: number;
  /** True when the pattern can capture more than one segment (`**` or several segments). */
  readonly multiSegment: boolean;
}

export interface PathTemplate {
  readonly source: string;
  readonly segments: readonly TemplateSegment[];
  readonly variables: readonly TemplateVariable[];
  /** The custom verb without its colon (`verify` for `...:verify`), or undefined. */
  readonly verb: string | undefined;
}

const fieldPathPattern = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

export function parsePathTemplate(source: string): PathTemplate {
  const fail = (why: string): never => {
    throw new Error(`invalid http path template "${source}": ${why}`);
  };
  if (!source.startsWith("/")) fail("must start with /");

  // The verb follows the last colon that is outside every segment but the last one and outside braces.
  let path = source;
  let verb: string | undefined;
  const colon = source.lastIndexOf(":");
  if (colon > source.lastIndexOf("/") && colon > source.lastIndexOf("}")) {
    verb = source.slice(colon + 1);
    path = source.slice(0, colon);
    if (verb === "" || /[{}*]/.test(verb)) fail(`invalid custom verb "${verb}"`);
  }

  const segments: TemplateSegment[] = [];
  const variables: TemplateVariable[] = [];
  const plain = (text: string): TemplateSegment => {
    if (text === "*") return { kind: "single" };
    if (text === "**") return { kind: "multi" };
    if (text === "" || /[{}*]/.test(text)) fail(`invalid segment "${text}"`);
    return { kind: "literal", value: text };
  };

  let i = 1;
  while (i <= path.length) {
    if (path[i] === "{") {
      const close = path.indexOf("}", i);
      if (close < 0) fail("unclosed {");
      const inner = path.slice(i + 1, close);
      if (inner.includes("{")) fail("nested variables are not allowed");
      const eq = inner.indexOf("=");
      const fieldPath = eq < 0 ? inner : inner.slice(0, eq);
      if (!fieldPathPattern.test(fieldPath)) fail(`invalid field path "${fieldPath}"`);
      if (variables.some((v) => v.fieldPath === fieldPath)) fail(`field "${fieldPath}" is bound twice`);
      const pattern = eq < 0 ? ["*"] : inner.slice(eq + 1).split("/");
      const start = segments.length;
      for (const part of pattern) segments.push(plain(part));
      const multiSegment = pattern.length > 1 || pattern.includes("**");
      variables.push({ fieldPath, start, end: segments.length, multiSegment });
      i = close + 1;
    } else {
      let end = path.indexOf("/", i);
      if (end < 0) end = path.length;
      segments.push(plain(path.slice(i, end)));
      i = end;
    }
    if (i === path.length) break;
    if (path[i] !== "/") fail(`expected / at offset ${i}`);
    i++;
    if (i === path.length) fail("trailing /");
  }

  const multi = segments.findIndex((s) => s.kind === "multi");
  if (multi >= 0 && multi !== segments.length - 1) fail("** must be the last segment");
  return { source, segments, variables, verb };
}

/**
 * Matches raw (still percent-encoded) path segments against a template's segments. Returns, for each
 * template segment, the index of the path segment where it starts (plus a final entry, the path
 * length), or undefined when the path does not match.
 */
export function matchSegments(
  template: PathTemplate,
  path: readonly string[],
  literalEquals: (raw: string, literal: string) => boolean,
): number[] | undefined {
  const { segments } = template;
  const starts: number[] = [];
  let p = 0;
  for (const segment of segments) {
    starts.push(p);
    if (segment.kind === "multi") {
      // Only ever last (checked when parsing): it takes whatever is left.
      p = path.length;
      continue;
    }
    const raw = path[p];
    if (raw === undefined || raw === "") return undefined;
    if (segment.kind === "literal" && !literalEquals(raw, segment.value)) return undefined;
    p++;
  }
  if (p !== path.length) return undefined;
  starts.push(p);
  return starts;
}

/** Orders templates that match the same path: literals beat `*`, which beats `**`; then longer wins. */
export function compareSpecificity(a: PathTemplate, b: PathTemplate): number {
  const rank = (s: TemplateSegment): number => (s.kind === "literal" ? 0 : s.kind === "single" ? 1 : 2);
  const n = Math.min(a.segments.length, b.segments.length);
  for (let i = 0; i < n; i++) {
    const d = rank(a.segments[i]!) - rank(b.segments[i]!);
    if (d !== 0) return d;
  }
  if (a.segments.length !== b.segments.length) return b.segments.length - a.segments.length;
  return (a.verb === undefined ? 1 : 0) - (b.verb === undefined ? 1 : 0);
}
