// Start Pyodide (the pinned npm build, self-hosted) and install the phonon-web wheel, in a
// module worker (Pyodide 314 runs only there, and Chromium refuses to compile modules over
// 8 MB synchronously on the main thread). Shared by the site's engine worker (web/worker.mjs)
// and the test harness's worker (harness/page/worker.mjs).
//
//   const pyodide = await bootPyodide({ indexURL, wheelURL, moreWheels, onStage });
//
// indexURL: the folder holding pyodide.mjs, pyodide.asm.{mjs,wasm}, python_stdlib.zip and
// pyodide-lock.json (absolute, ending in "/"); wheelURL: the engine wheel; moreWheels: others
// (the harness's checks wheel). Throws with the loader's own messages if a wheel does not install,
// and a BootError (code "csp" or "server") for what would otherwise hang (checkRuntimeCanStart,
// instantiationFailure).

export async function bootPyodide({ indexURL, wheelURL, moreWheels = [], onStage = () => {} }) {
  onStage("runtime");
  await checkRuntimeCanStart();
  const { loadPyodide } = await import(new URL("pyodide.mjs", indexURL).href);
  const failure = instantiationFailure(new URL("pyodide.asm.wasm", indexURL).href);
  let pyodide;
  try {
    pyodide = await Promise.race([loadPyodide({ indexURL }), failure.promise]);
  } finally {
    failure.restore();
  }
  onStage("engine");
  const errors = [];
  await pyodide.loadPackage([wheelURL, ...moreWheels], {
    messageCallback: () => {},                  // "Loading phonon_web": not for the console
    errorCallback: (message) => errors.push(message),
  });
  try {
    pyodide.pyimport("engine");
  } catch (e) {
    throw new Error(`the engine wheel did not install (${wheelURL}): ${errors.join("; ") || e.message}`);
  }
  return pyodide;
}

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
