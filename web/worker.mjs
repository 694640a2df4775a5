// The engine worker: Pyodide + the phonon-web engine, the model, live streams and files.
// Everything slow happens here; the page only posts messages and never waits on a decode.
//
// It answers the page's messages (TO_WORKER in messages.mjs, answered with TO_PAGE), reads a
// stream's audio from its port or capture ring (FEED) and tells the feeder what it may drop.
//
// The worker is six objects, each with one job and its own state: Runtime (Pyodide and the
// engine's Python side), ModelCache (the site's model and opened files: download, check,
// Cache Storage), KernelWorkers (the pool that shares the encoder's work), Gpu (the WebGPU
// device and the calls that may await it), Stream (one open stream) and FileJob (one file
// being transcribed); Host ties them together and answers the page's messages.
import { BootError, bootPyodide } from "./pyodide-boot.mjs";
import { StartSnapshots, sha256Hex } from "./start-snapshot.mjs";
import { KernelPool } from "./kernel-pool.mjs";
import { FEED, TO_PAGE, TO_WORKER, openRing, ringDrain, ringDropped } from "./messages.mjs";

const MODEL_CACHE = "phonon-web-model";
const TICK_MS = 150;                        // partial() cadence while listening (wall time)
const STEP_BUDGET_MS = 250;                 // while behind: decodes per step until this much wall time,
                                            // then messages (audio, pings, cancel) are read

const post = (message, transfer = []) => self.postMessage(message, transfer);

class Fatal extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

function lastLine(e) {
  const text = String(e && e.message || e).trim().split("\n");
  return text[text.length - 1];
}

// The first of Pyodide's files and the wheel (manifest.files) that the host does not serve, as
// "<url> answered HTTP <status> ...", or null.
async function missingRuntimeFile(manifest, base) {
  const names = Object.keys(manifest.files || {}).filter((rel) => rel.startsWith(manifest.pyodide.path) || rel === manifest.wheel);
  for (const rel of names) {
    const url = new URL(rel, base).href;
    try {
      const response = await fetch(url, { method: "HEAD", cache: "no-store" });
      if (!response.ok) {
        return `${url} answered HTTP ${response.status}: the host lacks a runtime file (serve every file of the package's folder; manifest.json lists them)`;
      }
    } catch (e) {
      return `${url} could not be fetched (${e.message})`;
    }
  }
  return null;
}

// ------------------------------------------------------------------------------------------
// Runtime: Pyodide, the engine wheel, and the Python side of this worker (engine/worker/)

class Runtime {
  constructor() {
    this.pyodide = null;
    this.module = null;                       // the module engine.worker
    this.app = null;                          // its WebWorker: .model, .gpu, .stream, .file, each job's Python side
  }

  // -> {snapshot: "restored" | "made" | "none", note}: how Python started (the load details).
  // With snapshots on, a start from this build's kept snapshot, else the long way with one made
  // and kept for the next visit (web/start-snapshot.mjs; kept after this start, not awaited).
  async boot(manifest, base, onStage, useSnapshots) {
    const snapshots = useSnapshots ? new StartSnapshots(manifest.build) : null;
    const kept = snapshots ? await snapshots.find() : { bytes: null, note: null };
    let start;
    try {
      ({ pyodide: this.pyodide, start } = await bootPyodide({
        indexURL: new URL(manifest.pyodide.path, base).href,
        wheelURL: new URL(manifest.wheel, base).href,
        onStage,
        snapshot: snapshots && { restore: kept.bytes },
      }));
    } catch (e) {
      if (e instanceof BootError) throw new Fatal(e.code, `The speech engine could not start: ${e.message}`);
      // Pyodide reports a missing stdlib as "exit(1)": the host's answer for each file says more
      const missing = await missingRuntimeFile(manifest, base);
      throw new Fatal("boot", `The speech engine could not start: ${missing || lastLine(e)}`);
    }
    this.module = this.pyodide.pyimport("engine.worker");
    this.app = this.module.WebWorker();
    if (start.snapshot === "made") {                 // kept while the model loads: not awaited
      snapshots.keep(start.bytes).then((why) => { if (why) console.warn(`phonon-web: ${why}`); });
    }
    return { snapshot: start.snapshot, note: [kept.note, start.note].filter(Boolean).join("; ") || null };
  }

  get started() { return this.pyodide !== null; }

  // A Python bytearray of n bytes (the engine reads its tensors from it in place).
  buffer(n) { return this.module.new_buffer(n); }

  // `data` copied into a new Python bytearray.
  bytes(data) {
    const buffer = this.buffer(data.length);
    const view = buffer.getBuffer("u8");
    view.data.set(data);
    view.release();
    return buffer;
  }

  // The sha256 of `data` (hex). No SubtleCrypto outside a secure context: hashlib then, on
  // `pyBuffer` in place when the bytes are already in the Python heap.
  async sha256(data, pyBuffer = null) {
    if (self.crypto && crypto.subtle) return sha256Hex(data);
    const hashlib = this.pyodide.pyimport("hashlib");
    return hashlib.sha256(pyBuffer || this.pyodide.toPy(data)).hexdigest();
  }

  heapBytes() {
    try { return this.pyodide._module.HEAPU8.length; } catch { return null; }
  }
}

// ------------------------------------------------------------------------------------------
// ModelCache: the site's model from Cache Storage, else downloaded once (XMLHttpRequest with a
// Blob response: byte progress, and the bytes stay in the browser's blob store, which pages
// large blobs to disk, instead of a second full copy in this worker's heap), checked against
// the manifest's size and sha256 in the Pyodide heap, and only then cached for the next visit.
// Into the heap it goes in 8 MiB slices, into a bytearray allocated once at the manifest's
// size: the one full copy the engine reads its tensors from. Files the user opened are kept too
// (one at a time).
//
// (A streamed fetch() body would do the same, but Chromium then intermittently reports the
// finished request as cancelled, net::ERR_ABORTED, in about 1 load of 7 here.)
//
// Cache Storage keys name the digest, not the URL: the same model from any address is found
// again, and another digest never reuses an entry. The site's model and files the user opened
// live under two prefixes, so replacing one never drops the other.

class ModelCache {
  static SLICE = 8 << 20;
  static SITE = "phonon-model/site/";
  static LOCAL = "phonon-model/local/";

  constructor(runtime) { this.runtime = runtime; }

  static key(prefix, sha256) { return new URL(`${prefix}${sha256}`, self.location.href).href; }

  // The manifest's model in a Python buffer: {buffer, source: "cache" | "network", cacheNote}.
  async site(entry, base) {
    const url = entry.url || new URL(entry.path, base).href;
    const key = ModelCache.key(ModelCache.SITE, entry.sha256);
    let cache = null;
    try {
      cache = await caches.open(MODEL_CACHE);
    } catch { /* no Cache Storage (insecure context, some private modes): download every time */ }
    const cached = cache ? await cache.match(key) : undefined;
    const source = cached ? "cache" : "network";
    const progress = (loaded) => post({ kind: TO_PAGE.PROGRESS, loaded, total: entry.size, source });
    const blob = cached ? await cached.blob() : await download(url, entry, progress);
    if (blob.size !== entry.size) {
      if (cached) await cache.delete(key);
      throw integrity(`it has ${blob.size.toLocaleString("en")} bytes, the manifest lists ${entry.size.toLocaleString("en")}`);
    }
    const buffer = this.runtime.buffer(entry.size);
    try {
      await this.fill(buffer, blob, cached ? progress : null);
      const view = buffer.getBuffer("u8");
      let digest;
      try {
        digest = await this.runtime.sha256(view.data, buffer);
      } finally {
        view.release();
      }
      if (digest !== entry.sha256) throw integrity(`its sha256 is ${digest}, the manifest lists ${entry.sha256}`);
    } catch (e) {
      buffer.destroy();
      if (cached) await cache.delete(key);
      throw e;
    }
    const cacheNote = cache && !cached ? await this.keepSite(cache, key, blob) : null;
    return { buffer, source, cacheNote };
  }

  // The blob into the buffer, a slice at a time (the heap may grow between slices).
  async fill(buffer, blob, progress) {
    let view = buffer.getBuffer("u8");
    try {
      for (let at = 0; at < blob.size; at += ModelCache.SLICE) {
        const part = new Uint8Array(await blob.slice(at, at + ModelCache.SLICE).arrayBuffer());
        if (view.data.byteLength === 0) { view.release(); view = buffer.getBuffer("u8"); }   // heap grew
        view.data.set(part, at);
        if (progress) progress(at + part.length);
      }
    } finally {
      view.release();
    }
  }

  // The checked site model kept for the next visit; older site models (other digests) dropped.
  // null, or why it could not be kept.
  async keepSite(cache, key, blob) {
    try {
      await cache.put(key, new Response(blob, { headers: { "content-type": "application/octet-stream" } }));
      for (const request of await cache.keys()) {
        if (request.url !== key && !request.url.startsWith(ModelCache.key(ModelCache.LOCAL, ""))) await cache.delete(request);
      }
      return null;
    } catch (e) {
      return `the model could not be saved for the next visit (${e.name}: ${e.message})`;
    }
  }

  // A file the user opened (and the engine loaded) kept for the next visit, replacing the one
  // kept before. null, or why it could not be kept.
  async keepLocal(name, data, sha256) {
    try {
      const cache = await caches.open(MODEL_CACHE);
      for (const request of await cache.keys()) {
        if (request.url.startsWith(ModelCache.key(ModelCache.LOCAL, ""))) await cache.delete(request);
      }
      await cache.put(ModelCache.key(ModelCache.LOCAL, sha256), new Response(data, { headers: {
        "content-type": "application/octet-stream", "x-model-name": encodeURIComponent(name) } }));
      return null;
    } catch (e) {
      return `it could not be saved for the next visit (${e.name}: ${e.message})`;
    }
  }

  // The file opened before, as kept: {data}, or {note} saying why it is not there any more.
  async local({ sha256, name }) {
    const cache = await caches.open(MODEL_CACHE);
    const cached = await cache.match(ModelCache.key(ModelCache.LOCAL, sha256));
    if (!cached) return { note: `the model file ${name} you opened before is no longer stored on this device` };
    const data = new Uint8Array(await cached.arrayBuffer());
    if (await this.runtime.sha256(data) !== sha256) {
      await cache.delete(ModelCache.key(ModelCache.LOCAL, sha256));
      return { note: `the stored copy of ${name} was damaged and has been removed` };
    }
    return { data };
  }
}

function download(url, entry, progress) {
  return new Promise((resolve, reject) => {
    const crossOrigin = new URL(url).origin !== self.location.origin;
    const failed = (why) => reject(new Fatal("model-fetch",
      `The model could not be downloaded (${entry.path || url}: ${why}). ` + (crossOrigin
        ? "It is on another site: check the connection, and that its host allows cross-origin downloads " +
          "(it must send Access-Control-Allow-Origin)."
        : "Check the connection and reload.")));
    // the server answered, and not with the file: the address is wrong, not the connection
    const refused = (status) => reject(new Fatal("model-fetch",
      `The model could not be downloaded (${entry.path || url}: HTTP ${status}): the server has no such file ` +
      "or refuses it. Check the model's address."));
    const xhr = new XMLHttpRequest();
    xhr.open("GET", url);
    xhr.responseType = "blob";
    let last = 0;
    xhr.onprogress = (e) => {
      const now = performance.now();
      if (now - last > 50) { last = now; progress(e.loaded); }
    };
    xhr.onload = () => {
      if (xhr.status >= 400 && xhr.status < 500) return refused(xhr.status);
      if (xhr.status !== 200) return failed(`HTTP ${xhr.status}`);
      progress(xhr.response.size);
      resolve(xhr.response);
    };
    xhr.onerror = () => failed("network error");
    xhr.onabort = () => failed("aborted");
    progress(0);
    xhr.send();
  });
}

function integrity(detail) {
  return new Fatal("model-digest", `The model file failed its integrity check (sha256): ${detail}. It was not used. Reload to download it again; if this persists, the site's files are damaged or were changed.`);
}

// ------------------------------------------------------------------------------------------
// KernelWorkers: the encoder's linears and attention heads split across this worker and
// threads - 1 kernel workers (web/kernel-pool.mjs), bit for bit what one worker computes

// Below this size a model's layers are too small to split: the crossings cost more than the
// second core gives (the default model, 2.7 MB, is 0.82x with two workers on 10 s in Chromium,
// BENCHMARKS.md). ?threads=N still forces a count.
const SPLIT_MIN_BYTES = 32 << 20;

class KernelWorkers {
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
// Gpu: engine/worker/gpu.py Gpu.load requests the device, runs the known-answer check against the
// digest build.py computed natively (without one, against the CPU kernels here) and only then
// puts the encoder there. Forced (tier "webgpu"), a refusal is fatal with code "webgpu";
// preferred (tier "auto"), the CPU engine is loaded as without the GPU (kernel workers
// included) and `note` says why. On the GPU, one worker: the CPU part runs beside the device.
//
// Preferred, `probe` runs first, before Python starts: no JSPI, no WebGPU, no adapter, a CPU
// emulation (by the adapter's info), or a verdict kept from an earlier visit that the wasm
// kernels were faster: the GPU is not tried at all (and the start-up snapshot is kept, which a
// runtime that makes a device cannot use). Otherwise load_gpu times the device against the
// wasm kernels after the check, and the verdict is kept in Cache Storage per adapter (vendor,
// architecture, device, description: the driver's), model digest and build.

const CPU_EMULATIONS = ["swiftshader", "llvmpipe", "lavapipe"];   // engine/executors/webgpu/adapter.py's
const VERDICT_CACHE = "phonon-web-gpu-verdicts";
const ADAPTER_WAIT_MS = 5000;               // requestAdapter() that never settles: no GPU

// "google swiftshader": the adapter's vendor and architecture, as adapter.py names it.
function adapterName(info) {
  const name = [info.vendor, info.architecture].filter(Boolean).join(" ") || info.description || info.device;
  return name || "an unnamed adapter";
}

function withTimeout(promise, ms, value) {
  let timer;
  const late = new Promise((done) => { timer = setTimeout(() => done(value), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

class Gpu {
  constructor(runtime) {
    this.runtime = runtime;
    this.wanted = null;                       // {mode, patch, hardware, ...} asked for (init), or null: the CPU only
    this.active = false;                      // the engine's encoder runs on WebGPU
    this.note = null;                         // why this tier runs
    this.adapter = null;                      // the WebGPU adapter's name
    this.verdictKey = null;                   // where this adapter's verdict for this model is kept
    this.verdict = null;                      // the kept verdict {faster, note, measured, at}, if any
    this.restore = null;                      // after a loss: () => Promise<bool>, the kernel workers back (true: done)
    this.restoring = false;
    this.calls = Promise.resolve();
  }

  // Preferred: whether the GPU is worth trying here, told without Python or any shader. Sets
  // `note` (prefixed with the wasm `tier`) and clears `wanted` when it is not.
  async probe(tier, modelDigest, build) {          // modelDigest: () => sha256 hex (or its promise) or null
    const skip = (why) => { this.note = `${tier}: ${why}`; this.wanted = null; };
    const wanted = this.wanted;
    if (typeof WebAssembly.Suspending !== "function" && typeof WebAssembly.promising !== "function") {
      return skip("this browser has no JavaScript Promise Integration (JSPI), which the engine needs to wait for the GPU");
    }
    if (!self.navigator.gpu) return skip("this browser has no WebGPU (navigator.gpu is undefined)");
    let adapter;
    try {
      adapter = await withTimeout(navigator.gpu.requestAdapter({ powerPreference: "high-performance" }), ADAPTER_WAIT_MS, null);
    } catch (e) {
      return skip(`navigator.gpu.requestAdapter() failed (${lastLine(e)})`);
    }
    if (!adapter) return skip("no WebGPU adapter (navigator.gpu.requestAdapter() returned none)");
    const raw = adapter.info || {};
    const info = Object.fromEntries(["vendor", "architecture", "device", "description"].map((k) => [k, String(raw[k] || "")]));
    const text = Object.values(info).join(" ").toLowerCase();
    const emulation = wanted.hardware ? null : CPU_EMULATIONS.find((name) => text.includes(name));
    if (emulation) {
      return skip(`the WebGPU adapter (${adapterName(info)}) is a CPU emulation (${emulation}): the wasm kernels are faster`);
    }
    if (!self.caches) return;                 // no Cache Storage (an opaque origin): measured each time
    const model = await modelDigest();
    if (!model) return;
    const hooks = [wanted.patch, wanted.hardware && "hardware", wanted.faster && "faster"].filter(Boolean).join("+");
    const key = JSON.stringify({ ...info, model, build, tier, hooks });
    this.verdictKey = new URL(`phonon-gpu-verdict/${await sha256Hex(new TextEncoder().encode(key))}`, self.location.href).href;
    try {
      const kept = await (await caches.open(VERDICT_CACHE)).match(this.verdictKey);
      this.verdict = kept ? await kept.json() : null;
    } catch {
      this.verdict = null;                    // a cache that cannot be read: measure again
    }
    if (this.verdict && !this.verdict.faster) return skip(this.keptNote());
  }

  // The kept verdict's words and when it was measured.
  keptNote() {
    return `${this.verdict.note} (measured ${this.verdict.at.slice(0, 10)}, kept for this adapter, driver and model)`;
  }

  // The verdict load_gpu measured, kept for the next visit (a failure to keep it costs only a
  // measurement then).
  async keepVerdict(out) {
    if (!this.verdictKey || !out.measured) return;
    const note = out.measured.faster ? out.speed : out.note.replace(/^[^:]+: /, "");
    const verdict = { faster: out.measured.faster, note, measured: out.measured, at: new Date().toISOString() };
    try {
      const cache = await caches.open(VERDICT_CACHE);
      await cache.put(this.verdictKey, new Response(JSON.stringify(verdict), { headers: { "Content-Type": "application/json" } }));
    } catch (e) {
      console.warn(`phonon-web: the GPU verdict was not kept (${lastLine(e)})`);
    }
  }

  // A call into Python that may encode: with the GPU, entered with stack switching
  // (callPromising), so the engine's pyodide.ffi.run_sync can await the device's promises
  // (JSPI); a promise then, and one at a time (a stream step and a file step never share the
  // device's buffers). While the kernel workers come back after a loss, calls wait for them.
  call(fn, ...args) {
    if (!this.active && !this.restoring) return fn(...args);
    const call = this.calls.then(() => (this.active ? fn.callPromising(...args) : fn(...args)));
    this.calls = call.catch(() => {});
    return call;
  }

  // The engine on the device: its tier, or null when preferred and refused. (undefined reaches
  // Python as None; null would be JsNull.)
  async load(buffer, tier, digest, cpuWorkers) {
    const wanted = this.wanted;
    // (a kept verdict here is a faster one: probe turned the slower ones away)
    const options = { timed: wanted.mode === "prefer" && !this.verdict, cpuWorkers, testFaster: Boolean(wanted.faster),
                      kept: this.verdict ? this.keptNote() : null };
    let out;
    try {
      out = JSON.parse(await this.runtime.app.gpu.load(buffer, tier, wanted.mode, digest || undefined,
                                                       wanted.patch || undefined, Boolean(wanted.hardware),
                                                       JSON.stringify(options)));
    } catch (e) {
      // "engine.executors.webgpu.browser.GpuUnavailable: why" -> "GpuUnavailable: why"
      const why = lastLine(e).replace(/^engine\.[\w.]+\.(Gpu(Unavailable|Refused): )/, "$1");
      if (/^Gpu(Unavailable|Refused): /.test(why)) {
        throw new Fatal("webgpu", `WebGPU was asked for (tier "webgpu") but cannot be used: ${why}`);
      }
      throw e;                                // not the GPU's fault (a model the loader refuses, ...)
    }
    this.note = out.note;
    this.adapter = out.adapter;
    await this.keepVerdict(out);
    if (out.tier !== "webgpu") return null;
    this.active = true;
    this.watchLoss();
    return out.tier;
  }

  // GPUDevice.lost, watched: a device lost while idle is told now, not at the next read.
  watchLoss() {
    const device = this.runtime.app.gpu.device();
    if (!device) return;
    device.lost.then((info) => {
      if (!this.active) return;
      this.call(this.runtime.app.gpu.device_lost, `${info.reason || "unknown"}: ${info.message || ""}`.trim())
        .then(() => this.checkLost(), () => {});
    });
  }

  // The device failed (mid-decode: that decode finished on the CPU,
  // engine/executors/webgpu/executor.py; or lost while idle): the page is told once, the CPU
  // runs from then on, and the kernel workers come back (`restore`).
  checkLost() {
    const note = this.active ? this.runtime.app.gpu.lost_note() : null;
    if (note) {
      this.active = false;
      this.note = note;
      post({ kind: TO_PAGE.GPU_LOST, message: note, tier: this.runtime.app.model.tier, tierNote: note });
    }
    this.restoreWorkers();
  }

  // After a loss, the kernel workers the CPU engine would have had, once no stream or file is
  // open (retried after each decode until then); one at a time, and calls wait for it.
  restoreWorkers() {
    if (!this.restore || this.restoring || this.active) return;
    this.restoring = true;
    this.calls = this.calls.then(() => this.restore()).then((done) => {
      if (done) this.restore = null;
    }, (e) => {
      this.restore = null;
      console.warn(`phonon-web: the kernel workers did not come back after the GPU was lost (${lastLine(e)})`);
    }).finally(() => { this.restoring = false; });
  }
}

// ------------------------------------------------------------------------------------------
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
      kind: TO_PAGE.READY, tier: usedTier, tierNote: this.gpu.note, adapter: this.gpu.adapter, threads: this.app.model.threads(),
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
    post({ kind: TO_PAGE.WORKERS_BACK, threads: this.app.model.threads(), threadsNote: this.kernels.note });
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
// Stream: one open stream. It never skips audio: when decoding falls behind (a slow
// machine, audio fed faster than real time) the due decodes run in order, a step of
// STEP_BUDGET_MS at a time with this worker's messages read between steps, and "end" finishes
// only once every due decode has run.

class Stream {
  constructor(host, { rate, port, ring, id = null, maxPending = null, resume = null, latency = "fast", pace = "exact" }) {
    this.host = host;
    // JS null is not Python's None: undefined is
    this.app.stream.start(rate, maxPending ?? undefined, resume ?? undefined, latency, pace);
    this.id = id;
    this.port = port;
    this.ring = ring ? openRing(ring) : null;
    this.timer = null;
    this.ending = false;
    this.overrun = false;
    this.busy = false;                        // a step is running (with the GPU: suspended in Python)
    this.held = [];                           // audio that arrived meanwhile
    this.cancelled = false;
    this.announced = false;
    // a resumed stream reads its ring only once the feeder fed the input before it again
    this.ringHeld = Boolean(resume && this.ring);
    port.onmessage = ({ data }) => guard(() => {
      if (host.stream !== this) return;
      if (data.kind === FEED.RESENT) {
        this.ringHeld = false;
      } else if (data.kind === FEED.AUDIO) {
        if (this.busy) this.held.push(data.samples);   // a GPU step is suspended in Python: after it
        else this.feed(data.samples);
      } else if (data.kind === FEED.END) {
        this.ending = true;                    // finish after the due decodes, a step at a time
        clearTimeout(this.timer);
        if (!this.busy) this.timer = setTimeout(() => this.tick(), 0);   // else the step in flight goes on
      }
    });
    this.timer = setTimeout(() => this.tick(), TICK_MS);
    post({ kind: TO_PAGE.STARTED, id, rate, checkpoint: this.keep(JSON.parse(this.app.stream.checkpoint_json())) });
  }

  // The page keeps the newest checkpoint (to resume the stream in a new worker if this one
  // dies) and the feeder its input from the checkpoint's "from" on.
  keep(checkpoint) {
    this.port.postMessage({ kind: FEED.RETAIN, from: checkpoint.from });
    return checkpoint;
  }

  get app() { return this.host.app.stream; }          // its Python side (engine/worker/stream.py)

  get open() { return this.host.stream === this; }

  feed(samples) {
    const refused = this.app.feed(samples);
    if (refused) {                               // too far behind: said once, counted in the metrics
      if (!this.overrun) post({ kind: TO_PAGE.ERROR, code: "overrun", id: this.id, message: refused });
      this.overrun = true;
      return;
    }
    this.overrun = false;
    if (this.host.debug) this.host.captured.push(samples);
  }

  // The ring's audio (messages.mjs ringDrain: copies, the worklet reuses the ring).
  drainRing() {
    if (!this.ringHeld) ringDrain(this.ring, (samples) => this.feed(samples));
  }

  // The audio waiting: from the ring, and what arrived during a step.
  takeWaiting() {
    if (this.ring) this.drainRing();
    for (const samples of this.held.splice(0)) this.feed(samples);
  }

  // One step: the due decodes for up to STEP_BUDGET_MS, then the text. With more due, the next
  // step comes as soon as the messages waiting meanwhile were read; the page learns the next
  // decode's window (nextWindowSeconds) so its heartbeat can tell a long decode from a dead
  // worker. With the GPU a step is a promise: meanwhile audio is held and a cancel waits for it.
  async tick() {
    if (!this.open || this.busy) return;
    let due = false;
    this.busy = true;
    try {
      this.takeWaiting();
      this.announceDecode();
      const began = performance.now();
      const out = JSON.parse(await this.host.gpu.call(this.app.partial, STEP_BUDGET_MS));
      const stepMs = performance.now() - began;      // the step's cost, decodes and all (benchmarks)
      if (this.cancelled) {
        this.busy = false;
        return this.cancel();
      }
      due = out.due;
      if (this.ring) out.metrics.dropped_samples = ringDropped(this.ring);
      this.host.checkLost();
      // ending with nothing due, finish() comes next: it decodes the window's tail
      const next = due ? out.next_window_seconds : this.ending ? out.tail_window_seconds : 0;
      this.announced = next > 0;
      if (out.checkpoint) this.keep(out.checkpoint);
      post({ kind: TO_PAGE.PARTIAL, id: this.id, view: out.view, metrics: out.metrics, due,
             nextWindowSeconds: next, ending: this.ending, checkpoint: out.checkpoint, stepMs });
      if (this.ending && !due) await this.end();
    } catch (e) {
      fail(e);
    } finally {
      this.busy = false;
    }
    if (this.open) {
      if (this.held.length) due = true;
      this.timer = setTimeout(() => this.tick(), due || this.ending ? 0 : TICK_MS);   // never overlapping
    }
  }

  // A stream that keeps up has nothing due after a step (its partial announced no window), so
  // the decode that audio arriving since makes due would start unannounced: the page's
  // heartbeat, hearing nothing for the length of that decode, could take a slow machine's busy
  // worker for a dead one. Announce it first.
  announceDecode() {
    if (this.announced || this.ending) return;
    const seconds = this.app.next_window_seconds();
    if (seconds > 0) post({ kind: TO_PAGE.DECODING, id: this.id, nextWindowSeconds: seconds });
    this.announced = seconds > 0;
  }

  // The API's stream.cancel(): the session is dropped, nothing more is decoded or posted.
  cancel() {
    if (!this.open) return;
    if (this.busy) {                          // a GPU step is in flight: cancelled when it returns
      this.cancelled = true;
      return;
    }
    this.close();
    this.app.cancel();
    post({ kind: TO_PAGE.STREAM_CANCELLED, id: this.id });
    this.host.gpu.restoreWorkers();
  }

  close() {
    clearTimeout(this.timer);
    this.port.close();
    this.host.stream = null;
  }

  async end() {
    clearTimeout(this.timer);
    this.takeWaiting();
    const dropped = this.ring ? ringDropped(this.ring) : 0;
    this.close();
    const { result, metrics } = JSON.parse(await this.host.gpu.call(this.app.finish));
    metrics.dropped_samples = dropped;
    this.host.checkLost();
    post({ kind: TO_PAGE.FINAL, id: this.id, result, metrics, ...this.host.memory() });
  }
}

// ------------------------------------------------------------------------------------------
// FileJob: one file, a step at a time (at most one 30 s window each): between steps this
// worker reads its messages, so progress goes out and a cancel gets in

class FileJob {
  static async run(host, data) {
    const app = host.app;
    let seconds;
    try {
      seconds = data.wav ? app.file.prepare_wav(new Uint8Array(data.wav))
                         : app.file.prepare_pcm(data.pcm, data.rate, data.channels);
    } catch (e) {
      post({ kind: TO_PAGE.ERROR, code: "file", message: `${data.name} could not be read: ${lastLine(e)}` });
      return;
    }
    post({ kind: TO_PAGE.FILE_BUSY, name: data.name, seconds });
    const total = app.file.begin();
    const job = host.file = new FileJob(data.name);
    try {
      await job.steps(host, total);
    } finally {
      host.file = null;
      host.gpu.restoreWorkers();               // the GPU lost during the file: the workers now
    }
  }

  constructor(name) {
    this.name = name;
    this.cancelled = false;
  }

  async steps(host, total) {
    const app = host.app;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (this.cancelled) {
        app.file.cancel();
        post({ kind: TO_PAGE.FILE_CANCELLED, name: this.name });
        return;
      }
      const step = JSON.parse(await host.gpu.call(app.file.step));
      host.checkLost();
      if (step.result) {
        post({ kind: TO_PAGE.FILE_RESULT, name: this.name, result: step.result, ...host.memory() });
        return;
      }
      post({ kind: TO_PAGE.FILE_PROGRESS, name: this.name, done: step.done, total });
    }
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

function guard(fn) {
  try {
    const out = fn();
    if (out && out.catch) out.catch(fail);
  } catch (e) {
    fail(e);
  }
}

function fail(e) {
  if (e instanceof Fatal) post({ kind: TO_PAGE.FATAL, code: e.code, message: e.message });
  else post({ kind: TO_PAGE.FATAL, code: "engine", message: `The engine failed: ${lastLine(e)}`, detail: String(e && e.stack || e) });
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
