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
// and a BootError (code "csp" or "server") for what would otherwise hang (checkRuntimeCanStart).

export async function bootPyodide({ indexURL, wheelURL, moreWheels = [], onStage = () => {} }) {
  onStage("runtime");
  await checkRuntimeCanStart(indexURL);
  const { loadPyodide } = await import(new URL("pyodide.mjs", indexURL).href);
  const pyodide = await loadPyodide({ indexURL });
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

// Pyodide's loader waits forever, with only a console warning, when this worker may not compile
// WebAssembly (a Content-Security-Policy without 'wasm-unsafe-eval') or when pyodide.asm.wasm
// comes with another type than application/wasm. Both are asked first, in milliseconds, and
// refused with the cause and the fix. (A HEAD the server does not answer is left to the loader.)
async function checkRuntimeCanStart(indexURL) {
  try {
    await WebAssembly.compile(EMPTY_MODULE);
  } catch (e) {
    throw new BootError("csp", `WebAssembly may not run here (${e.message}): the Content-Security-Policy ` +
      "must allow it, for the page and for phonon-web's worker.mjs as the server sends it: add " +
      "'wasm-unsafe-eval' to script-src (and to worker-src, if the policy has one)");
  }
  const url = new URL("pyodide.asm.wasm", indexURL);
  let response;
  try {
    response = await fetch(url, { method: "HEAD" });
  } catch {
    return;
  }
  if (response.status === 404) {
    throw new BootError("server", `${url.href} is missing (HTTP 404): deploy the whole folder phonon-web ` +
      "came in (pyodide/ included), keeping its layout");
  }
  const type = (response.headers.get("content-type") || "").split(";")[0].trim().toLowerCase();
  if (response.ok && type !== "application/wasm") {
    throw new BootError("server", `${url.href} is served as ${JSON.stringify(type || "no type")}, not ` +
      "application/wasm, and browsers compile WebAssembly only from that type: configure the server to " +
      "send .wasm files as application/wasm (nginx: types { application/wasm wasm; }; Apache: AddType " +
      "application/wasm .wasm)");
  }
}
