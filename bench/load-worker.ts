/**
 * Child process that generates load, so the server under test keeps its own core and the
 * client's costs do not show up in the server's figures.
 */
import { type RequestSpec, runLoad } from "./http2-load.js";

process.once(
  "message",
  async (message: { baseUrl: string; spec: RequestSpec; seconds: number; concurrency: number }) => {
    const result = await runLoad(message.baseUrl, message.spec, message);
    process.send?.(result, () => process.exit(0));
  },
);
