// Pyodide's standard library with bytecode for what the engine's start imports (build.py pyodide).
//
//   node harness/stdlib_bytecode.mjs PYODIDE_DIR RUNTIME_WHEEL OUT_ZIP
//
// The pinned python_stdlib.zip holds sources only, so every start of Python in a page compiles
// the same ~150 modules again (most of a start's time). This starts Pyodide under Node, installs
// the runtime wheel, imports what web/worker.mjs's start imports, and writes a copy of the zip in
// which each stdlib module that start loaded has, beside its unchanged source, an
// unchecked-hash .pyc (PEP 552) compiled by this very Pyodide (the same CPython build and
// bytecode version the page runs). zipimport tries `name.pyc` before `name.py` and does not
// check an unchecked-hash .pyc against its source, so those modules load without compiling;
// everything else still compiles from source as before, and tracebacks keep their source lines.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheel, outZip] = process.argv.slice(2);
if (!pyodideDir || !wheel || !outZip) {
  console.error("usage: node stdlib_bytecode.mjs PYODIDE_DIR RUNTIME_WHEEL OUT_ZIP");
  process.exit(2);
}
const { loadPyodide } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: pyodideDir + path.sep });
await pyodide.loadPackage(path.resolve(wheel));
const summary = pyodide.runPython(`
import importlib.util, io, sys, zipfile
import importlib._bootstrap_external as bootstrap
# what a start imports: the worker's engine.webapp, then engine.kernels and hashlib (worker.mjs)
import engine.webapp, engine.kernels, engine.transcribe, hashlib, json

stdlib = next(p for p in sys.path if p.endswith(".zip"))
started = set()
for module in list(sys.modules.values()):
    origin = getattr(getattr(module, "__spec__", None), "origin", None) or ""
    if origin.startswith(stdlib + "/") and origin.endswith(".py"):
        started.add(origin[len(stdlib) + 1:])

out = io.BytesIO()
with zipfile.ZipFile(stdlib) as src, zipfile.ZipFile(out, "w") as dst:
    for info in src.infolist():
        data = src.read(info)
        dst.writestr(info, data)
        if info.filename in started:
            # the file name zipimport would give the source, so tracebacks read the same
            code = compile(data, f"{stdlib}/{info.filename}", "exec", dont_inherit=True)
            pyc = bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False)
            entry = zipfile.ZipInfo(info.filename + "c", date_time=info.date_time)
            entry.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(entry, bytes(pyc))
with open("/tmp/stdlib.zip", "wb") as f:
    f.write(out.getvalue())
f"{len(started)} modules of {stdlib} compiled"
`);
fs.writeFileSync(outZip, pyodide.FS.readFile("/tmp/stdlib.zip"));
console.log(`stdlib bytecode: ${summary} -> ${outZip}`);
