import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/**
 * The console builds into dist/, which wap-server serves at `/`. Workspace packages resolve to
 * their TypeScript sources (the `dev-source` condition), so no package needs building first.
 */
export default defineConfig({
  plugins: [react()],
  resolve: { conditions: ["dev-source", "browser", "module", "import", "default"] },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 1200,
  },
  server: {
    proxy: {
      "/v1": { target: "http://127.0.0.1:8080", ws: true },
      "/platform.v1.": "http://127.0.0.1:8080",
    },
  },
});
