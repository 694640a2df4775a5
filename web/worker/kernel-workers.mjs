// The engine worker's KernelWorkers (web/worker.mjs): the pool that shares the encoder's work.
import { KernelPool } from "../kernel-pool.mjs";
import { TO_PAGE } from "../messages.mjs";
import { lastLine, post } from "./common.mjs";

// KernelWorkers: the encoder's linears and attention heads split across this worker and
// threads - 1 kernel workers (web/kernel-pool.mjs), bit for bit what one worker computes

// Below this size a model's layers are too small to split: the crossings cost more than the
// second core gives (the default model, 2.7 MB, is 0.82x with two workers on 10 s in Chromium,
// BENCHMARKS.md). ?threads=N still forces a count.
const SPLIT_MIN_BYTES = 32 << 20;

export class KernelWorkers {
  constructor(runtime) {
    this.runtime = runtime;
    this.pool = null;                         // the engine's kernel workers, if any
    this.wanted = 1;                          // workers asked for (?threads=N forces them)
    this.forced = false;
    this.note = null;                         // why fewer run, if they do
    this.noteFromPage = null;
    this.lostReported = false;
  }

  configure({ threads, forced, note }) {
    this.wanted = threads;
    this.forced = forced;
    this.note = this.noteFromPage = note;
  }

  // Why one worker runs an engine of `modelBytes` (a note, or null when the count asked for is
  // one and the page gave no note), or undefined: a pool may start. (start and expected.)
  whyOneWorker(modelBytes) {
    if (this.wanted <= 1) return this.noteFromPage || null;
    if (!this.forced && modelBytes < SPLIT_MIN_BYTES) {
      return "one worker: this model is small enough that splitting it across workers would cost more than it saves";
    }
    if (this.noteFromPage) return this.noteFromPage;          // the page knows why memory cannot be shared
    if (!self.crossOriginIsolated || typeof SharedArrayBuffer === "undefined") {
      return self.crossOriginIsolated
        ? "one worker: this browser offers no SharedArrayBuffer, even to this cross-origin-isolated page, so workers cannot share memory"
        : "one worker: this page is not cross-origin isolated, so it cannot share memory between workers";
    }
    return undefined;
  }

  // How many workers would share the encoder of a model of `modelBytes`, without starting them:
  // the GPU's timed check compares with the CPU at this count.
  expected(modelBytes) { return this.whyOneWorker(modelBytes) === undefined ? this.wanted : 1; }

  // A new pool for an engine about to load, or null (one worker; this.note says why).
  async start(tier, modelBytes) {
    const why = this.whyOneWorker(modelBytes);
    this.note = why === undefined ? this.noteFromPage : why;
    if (why !== undefined) return null;
    const pyodide = this.runtime.pyodide;
    try {
      return await KernelPool.forPyodide({ pyodide, tier, workers: this.wanted - 1,
                                           modulePath: pyodide.pyimport("engine.kernels").wasm_module_path(tier),
                                           workerURL: new URL("kernel-worker.mjs", self.location.href) });
    } catch (e) {
      this.note = `one worker: the kernel workers did not start (${lastLine(e)})`;
      return null;
    }
  }

  // The pool the engine now runs with (null: none); the one before is closed.
  adopt(next) {
    if (this.pool && this.pool !== next) this.pool.close();
    this.pool = next;
    this.lostReported = false;
  }

  close() { this.adopt(null); }

  // A kernel worker that died mid-decode: the engine finished that decode alone and goes on
  // with one worker (engine/executors/workers.py KernelWorkers.settle); the page is told once.
  checkLost() {
    if (!this.pool || this.lostReported) return;
    const lost = this.runtime.app.model.workers_lost();
    if (lost) {
      this.lostReported = true;
      post({ kind: TO_PAGE.WORKERS_LOST, message: lost, threads: this.runtime.app.model.threads() });
    }
  }

  get heapBytes() { return this.pool ? this.pool.heapBytes : 0; }
}

// ------------------------------------------------------------------------------------------
