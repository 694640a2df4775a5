// Start Pyodide (the pinned npm build, self-hosted) and install the phonon-web wheel, in a
// module worker (Pyodide 314 runs only there, and Chromium refuses to compile modules over
// 8 MB synchronously on the main thread). Shared by the site's engine worker (web/worker.mjs)
// and the test harness's worker (harness/page/worker.mjs).
//
//   const pyodide = await bootPyodide({ indexURL, wheelURL, moreWheels, onStage });
//
// indexURL: the folder holding pyodide.mjs, pyodide.asm.{mjs,wasm}, python_stdlib.zip and
// pyodide-lock.json (absolute, ending in "/"); wheelURL: the engine wheel; moreWheels: others
// (the harness's checks wheel). Throws with the loader's own messages if a wheel does not install.

export async function bootPyodide({ indexURL, wheelURL, moreWheels = [], onStage = () => {} }) {
  onStage("runtime");
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
