/**
 * Requests drawn from the platform's validation bounds, through the arbitraries `@wap/core/testing`
 * derives from them: requests every bound accepts, and requests with exactly one field just
 * outside its bound. Their identifier fields mostly name the fixtures' resources instead of
 * random UUIDs, so that a valid request gets past not_found into the operation.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { validationBounds } from "@wap/core";
import { type JsonRequest, requestArbitraries } from "@wap/core/testing";
import fc from "fast-check";
import { fixtureId, type Json, type ValuePools } from "./fuzz-values.js";

export interface BoundedRequests {
  /** Requests every bound of the RPC accepts. */
  readonly valid: fc.Arbitrary<Json>;
  /** Requests with one bounded field just outside its bound; absent when none can be broken. */
  readonly justOutside: fc.Arbitrary<Json> | undefined;
}

/** The bound-derived requests of `method`; undefined when it has no bound beyond its field types. */
export function boundedRequests(method: DescMethod, pools: ValuePools): BoundedRequests | undefined {
  const procedure = `/${method.parent.typeName}/${method.name}`;
  const bounds = validationBounds.find((request) => request.procedure === procedure);
  if (!bounds || bounds.fields.length === 0) return undefined;
  const { valid, justOutside } = requestArbitraries(bounds);
  const idFields = bounds.fields.filter((field) => field.bound.kind === "uuid").map((field) => field.field);
  const aimed = (request: JsonRequest, broken?: string) => {
    const aims = idFields
      .filter((path) => path !== broken && valueAt(request, path) !== undefined)
      .map((path) => {
        const name = path.split(".").at(-1)!;
        // Mostly a fixture, sometimes the UUID the bounds drew (a resource nobody has).
        const id = fc.oneof(
          { arbitrary: fixtureId(name, pools), weight: 4 },
          { arbitrary: fc.constant(valueAt(request, path) as string), weight: 1 },
        );
        return id.map((value) => ({ path, value }));
      });
    return fc
      .tuple(...aims)
      .map((values) =>
        values.reduce<JsonRequest>((acc, { path, value }) => withValueAt(acc, path, value), request),
      );
  };
  return {
    valid: valid.chain((request) => aimed(request)) as fc.Arbitrary<Json>,
    justOutside: justOutside?.chain(({ request, field }) => aimed(request, field)) as
      | fc.Arbitrary<Json>
      | undefined,
  };
}

function valueAt(request: JsonRequest, path: string): unknown {
  let value: unknown = request;
  for (const name of path.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as JsonRequest)[name];
  }
  return value;
}

function withValueAt(request: JsonRequest, path: string, value: unknown): JsonRequest {
  const [head, ...rest] = path.split(".") as [string, ...string[]];
  if (rest.length === 0) return { ...request, [head]: value };
  return { ...request, [head]: withValueAt((request[head] as JsonRequest) ?? {}, rest.join("."), value) };
}
