/**
 * @wap/server: the Workspace Access Platform over HTTP. Connect (JSON and binary), gRPC, gRPC-Web
 * and REST (transcoded from the google.api.http annotations) on one port, HTTP/1.1 and HTTP/2,
 * with authentication, rate limits and CSRF protection at one shared edge.
 *
 * For applications: {@link createServer} (the `wap-server` binary wraps it). Several instances
 * over one PostgreSQL share rate limits and events by themselves (`databaseUrl: "postgres://..."`);
 * {@link createPostgresRateLimiters} and {@link rateLimiterFrom} are there to wire limiters by hand.
 *
 * @module
 */

// Settings: the table behind `wap-server --help` and the WAP_* variables.
export type { Command, ParsedCommandLine, ServerConfig } from "./config.js";
export { ConfigError, commands, defaultConfig, helpText, parseConfig } from "./config.js";
// The google.rpc error details the server attaches, for clients that decode them.
export { BadRequestSchema, ErrorInfoSchema, errorDetailsRegistry } from "./error-details.js";
// Logging: JSON lines on stderr by default.
export type { LogFields, Logger, LogLevel } from "./logger.js";
export { createJsonLogger, logLevels, silentLogger } from "./logger.js";
export { createPostgresRateLimiters, rateLimitTable } from "./postgres-rate-limit.js";
// Rate limiting: in memory by default; any rate-limiter-flexible store through rateLimiterFrom.
export type { RateLimitDecision, RateLimiter, RateLimiters, RateLimitSettings } from "./rate-limit.js";
export { createMemoryRateLimiters, defaultRateLimitSettings, rateLimiterFrom } from "./rate-limit.js";
// The server.
export type { RunningServer, ServerOptions } from "./server.js";
export { createServer } from "./server.js";
// Start-up failures that are not settings (database unreachable or newer, wrong master key).
export { StartupError } from "./startup-error.js";
