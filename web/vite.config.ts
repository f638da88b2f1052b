import { defineConfig } from "vite";

// The bundle is committed (web/dist, embedded by web/embed.go) and rebuilt by
// `make web-check` to catch drift, so the output must be small and reproducible:
// no source maps, content-hashed names, no copied public files.
export default defineConfig({
  base: "/app/",
  publicDir: false,
  oxc: { jsx: { runtime: "automatic" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    target: "es2022",
    chunkSizeWarningLimit: 600,
    rollupOptions: {
      // swr's "use client" marks a React Server Components boundary, meaningless in a plain SPA.
      onwarn(warning, warn) {
        if (warning.code !== "MODULE_LEVEL_DIRECTIVE") warn(warning);
      },
    },
  },
  server: { proxy: { "/api": "http://127.0.0.1:8787", "/canon.v1.": "http://127.0.0.1:8787" } },
});
