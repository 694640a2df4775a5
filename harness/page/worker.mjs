// Harness worker: Pyodide (pinned npm build, served under /pyodide/) with the phonon-web runtime
// and checks wheels (under /wheel/), started by the site's own boot module (/web/), running
// checks.jobs jobs by name; and ONNX Runtime Web (under /ort/) for the peer benchmark.
import { bootPyodide } from "/web/pyodide-boot.mjs";
import { KernelPool } from "/web/kernel-pool.mjs";

const params = new URL(self.location.href).searchParams;
let pyodide, jobs;

async function start() {
  const [wheel, ...more] = (await (await fetch("/wheel/name.txt")).text()).trim().split("\n");
  const url = (name) => new URL("/wheel/" + name, self.location.href).href;
  ({ pyodide } = await bootPyodide({ indexURL: new URL("/pyodide/", self.location.href).href,
                                     wheelURL: url(wheel), moreWheels: more.map(url) }));
  jobs = pyodide.pyimport("checks.jobs");
  postMessage({ kind: "ready" });
}

// Kernel workers for the engine: a job awaits js.makeKernelPool(tier, n, path of
// the tier's side module in Pyodide's file system), passes the pool to Engine(workers=...),
// then awaits pool.serve() (checks/jobs.py engine_with_workers).
self.makeKernelPool = (tier, workers, modulePath) => KernelPool.forPyodide({
  pyodide, tier, workers, modulePath, workerURL: new URL("/web/kernel-worker.mjs", self.location.href) });

// ORT Web MatMulInteger benchmark: spec = {model: url, N, K, O, seconds}.
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
  // Same timing rule as checks/kernel_bench.py: batches of >= 20 ms, fastest batch counts.
  // One warm-up call, then the batch doubled until it takes 20 ms: the warm-up call alone can
  // be many times slower than the rest (a small shape's batch would then last less than the
  // clock's 100 us step and time as 0).
  await session.run(feeds);
  let t, reps = 1;
  for (;;) {
    t = performance.now();
    for (let i = 0; i < reps; i++) await session.run(feeds);
    if (performance.now() - t >= 20) break;
    reps *= 2;
  }
  let best = Infinity, spent = 0, batches = 0;
  while (spent < spec.seconds * 1000 || batches < 2) {
    t = performance.now();
    for (let i = 0; i < reps; i++) await session.run(feeds);
    const dt = performance.now() - t;
    best = Math.min(best, dt / reps);
    spent += dt;
    batches++;
  }
  await session.release();
  return JSON.stringify({ seconds_per_run: best / 1000, batches, reps });
}

self.onmessage = async ({ data }) => {
  try {
    let result;
    if (data.kind === "job") result = await jobs.run(data.job, data.args);
    else if (data.kind === "ort") result = await runOrt(data.spec);
    else throw new Error("unknown request " + data.kind);
    postMessage({ id: data.id, result: String(result) });
  } catch (e) {
    postMessage({ id: data.id, error: describe(e) });
  }
};

// The message and the stack (JavaScriptCore's and SpiderMonkey's stacks leave the message out).
function describe(e) {
  const stack = String(e && e.stack || "");
  return stack.includes(String(e && e.message)) ? stack : `${e}\n${stack}`;
}

start().catch((e) => postMessage({ kind: "fatal", error: describe(e) }));
