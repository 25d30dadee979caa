/**
 * Why the server cannot start when the settings parse but the world disagrees: the database is
 * unreachable or newer than this release, or the master key does not open its secrets. The
 * message says what to do; `wap-server` prints it and exits 1.
 *
 * @module
 */
export class StartupError extends Error {
  override readonly name = "StartupError";
}
