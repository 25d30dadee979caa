#!/usr/bin/env node
import { leaveOutEd25519Warning } from "./node-warnings.js";
import { run } from "./program.js";

leaveOutEd25519Warning();
process.exitCode = await run(process.argv.slice(2));
// Open HTTP/2 sessions or a browser launcher must not keep a finished command waiting.
process.exit();
