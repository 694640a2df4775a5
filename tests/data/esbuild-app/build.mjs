// The package README's recipe for esbuild: the API bundled from node_modules as an ES module
// (esbuild's default, iife, has no import.meta.url), the runtime files copied beside the bundle
// (dist/phonon-web/), `base` naming that folder (src/main.js).
//   node build.mjs                  -> dist/
//   node build.mjs --serve --port N -> dist/, then esbuild's server on 127.0.0.1:N
// Test switches: NO_RUNTIME=1 leaves the runtime out; FORMAT=iife NO_BASE=1 is the mistake the
// API must name (a non-module bundle with no `base`).
import * as esbuild from "esbuild";
import { cpSync, mkdirSync, rmSync } from "node:fs";

const serve = process.argv.includes("--serve");
const port = serve ? Number(process.argv[process.argv.indexOf("--port") + 1]) : 0;
rmSync("dist", { recursive: true, force: true });
mkdirSync("dist");
cpSync("index.html", "dist/index.html");
if (process.env.NO_RUNTIME !== "1") cpSync("node_modules/phonon-web", "dist/phonon-web", { recursive: true });
const options = {
  entryPoints: ["src/main.js"], bundle: true, outfile: "dist/main.js", logLevel: "warning",
  format: process.env.FORMAT || "esm",
  define: { __NO_BASE__: process.env.NO_BASE === "1" ? "true" : "false" },
};
if (serve) {
  const context = await esbuild.context(options);
  await context.serve({ servedir: "dist", host: "127.0.0.1", port });
  console.log(`serving http://127.0.0.1:${port}/`);
} else {
  await esbuild.build(options);
}
