// Harness worker: Pyodide (pinned npm build, served under /pyodide/) with the phonon-web wheel
// (under /wheel/), and ONNX Runtime Web (under /ort/) for the peer benchmark.
import { loadPyodide } from "/pyodide/pyodide.mjs";

const params = new URL(self.location.href).searchParams;
let pyodide;

async function start() {
  const wheel = await (await fetch("/wheel/name.txt")).text();
  pyodide = await loadPyodide({ indexURL: new URL("/pyodide/", self.location.href).href });
  await pyodide.loadPackage(new URL("/wheel/" + wheel.trim(), self.location.href).href);
  postMessage({ kind: "ready" });
}

// ORT Web MatMulInteger benchmark: spec = {model: url, N, K, O, warmup, seconds}.
let ort;
async function runOrt(spec) {
  if (!ort) {
    ort = await import("/ort/ort.wasm.min.mjs");
    ort.env.wasm.numThreads = 1;
    ort.env.wasm.simd = true;
    ort.env.wasm.wasmPaths = new URL("/ort/", self.location.href).href;
  }
  const session = await ort.InferenceSession.create(spec.model, { executionProviders: ["wasm"] });
  const a = new Uint8Array(spec.N * spec.K);
  for (let i = 0; i < a.length; i++) a[i] = (i * 2654435761) >>> 24;
  const feeds = { A: new ort.Tensor("uint8", a, [spec.N, spec.K]) };
  for (let i = 0; i < spec.warmup; i++) await session.run(feeds);
  let runs = 0;
  const t0 = performance.now();
  let t1 = t0;
  while (t1 - t0 < spec.seconds * 1000 || runs < 5) {
    await session.run(feeds);
    runs++;
    t1 = performance.now();
  }
  await session.release();
  return JSON.stringify({ seconds_per_run: (t1 - t0) / 1000 / runs, runs });
}

self.onmessage = async ({ data }) => {
  try {
    let result;
    if (data.kind === "python") result = await pyodide.runPythonAsync(data.code);
    else if (data.kind === "ort") result = await runOrt(data.spec);
    else throw new Error("unknown request " + data.kind);
    postMessage({ id: data.id, result: String(result) });
  } catch (e) {
    postMessage({ id: data.id, error: String(e && e.stack || e) });
  }
};

start().catch((e) => postMessage({ kind: "fatal", error: String(e && e.stack || e) }));
