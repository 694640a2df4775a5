// The engine worker: Pyodide + the phonon-web engine, the model, live streams and files.
// Everything slow happens here; the page only posts messages and never waits on a decode.
//
// It answers the page's messages (TO_WORKER in messages.mjs, answered with TO_PAGE), reads a
// stream's audio from its port or capture ring (FEED) and tells the feeder what it may drop.
//
// The worker is six objects, each with one job and its own state, each in its file of worker/
// and calling its namesake in engine/worker/: Runtime (Pyodide and the engine's Python side),
// ModelCache (the site's model and opened files: download, check, Cache Storage), KernelWorkers
// (the pool that shares the encoder's work), Gpu (the WebGPU device and the calls that may await
// it), Stream (one open stream) and FileJob (one file being transcribed); Host, here, ties them
// together and answers the page's messages.
import { TO_PAGE, TO_WORKER } from "./messages.mjs";
import { sha256Hex } from "./start-snapshot.mjs";
import { Fatal, guard, lastLine, post } from "./worker/common.mjs";
import { FileJob } from "./worker/file-job.mjs";
import { Gpu } from "./worker/gpu.mjs";
import { KernelWorkers } from "./worker/kernel-workers.mjs";
import { ModelCache } from "./worker/model-cache.mjs";
import { Runtime } from "./worker/runtime.mjs";
import { Stream } from "./worker/stream.mjs";

// Host: boot, the engine on a model (with kernel workers or the GPU), and who uses it now

class Host {
  constructor() {
    this.runtime = new Runtime();
    this.models = new ModelCache(this.runtime);
    this.kernels = new KernelWorkers(this.runtime);
    this.gpu = new Gpu(this.runtime);
    this.debug = false;
    this.tier = null;                         // the tier asked for
    this.stream = null;                       // the open Stream
    this.file = null;                         // the FileJob running
    this.captured = [];                       // (debug) every block the last stream fed, in order
  }

  get app() { return this.runtime.app; }

  async init({ manifest, tier, debug, localModel, modelBytes, threads = 1, threadsForced = false,
               threadsNote = null, gpu = null, snapshot = true }) {
    this.debug = !!debug;
    this.gpu.wanted = gpu;
    this.kernels.configure({ threads, forced: threadsForced, note: threadsNote });
    const base = new URL("./", self.location.href);
    const t = { start: performance.now() };
    if (gpu && gpu.mode === "prefer") {          // before the runtime starts: a snapshot unless the GPU is tried
      // (the digest of bytes given to load() only if an adapter is worth a verdict: hashing a
      // full-size model takes a second or two)
      const digest = () => (modelBytes ? sha256Hex(modelBytes.bytes).catch(() => null)
        : localModel ? localModel.sha256 : manifest.model && manifest.model.sha256);
      await this.gpu.probe(tier, digest, manifest.build);
      gpu = this.gpu.wanted;
    }
    // WebGPU from Python fails in a runtime started for or from a snapshot ("Illegal invocation"
    // making the device, Chromium 156): a load that may use the GPU starts the long way.
    const start = await this.runtime.boot(manifest, base,
                                          (stage) => { t[stage] = performance.now(); post({ kind: TO_PAGE.STAGE, stage }); },
                                          snapshot && !gpu);
    if (snapshot && gpu) start.note = "no start-up snapshot with WebGPU: its device cannot be made in a snapshot's runtime";
    t.model = performance.now();
    post({ kind: TO_PAGE.STAGE, stage: "model" });
    this.tier = tier;
    const local = localModel ? await this.openKeptLocalModel(localModel, tier) : null;
    let model = null, usedTier = local && local.tier, localNote = local && local.note;
    if (modelBytes) {                           // the API's Recognizer.load({model: bytes})
      t.compile = performance.now();
      post({ kind: TO_PAGE.STAGE, stage: "compile" });
      usedTier = await this.loadOrSay(this.runtime.bytes(new Uint8Array(modelBytes.bytes)), tier,
                                      modelBytes.bytes.byteLength, null, "model-file",
                                      (e) => `${modelBytes.name} is not a model this engine can use: ${lastLine(e)}`);
    }
    if (!usedTier) {
      model = await this.models.site(manifest.model, base);
      t.compile = performance.now();
      post({ kind: TO_PAGE.STAGE, stage: "compile" });
      usedTier = await this.loadOrSay(model.buffer, tier, manifest.model.size,
                                      (manifest.model.gpu_self_test || {}).digest, "engine",
                                      (e) => `The engine could not open the model with the ${tier} kernels: ${lastLine(e)}`);
    }
    t.compile = t.compile || performance.now();
    t.ready = performance.now();
    post({
      kind: TO_PAGE.READY, tier: usedTier, backend: this.app.model.backend, tierNote: this.gpu.note, adapter: this.gpu.adapter, threads: this.app.model.threads(),
      threadsNote: this.kernels.note, model: JSON.parse(this.app.model.info()),
      modelSource: modelBytes ? "bytes" : model ? model.source : "local-cache",
      cacheNote: model ? model.cacheNote : null, localModel: local && local.info, localNote,
      ...this.memory(), start,
      timings: { runtime: t.engine - t.start, engine: t.model - t.engine, model: t.compile - t.model,
                 compile: t.ready - t.compile, total: t.ready - t.start },
    });
  }

  // load() on a Python buffer, destroyed after (app.model keeps the Python object); a failure
  // that is not already fatal becomes Fatal(code, message(e)).
  async loadOrSay(buffer, tier, modelBytes, gpuDigest, code, message) {
    try {
      return await this.load(buffer, tier, "load", modelBytes, gpuDigest);
    } catch (e) {
      if (e instanceof Fatal) throw e;
      throw new Fatal(code, message(e));
    } finally {
      buffer.destroy();
    }
  }

  // An engine on `buffer` ("load", or "switch": the engine in use stays if this one fails), on
  // the GPU or with kernel workers when asked for and possible; returns what app.model.load /
  // app.model.switch return.
  async load(buffer, tier, how, modelBytes, gpuDigest = null) {
    if (this.gpu.wanted && how === "load") {
      const onGpu = await this.gpu.load(buffer, tier, gpuDigest, this.kernels.expected(modelBytes));
      if (onGpu) {
        this.kernels.close();
        this.gpu.restore = () => this.workersAfterGpu(tier, modelBytes);
        return onGpu;
      }                                       // else preferred but refused: the wasm engine below
    }
    const app = this.app.model;
    if (this.gpu.active) return this.gpu.call(app[how], buffer, tier);   // a switch: the new model on the device too
    const next = await this.kernels.start(tier, modelBytes);
    // (a JS null would reach Python as JsNull, not None: no pool, no argument)
    const open = (workers) => (workers ? app[how](buffer, tier, workers) : app[how](buffer, tier));
    let out;
    try {
      out = open(next);
    } catch (e) {
      if (next) next.close();
      throw e;
    }
    if (next) {
      try {
        await next.serve();
      } catch (e) {                            // a kernel worker could not take its weights: one worker
        next.close();
        this.kernels.note = `one worker: the kernel workers did not start (${lastLine(e)})`;
        out = open(null);
        this.kernels.close();
        return out;
      }
    }
    this.kernels.adopt(next);
    return out;
  }

  // After the GPU was lost: the CPU engine with the kernel workers it would have had without
  // the GPU, once no stream or file is open (false: not yet). The page is told the threads.
  async workersAfterGpu(tier, modelBytes) {
    if (this.stream || this.file) return false;
    const next = await this.kernels.start(tier, modelBytes);
    if (!next) return true;                  // one worker after all (kernels.note says why)
    if (!this.app.model.use_workers(next)) {
      next.close();
      return false;
    }
    try {
      await next.serve();
    } catch (e) {
      next.close();
      this.app.model.use_workers();
      this.kernels.note = `one worker: the kernel workers did not start (${lastLine(e)})`;
      return true;
    }
    this.kernels.adopt(next);
    post({ kind: TO_PAGE.WORKERS_BACK, threads: this.app.model.threads(), backend: this.app.model.backend,
           threadsNote: this.kernels.note });
    return true;
  }

  // A .gguf the user opened: the engine's own loader validates it; only if it loads does the
  // app switch to it (the engine in use stays until then), and only then is it kept.
  async openModelFile({ name, bytes }) {
    const data = new Uint8Array(bytes);
    const buffer = this.runtime.bytes(data);
    let info;
    try {
      info = JSON.parse(await this.load(buffer, this.tier, "switch", data.length));
    } catch (e) {
      post({ kind: TO_PAGE.ERROR, code: "model-file",
             message: `${name} is not a model this engine can use: ${lastLine(e)}. The previous model is still in use.` });
      return;
    } finally {
      buffer.destroy();                        // app.model keeps the Python object
    }
    const sha256 = await this.runtime.sha256(data);
    const cacheNote = await this.models.keepLocal(name, data, sha256);
    post({ kind: TO_PAGE.MODEL_SWITCHED, file: name, size: data.length, sha256, cacheNote, threadsNote: this.kernels.note, ...info });
  }

  // The file the user opened on an earlier visit: {tier, info}, or {note} saying why not.
  async openKeptLocalModel({ sha256, name }, tier) {
    try {
      const kept = await this.models.local({ sha256, name });
      if (!kept.data) return kept;
      const data = kept.data, buffer = this.runtime.bytes(data);
      try {
        const usedTier = await this.load(buffer, tier, "load", data.length);
        return { tier: usedTier, info: { file: name, size: data.length, sha256, ...JSON.parse(this.app.model.info()) } };
      } finally {
        buffer.destroy();
      }
    } catch (e) {
      return { note: `the model file ${name} you opened before could not be used (${lastLine(e)})` };
    }
  }

  // After each decode: a kernel worker or the GPU lost meanwhile is said once.
  checkLost() {
    this.kernels.checkLost();
    this.gpu.checkLost();
  }

  // This worker's wasm heap and the kernel workers' wasm memory together (0 without kernel
  // workers), as the API reports them (r.heapBytes, r.kernelHeapBytes)
  memory() { return { heapBytes: this.runtime.heapBytes(), kernelHeapBytes: this.kernels.heapBytes }; }

  startStream(data) {
    if (this.stream) throw new Fatal("state", "a stream is already open");
    this.captured = [];
    this.stream = new Stream(this, data);
  }

  // While a file runs, this worker still reads messages (between steps): anything that would
  // use the engine meanwhile is refused, not interleaved.
  refuseWhileFileRuns(what) {
    if (!this.file) return false;
    post({ kind: TO_PAGE.ERROR, code: "busy", message: `Cannot ${what} while ${this.file.name} is being transcribed: cancel it first.` });
    return true;
  }

  capturedSamples() {
    const n = this.captured.reduce((s, c) => s + c.length, 0);
    const all = new Float32Array(n);
    let at = 0;
    for (const c of this.captured) { all.set(c, at); at += c.length; }
    return all;
  }
}

// ------------------------------------------------------------------------------------------
// messages

// (tests) whether this worker's Content-Security-Policy forbids eval, as the site's should
function evalBlocked() {
  try {
    new Function("return 1")();    // eslint-disable-line no-new-func
    return false;
  } catch {
    return true;
  }
}

const host = new Host();

self.onmessage = ({ data }) => guard(async () => {
  switch (data.kind) {
    case TO_WORKER.INIT: return host.init(data);
    case TO_WORKER.PING: return post({ kind: TO_PAGE.PONG, ...(host.runtime.started ? host.memory() : { heapBytes: null }) });
    case TO_WORKER.START: return host.refuseWhileFileRuns("start listening") || host.startStream(data);
    case TO_WORKER.FILE: return host.refuseWhileFileRuns(`transcribe ${data.name}`) || FileJob.run(host, data);
    case TO_WORKER.OPEN_MODEL: return host.refuseWhileFileRuns("switch models") || host.openModelFile(data);
    case TO_WORKER.CANCEL_FILE: if (host.file) host.file.cancelled = true; return;
    case TO_WORKER.CANCEL_STREAM: if (host.stream) host.stream.cancel(); return;
    case TO_WORKER.KILL_KERNEL_WORKER: if (host.debug && host.kernels.pool) host.kernels.pool.kill(data.slot || 0); return;   // tests: a crash
    case TO_WORKER.LOSE_GPU: if (host.debug && host.gpu.active) return host.gpu.call(host.app.gpu.lose, data.afterReads || 0);  // tests: device loss
    case TO_WORKER.DESTROY_GPU: if (host.debug && host.gpu.active) host.app.gpu.device().destroy(); return;  // tests: lost while idle
    case TO_WORKER.HANG_GPU: if (host.debug && host.gpu.active) return host.gpu.call(host.app.gpu.hang, data.afterReads || 0, data.limitMs || 2000);  // tests: a hung read
    case TO_WORKER.CSP_PROBE: if (host.debug) post({ kind: TO_PAGE.CSP_PROBE, evalBlocked: evalBlocked() }); return;   // tests: the policy holds
    case TO_WORKER.PLACE_TOKENS_WITH: {     // (debug, bench --live) streams take their tokens from this model's decodes
      if (!host.debug) return;
      const buffer = host.runtime.bytes(new Uint8Array(data.bytes));
      try { host.app.model.place_tokens_with(buffer, data.tier || "scalar"); } finally { buffer.destroy(); }
      return post({ kind: TO_PAGE.TOKENS_PLACED });
    }
    case TO_WORKER.CAPTURED: {
      const all = host.capturedSamples();
      return post({ kind: TO_PAGE.CAPTURED, samples: all }, [all.buffer]);
    }
    case TO_WORKER.CRASH: {                 // (debug) hand the samples fed so far over, then stop answering, as if dead
      if (!host.debug) return;
      const all = host.capturedSamples();
      post({ kind: TO_PAGE.CAPTURED_BEFORE_CRASH, samples: all }, [all.buffer]);
      return self.close();
    }
    default: throw new Error(`unknown request ${data.kind}`);
  }
});
