/**
 * What a procedure's path looks like: `/<package>.<Service>/<Method>`, for our services and the
 * standard ones the port also serves (`grpc.health.v1.Health`, `grpc.reflection.v1.ServerReflection`).
 * The service name is package-qualified, which tells an RPC's path from a two-segment REST path
 * such as `/v1/whoami`: every part of the server that asks "is this an RPC?" asks here.
 *
 * @module
 */

const procedurePath = /^\/[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\/[A-Za-z_]\w*$/;

/** Whether `path` (without its query) names a procedure rather than a REST resource. */
export function isProcedurePath(path: string): boolean {
  return procedurePath.test(path);
}
