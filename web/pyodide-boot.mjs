// Start Pyodide (the pinned npm build, self-hosted) and install the phonon-web wheel, in a
// module worker (Pyodide 314 runs only there, and Chromium refuses to compile modules over
// 8 MB synchronously on the main thread). Shared by the site's engine worker (web/worker.mjs)
// and the test harness's worker (harness/page/worker.mjs).
//
//   const { pyodide, start } = await bootPyodide({ indexURL, wheelURL, moreWheels, onStage, snapshot });
//
// indexURL: the folder holding pyodide.mjs, pyodide.asm.{mjs,wasm}, python_stdlib.zip and
// pyodide-lock.json (absolute, ending in "/"); wheelURL: the engine wheel; moreWheels: others
// (the harness's checks wheel). Throws with the loader's own messages if a wheel does not install,
// and a BootError (code "csp" or "server") for what would otherwise hang (checkRuntimeCanStart,
// instantiationFailure).
//
// snapshot (the engine worker; web/start-snapshot.mjs keeps the bytes): null boots as always;
// {restore: bytes} starts from a memory snapshot an earlier start made, and {restore: null}
// starts the long way and makes one (start.bytes) after the engine's modules are imported and
// before any kernel library is loaded (Pyodide cannot write the memory of a runtime holding
// JavaScript objects, and loadPackage() leaves one: the wheel is unpacked by Python instead).
// A snapshot that does not start is reported (start.note) and the start goes the long way.
// start.snapshot says what happened: "restored", "made" or "none".

// What the engine worker's start imports: in the snapshot, they come back already imported;
// harness/start_bytecode.mjs compiles them (and what they import) ahead of time.
export const ENGINE_IMPORTS = "engine.worker, engine.kernels, engine.transcribe, hashlib, json";

export async function bootPyodide({ indexURL, wheelURL, moreWheels = [], onStage = () => {}, snapshot = null }) {
  if (snapshot && moreWheels.length) throw new Error("a start-up snapshot holds the engine wheel only");
  onStage("runtime");
  await checkRuntimeCanStart();
  const { loadPyodide } = await import(new URL("pyodide.mjs", indexURL).href);
  let note = null;
  if (snapshot && snapshot.restore) {
    try {
      return await restoreFromSnapshot(loadPyodide, indexURL, wheelURL, snapshot.restore, onStage);
    } catch (e) {
      if (e instanceof BootError) throw e;
      note = `the kept start-up snapshot did not start (${lastLine(e)}); started without it`;
      onStage("runtime");
    }
  }
  const pyodide = await startRuntime(loadPyodide, indexURL, snapshot ? { _makeSnapshot: true } : {});
  onStage("engine");
  if (!snapshot) {
    await installWheels(pyodide, [wheelURL, ...moreWheels]);
    return { pyodide, start: { snapshot: "none", note } };
  }
  await unpackEngine(pyodide, wheelURL);
  try {
    pyodide.runPython(`import ${ENGINE_IMPORTS}`);
    const bytes = pyodide.makeMemorySnapshot();
    return { pyodide, start: { snapshot: "made", bytes, note } };
  } catch (e) {
    return { pyodide, start: { snapshot: "none", note: `no start-up snapshot could be made (${lastLine(e)})` } };
  }
}

async function restoreFromSnapshot(loadPyodide, indexURL, wheelURL, bytes, onStage) {
  const pyodide = await startRuntime(loadPyodide, indexURL, { _loadSnapshot: bytes });
  onStage("engine");
  // The snapshot holds memory, not files: the engine's files (its kernel libraries among them)
  // go back where the snapshot's imports found them. And a generator seeded before the snapshot
  // would repeat its numbers on every visit: reseeded from the browser's entropy.
  await unpackEngine(pyodide, wheelURL);
  pyodide.runPython("import random\nrandom.seed()");
  return { pyodide, start: { snapshot: "restored", note: null } };
}

async function startRuntime(loadPyodide, indexURL, options) {
  const failure = instantiationFailure(new URL("pyodide.asm.wasm", indexURL).href);
  try {
    return await Promise.race([loadPyodide({ indexURL, ...options }), failure.promise]);
  } finally {
    failure.restore();
  }
}

async function installWheels(pyodide, urls) {
  const errors = [];
  await pyodide.loadPackage(urls, {
    messageCallback: () => {},                  // "Loading phonon_web": not for the console
    errorCallback: (message) => errors.push(message),
  });
  try {
    pyodide.pyimport("engine");
  } catch (e) {
    throw new Error(`the engine wheel did not install (${urls[0]}): ${errors.join("; ") || e.message}`);
  }
}

// What the host sent instead of the wheel. A single-page app's fallback answers a file it lacks
// with index.html and HTTP 200: name that, not the zip reader's "not a zip file".
function notAWheel(url, response, bytes) {
  const type = response.headers.get("content-type") || "no content type";
  const head = new TextDecoder().decode(bytes.subarray(0, 256)).trimStart().toLowerCase();
  if (type.includes("html") || head.startsWith("<!doctype html") || head.startsWith("<html")) {
    return `the engine wheel did not install (${url}): the host answered with an HTML page (${type}), not the ` +
           "wheel - a single-page-app fallback serves index.html for files it lacks: deploy every file of the " +
           "package's folder, wheel/ included";
  }
  return `the engine wheel did not install (${url}): the host answered with ${bytes.length} bytes (${type}) that are not a wheel (a zip file)`;
}

// The wheel's files into site-packages, by Python's zipfile (what installing a pure wheel is).
async function unpackEngine(pyodide, wheelURL) {
  let response;
  try {
    response = await fetch(wheelURL);
  } catch (e) {
    throw new Error(`the engine wheel did not install (${wheelURL}): ${e.message}`);
  }
  if (!response.ok) throw new Error(`the engine wheel did not install (${wheelURL}): HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (bytes[0] !== 0x50 || bytes[1] !== 0x4b) throw new Error(notAWheel(wheelURL, response, bytes));     // "PK": a zip
  pyodide.FS.writeFile("/tmp/phonon-engine.whl", bytes);
  try {
    pyodide.runPython(`import os, sysconfig, zipfile
with zipfile.ZipFile("/tmp/phonon-engine.whl") as wheel:
    wheel.extractall(sysconfig.get_path("purelib"))
os.remove("/tmp/phonon-engine.whl")
import engine`);
  } catch (e) {
    throw new Error(`the engine wheel did not install (${wheelURL}): ${lastLine(e)}`);
  }
}

const lastLine = (e) => String((e && e.message) || e).trim().split("\n").pop();

export class BootError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

// The smallest WebAssembly module there is: the magic number and version 1.
const EMPTY_MODULE = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);

const CSP_FIX = "the Content-Security-Policy must allow it, for the page and for phonon-web's worker.mjs as " +
  "the server sends it: add 'wasm-unsafe-eval' to script-src (and to worker-src, if the policy has one)";

// A worker that may not compile WebAssembly (a Content-Security-Policy without
// 'wasm-unsafe-eval') is told so before anything is downloaded.
async function checkRuntimeCanStart() {
  try {
    await WebAssembly.compile(EMPTY_MODULE);
  } catch (e) {
    throw new BootError("csp", `WebAssembly may not run here (${e.message}): ${CSP_FIX}`);
  }
}

// Pyodide 314's loader catches a failed instantiation of pyodide.asm.wasm, warns twice on the
// console ("wasm instantiation failed!", then the error) and never settles: load() would wait
// forever at "runtime". This listens for that warning during loadPyodide and rejects with the
// error, named: a .wasm served with another type than application/wasm (or not there at all)
// is "server", a policy that forbids WebAssembly "csp". No request is added.
function instantiationFailure(wasmURL) {
  const warn = console.warn;
  let failing = false, reject;
  const promise = new Promise((_, r) => { reject = r; });
  console.warn = (...args) => {
    warn.apply(console, args);
    if (args[0] === "wasm instantiation failed!") failing = true;
    else if (failing) reject(namedFailure(args[0], wasmURL));
  };
  return { promise, restore: () => { console.warn = warn; } };
}

function namedFailure(error, wasmURL) {
  const text = String((error && error.message) || error).replace(/\.$/, "");
  if (/MIME/i.test(text)) {
    return new BootError("server", `${wasmURL} could not be compiled: ${text}. The server must send it, and ` +
      "every .wasm file, as application/wasm (nginx: types { application/wasm wasm; }; Apache: AddType " +
      "application/wasm .wasm), and the file must be there: deploy the whole folder phonon-web came in");
  }
  if (/Content.Security|unsafe-eval|wasm-eval/i.test(text)) {
    return new BootError("csp", `WebAssembly may not run here (${text}): ${CSP_FIX}`);
  }
  return new Error(`${wasmURL} could not be instantiated: ${text}`);
}
