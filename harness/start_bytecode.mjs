// The stdlib a page needs, and bytecode for what the engine's start imports, made by the
// pinned Pyodide itself (build.py).
//
//   node harness/start_bytecode.mjs stdlib PYODIDE_DIR RUNTIME_WHEEL OUT_ZIP [MORE_WHEEL...]   (build.py pyodide)
//   node harness/start_bytecode.mjs wheel  PYODIDE_DIR SOURCE_WHEEL OUT_DIR                   (build.py wheel)
//
// Every start of Python in a page compiles the modules it imports from source: the pinned
// python_stdlib.zip and the engine's wheel hold sources only. This starts Pyodide under Node,
// installs the wheel(s), imports what web/worker.mjs's start imports (START below) and what a
// model load imports (the model families' packages), and writes unchecked-hash .pyc files
// (PEP 552) compiled by this very Pyodide (the CPython build and bytecode version the page runs):
// - stdlib: the pinned zip cut to what the engine can import (below), each module the start
//   loaded as `name.pyc` in place of `name.py` (zipimport takes either; an unchecked-hash .pyc
//   is not checked against a source), every other module as its unchanged source (deflated:
//   the .br and .gz copies beside it are of the same zip stored, tools/precompress.py).
// - wheel: OUT_DIR/engine/.../__pycache__/NAME.cpython-3XX.pyc for each engine module the start
//   loaded (the import system's own cache path: the source loader takes an unchecked-hash .pyc
//   there without reading the source's time), for build.py to add to the wheel, whose sources
//   stay beside them.
//
// What the engine can import: modulefinder's closure of every module loaded by the start and of
// every module of the installed wheels' packages (the engine's; the tests' checks, given as
// MORE_WHEEL, so the harness pages run on the same stdlib), which follows imports inside
// functions too; plus what is imported by name at run time, which no scan sees (DYNAMIC); less
// the debuggers, test frameworks, REPL, help() and process pools that nothing the engine calls
// reaches and a browser worker could not run (NEVER). Everything else (legacy codecs, xml,
// mail servers, ...) is not shipped: 285 of its 559 modules, 4.1 MB of its 9.6 MB of sources.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

// what a start imports (the engine worker's list, web/pyodide-boot.mjs)
import { ENGINE_IMPORTS } from "../web/pyodide-boot.mjs";
const START = `import ${ENGINE_IMPORTS}`;

const [mode, pyodideDir, wheel, out, ...moreWheels] = process.argv.slice(2);
if (!["stdlib", "wheel"].includes(mode) || !pyodideDir || !wheel || !out || (mode === "wheel" && moreWheels.length)) {
  console.error("usage: node start_bytecode.mjs stdlib PYODIDE_DIR WHEEL OUT_ZIP [MORE_WHEEL...] | wheel PYODIDE_DIR WHEEL OUT_DIR");
  process.exit(2);
}
const { loadPyodide } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: pyodideDir + path.sep });
await pyodide.loadPackage([wheel, ...moreWheels].map((w) => path.resolve(w)));
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

# imported by name at run time: sysconfig's data module (the snapshot restore's unpacking asks
# sysconfig where site-packages is) and the codecs a str/bytes conversion may look up
DYNAMIC = ("_sysconfigdata_", "encodings/aliases", "encodings/ascii",
           "encodings/latin_1", "encodings/utf_", "encodings/unicode_escape",
           "encodings/raw_unicode_escape", "encodings/charmap", "encodings/idna",
           "encodings/punycode", "encodings/undefined")
# reached only by help(), pdb, doctest, unittest, the terminal REPL or ProcessPoolExecutor
NEVER = ("pdb.py", "bdb.py", "pydoc.py", "pydoc_data/", "doctest.py", "unittest/", "_pyrepl/",
         "multiprocessing/", "concurrent/futures/process.py")

def wanted_packages() -> list:
    """The packages of the installed wheels: the engine's, and the checks' when given."""
    return ["engine"] + (["checks"] if importlib.util.find_spec("checks") else [])

def importable(stdlib: str) -> set:
    """The stdlib zip's .py entries that the engine can import (see the header)."""
    import modulefinder, shutil
    roots = sorted(sys.modules)
    for package in wanted_packages():
        top = importlib.import_module(package)
        roots += [package] + [m.name for m in pkgutil.walk_packages(top.__path__, package + ".")]
    unpacked = "/tmp/stdlib-unpacked"
    with zipfile.ZipFile(stdlib) as z:
        z.extractall(unpacked)
        roots += [n[:-3].replace("/", ".") for n in z.namelist() if n.endswith(".py") and n.startswith(DYNAMIC)]
    site = os.path.dirname(os.path.dirname(engine.__file__))
    finder = modulefinder.ModuleFinder(path=[unpacked, site])
    for name in roots:
        try:
            finder.import_hook(name)
        except ImportError:               # built-in or frozen modules have no file to scan
            pass
    found = {os.path.relpath(m.__file__, unpacked) for m in finder.modules.values()
             if m.__file__ and m.__file__.startswith(unpacked + "/")}
    shutil.rmtree(unpacked)
    return {n for n in found if not n.startswith(NEVER)}

def stdlib_zip() -> str:
    stdlib = next(p for p in sys.path if p.endswith(".zip"))
    started = {name[len(stdlib) + 1:] for name in started_under(stdlib + "/")}
    keep = importable(stdlib)
    missing = sorted(started - keep)
    if missing:
        raise SystemExit(f"the start loaded stdlib modules the cut would drop: {missing}")
    with zipfile.ZipFile(stdlib) as src:
        names = [n for n in src.namelist() if not n.endswith("/")]
    # other files (py.typed, a README) where their folder keeps a module, and site-packages/
    module_folders = {n.rpartition("/")[0] for n in keep} | {"site-packages"}
    kept = {n for n in names if n in keep or (not n.endswith(".py") and n.rpartition("/")[0] in module_folders)}
    # a folder's entry only where something is kept in it: zipimport takes a bare folder for a
    # namespace package, so a cut package would import as an empty one, not fail by its name
    folders = {n[:i + 1] for n in kept for i, c in enumerate(n) if c == "/"}
    out = io.BytesIO()
    with zipfile.ZipFile(stdlib) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            name = info.filename
            if name not in kept and name not in folders:
                continue
            data = src.read(info)
            entry = zipfile.ZipInfo(name + "c" if name in started else name, date_time=info.date_time)
            entry.compress_type = zipfile.ZIP_DEFLATED if not name.endswith("/") else zipfile.ZIP_STORED
            dst.writestr(entry, pyc(data, f"{stdlib}/{name}") if name in started else data)
    with open("/tmp/out.zip", "wb") as f:
        f.write(out.getvalue())
    return f"{len(keep)} of the stdlib's modules kept, {len(started)} of them as bytecode"

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
