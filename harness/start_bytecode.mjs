// Bytecode for what the engine's start imports, compiled by the pinned Pyodide itself (build.py).
//
//   node harness/start_bytecode.mjs stdlib PYODIDE_DIR RUNTIME_WHEEL OUT_ZIP   (build.py pyodide)
//   node harness/start_bytecode.mjs wheel  PYODIDE_DIR SOURCE_WHEEL OUT_DIR    (build.py wheel)
//
// Every start of Python in a page compiles the modules it imports from source: the pinned
// python_stdlib.zip and the engine's wheel hold sources only. This starts Pyodide under Node,
// installs the wheel, imports what web/worker.mjs's start imports (START below) and what a model
// load imports (the model families' packages), and writes
// unchecked-hash .pyc files (PEP 552) compiled by this very Pyodide (the CPython build and
// bytecode version the page runs), beside the unchanged sources:
// - stdlib: a copy of the zip in which each stdlib module the start loaded has `name.pyc`
//   beside `name.py` (zipimport tries the .pyc first and does not check an unchecked-hash .pyc
//   against its source);
// - wheel: OUT_DIR/engine/.../__pycache__/NAME.cpython-3XX.pyc for each engine module the start
//   loaded (the import system's own cache path: the source loader takes an unchecked-hash .pyc
//   there without reading the source's time), for build.py to add to the wheel.
// Everything else still compiles from source as before, and tracebacks keep their source lines.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

// what a start imports (the engine worker's list, web/pyodide-boot.mjs)
import { ENGINE_IMPORTS } from "../web/pyodide-boot.mjs";
const START = `import ${ENGINE_IMPORTS}`;

const [mode, pyodideDir, wheel, out] = process.argv.slice(2);
if (!["stdlib", "wheel"].includes(mode) || !pyodideDir || !wheel || !out) {
  console.error("usage: node start_bytecode.mjs stdlib|wheel PYODIDE_DIR WHEEL OUT");
  process.exit(2);
}
const { loadPyodide } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: pyodideDir + path.sep });
await pyodide.loadPackage(path.resolve(wheel));
pyodide.runPython(`
${START}
import importlib, importlib.util, io, os, pkgutil, sys, zipfile
import engine
from engine.family import FAMILIES
# and what loading a model imports: each model family's package (engine/parakeet_tdt/)
for family in FAMILIES.values():
    for module in pkgutil.walk_packages(importlib.import_module(family).__path__, family + "."):
        importlib.import_module(module.name)
import importlib._bootstrap_external as bootstrap

def pyc(source: bytes, filename: str) -> bytes:
    """An unchecked-hash .pyc of source (its filename as tracebacks will name it)."""
    code = compile(source, filename, "exec", dont_inherit=True)
    return bytes(bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False))

def started_under(prefix: str) -> list:
    """The .py files under prefix that the start loaded, sorted."""
    found = set()
    for module in list(sys.modules.values()):
        origin = getattr(getattr(module, "__spec__", None), "origin", None) or ""
        if origin.startswith(prefix) and origin.endswith(".py"):
            found.add(origin)
    return sorted(found)

def stdlib_zip() -> str:
    stdlib = next(p for p in sys.path if p.endswith(".zip"))
    started = {name[len(stdlib) + 1:] for name in started_under(stdlib + "/")}
    out = io.BytesIO()
    with zipfile.ZipFile(stdlib) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, data)
            if info.filename in started:
                entry = zipfile.ZipInfo(info.filename + "c", date_time=info.date_time)
                entry.compress_type = zipfile.ZIP_DEFLATED
                dst.writestr(entry, pyc(data, f"{stdlib}/{info.filename}"))
    with open("/tmp/out.zip", "wb") as f:
        f.write(out.getvalue())
    return f"{len(started)} modules of {stdlib} compiled"

def wheel_pycs() -> str:
    site = os.path.dirname(os.path.dirname(engine.__file__))      # where the wheel was installed
    started = started_under(os.path.join(site, "engine") + "/")
    for origin in started:
        with open(origin, "rb") as f:
            data = f.read()
        target = "/tmp/out/" + os.path.relpath(importlib.util.cache_from_source(origin), site)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(pyc(data, origin))
    return f"{len(started)} engine modules compiled"
`);
const summary = pyodide.runPython(mode === "stdlib" ? "stdlib_zip()" : "wheel_pycs()");
if (mode === "stdlib") {
  fs.writeFileSync(out, pyodide.FS.readFile("/tmp/out.zip"));
} else {
  const copy = (from, to) => {
    for (const name of pyodide.FS.readdir(from)) {
      if (name === "." || name === "..") continue;
      const source = `${from}/${name}`;
      if (pyodide.FS.isDir(pyodide.FS.stat(source).mode)) {
        fs.mkdirSync(path.join(to, name), { recursive: true });
        copy(source, path.join(to, name));
      } else {
        fs.writeFileSync(path.join(to, name), pyodide.FS.readFile(source));
      }
    }
  };
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  copy("/tmp/out", out);
}
console.log(`start bytecode (${mode}): ${summary} -> ${out}`);
