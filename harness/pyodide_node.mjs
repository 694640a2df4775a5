// Run Python in Pyodide under Node with the phonon-web wheel installed.
//
//   node harness/pyodide_node.mjs PYODIDE_DIR WHEEL < script.py
//
// The script's last expression must be a JSON string; it is printed on one line after the
// marker "@@result " so callers can ignore Pyodide's own loading messages.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheel] = process.argv.slice(2);
if (!pyodideDir || !wheel) {
  console.error("usage: node pyodide_node.mjs PYODIDE_DIR WHEEL < script.py");
  process.exit(2);
}
const { loadPyodide } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: pyodideDir + path.sep });
await pyodide.loadPackage(path.resolve(wheel));
// Read the script from stdin (async: readFileSync(0) fails with EAGAIN on large piped input).
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const code = Buffer.concat(chunks).toString("utf8");
const result = await pyodide.runPythonAsync(code);
console.log("@@result " + result);
