// Run one checks.jobs job, or a piece of Python, in Pyodide under Node, with the given wheels
// installed.
//
//   echo '{"job": "parity_sweep", "args": {}}' | node harness/pyodide_node.mjs PYODIDE_DIR WHEEL...
//   echo '{"code": "...", "mounts": {"/data": "/host/dir"}}' | node harness/pyodide_node.mjs ...
//
// "code" runs with pyodide.runPython (its last expression, a string, is the result): what an older
// tree's checks package does not have (harness/cpu_versus.py). "mounts" puts host folders into
// Pyodide's file system (NODEFS: real files; a symbolic link pointing outside its folder is not
// followed). The JSON result is printed on one line after the marker "@@result " so callers can
// ignore Pyodide's own loading messages.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, ...wheels] = process.argv.slice(2);
if (!pyodideDir || !wheels.length) {
  console.error("usage: node pyodide_node.mjs PYODIDE_DIR WHEEL... < job.json");
  process.exit(2);
}
const { loadPyodide } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: pyodideDir + path.sep });
for (const wheel of wheels) await pyodide.loadPackage(path.resolve(wheel));
// Read the request from stdin (async: readFileSync(0) fails with EAGAIN on large piped input).
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { job, args, code, mounts } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
for (const [where, folder] of Object.entries(mounts || {})) {
  pyodide.FS.mkdirTree(where);
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: folder }, where);
}
const result = code !== undefined
  ? pyodide.runPython(code)
  : await pyodide.pyimport("checks.jobs").run(job, JSON.stringify(args || {}));
console.log("@@result " + result);
