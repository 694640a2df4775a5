// The engine worker: Pyodide + the phonon-web engine, the model, live streams and files.
// Everything slow happens here; the page only posts messages and never waits on a decode.
//
// page -> worker   {kind: "init", manifest, tier, debug, localModel, modelBytes, threads}
//                                                           boot, fetch/verify/cache the model
//                                                           (localModel: {sha256, name} of a file the
//                                                           user opened before, if cached; modelBytes:
//                                                           {name, bytes} to use instead)
//                  (gpu: {mode: "force" | "prefer", patch}: the encoder's linears on WebGPU once
//                  the device passed the known-answer check, manifest.model.gpu_self_test)
//                  {kind: "open-model", name, bytes}         switch to a local .gguf (kept on failure)
//                  {kind: "cancel-file"}                     stop the file being transcribed
//                  {kind: "cancel-stream"}                   drop the open stream (no final)
//                  {kind: "kill-kernel-worker", slot}        (debug) a kernel worker stops, as if crashed
//                  {kind: "lose-gpu", afterReads}            (debug) the WebGPU device is destroyed mid-decode
//                  {kind: "start", rate, port, ring, maxPending}  open a stream; audio arrives on port
//                  {kind: "file", name, wav} | {kind: "file", name, pcm, rate, channels}
//                  {kind: "ping"}                            heartbeat
//                  {kind: "captured"}                        (debug) the samples fed so far
// port (worklet)   {kind: "audio", samples} ... {kind: "end"}   (with a ring: only "end")
// worker -> page   stage, progress, ready, model-switched, started, partial, final, file-busy,
//                  file-progress, file-result, file-cancelled, stream-cancelled, workers-lost,
//                  gpu-lost, pong, error (recoverable), fatal (the worker cannot go on)
import { BootError, bootPyodide } from "./pyodide-boot.mjs";
import { KernelPool } from "./kernel-pool.mjs";

const MODEL_CACHE = "phonon-web-model";
const TICK_MS = 150;                        // partial() cadence while listening (wall time)
const STEP_BUDGET_MS = 250;                 // while behind: decodes per step until this much wall time,
                                            // then messages (audio, pings, cancel) are read

let pyodide, app, webapp, debug = false, currentTier = null;
let pool = null;                            // the engine's kernel workers (web/kernel-pool.mjs), if any
let threadsWanted = 1, threadsForced = false;  // workers asked for (?threads=N forces them)
let threadsNote = null, threadsNoteFromPage = null;  // why fewer run, if they do
let stream = null;                          // the open live stream
let fileJob = null;                         // {name, cancelled} while a file is being transcribed
let captured = [];                          // (debug) every block fed, in order
let gpu = null;                             // {mode, patch, hardware} asked for (init), or null: the CPU only
let gpuActive = false;                      // the engine's linears run on WebGPU (engine/webapp.py load_gpu)
let tierNote = null, adapter = null;        // why this tier runs; the WebGPU adapter's name

// A call into Python that may encode: with the GPU, entered with stack switching (callPromising),
// so the engine's pyodide.ffi.run_sync can await the device's promises (JSPI); a promise then,
// and one at a time (a stream step and a file step never share the device's buffers).
let gpuCalls = Promise.resolve();
function py(fn, ...args) {
  if (!gpuActive) return fn(...args);
  const call = gpuCalls.then(() => fn.callPromising(...args));
  gpuCalls = call.catch(() => {});
  return call;
}

const post = (message, transfer = []) => self.postMessage(message, transfer);

class Fatal extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

// ------------------------------------------------------------------------------------------
// boot: runtime, engine wheel, model

async function init({ manifest, tier, debug: debugMode, localModel, modelBytes, threads = 1, threadsForced: forced = false,
                      threadsNote: note = null, gpu: gpuWanted = null }) {
  debug = !!debugMode;
  gpu = gpuWanted;
  threadsWanted = threads;
  threadsForced = forced;
  threadsNote = threadsNoteFromPage = note;
  const base = new URL("./", self.location.href);
  const t = { start: performance.now() };
  try {
    pyodide = await bootPyodide({
      indexURL: new URL(manifest.pyodide.path, base).href,
      wheelURL: new URL(manifest.wheel, base).href,
      onStage: (stage) => { t[stage] = performance.now(); post({ kind: "stage", stage }); },
    });
  } catch (e) {
    if (e instanceof BootError) throw new Fatal(e.code, `The speech engine could not start: ${e.message}`);
    throw new Fatal("boot", `The speech engine could not start: ${lastLine(e)}`);
  }
  webapp = pyodide.pyimport("engine.webapp");      // the Python side: engine/webapp.py
  app = webapp.WebApp();
  t.model = performance.now();
  post({ kind: "stage", stage: "model" });
  currentTier = tier;
  const local = localModel ? await openCachedLocalModel(localModel, tier) : null;
  let model = null, usedTier = local && local.tier, localNote = local && local.note;
  if (modelBytes) {                           // the API's Recognizer.load({model: bytes})
    const buffer = pyBytes(new Uint8Array(modelBytes.bytes));
    t.compile = performance.now();
    post({ kind: "stage", stage: "compile" });
    try {
      usedTier = await loadEngine(buffer, tier, "load", modelBytes.bytes.byteLength);
    } catch (e) {
      if (e instanceof Fatal) throw e;
      throw new Fatal("model-file", `${modelBytes.name} is not a model this engine can use: ${lastLine(e)}`);
    } finally {
      buffer.destroy();
    }
  }
  if (!usedTier) {
    model = await loadModel(manifest.model, base);
    t.compile = performance.now();
    post({ kind: "stage", stage: "compile" });
    try {
      usedTier = await loadEngine(model.buffer, tier, "load", manifest.model.size,
                                  (manifest.model.gpu_self_test || {}).digest);
    } catch (e) {
      if (e instanceof Fatal) throw e;
      throw new Fatal("engine", `The engine could not open the model with the ${tier} kernels: ${lastLine(e)}`);
    } finally {
      model.buffer.destroy();                 // the Python object lives on in app.model
    }
  }
  t.compile = t.compile || performance.now();
  t.ready = performance.now();
  post({
    kind: "ready", tier: usedTier, tierNote, adapter, threads: app.threads(), threadsNote, model: JSON.parse(app.model_info()),
    modelSource: modelBytes ? "bytes" : model ? model.source : "local-cache",
    cacheNote: model ? model.cacheNote : null, localModel: local && local.info, localNote,
    ...memory(),
    timings: { runtime: t.engine - t.start, engine: t.model - t.engine, model: t.compile - t.model,
               compile: t.ready - t.compile, total: t.ready - t.start },
  });
}

// The model: from Cache Storage, else downloaded once (XMLHttpRequest with a Blob response:
// byte progress, and the bytes stay in the browser's blob store, which pages large blobs to
// disk, instead of a second full copy in this worker's heap), checked against the manifest's
// size and sha256 in the Pyodide heap, and only then cached for the next visit. Into the
// heap it goes in 8 MiB slices, into a bytearray allocated once at the manifest's size: the
// one full copy the engine reads its tensors from.
//
// (A streamed fetch() body would do the same, but Chromium then intermittently reports the
// finished request as cancelled, net::ERR_ABORTED, in about 1 load of 7 here.)
const SLICE = 8 << 20;

// Cache Storage keys name the digest, not the URL: the same model from any address is found
// again, and another digest never reuses an entry. The site's model and files the user opened
// live under two prefixes, so replacing one never drops the other.
const SITE_KEY = "phonon-model/site/", LOCAL_KEY = "phonon-model/local/";
const cacheKey = (prefix, sha256) => new URL(`${prefix}${sha256}`, self.location.href).href;

async function loadModel(entry, base) {
  const url = entry.url || new URL(entry.path, base).href;
  const key = cacheKey(SITE_KEY, entry.sha256);
  let cache = null;
  try {
    cache = await caches.open(MODEL_CACHE);
  } catch { /* no Cache Storage (insecure context, some private modes): download every time */ }
  const cached = cache ? await cache.match(key) : undefined;
  const source = cached ? "cache" : "network";
  const progress = (loaded) => post({ kind: "progress", loaded, total: entry.size, source });
  const blob = cached ? await cached.blob() : await download(url, entry, progress);
  if (blob.size !== entry.size) {
    if (cached) await cache.delete(key);
    throw integrity(`it has ${blob.size.toLocaleString("en")} bytes, the manifest lists ${entry.size.toLocaleString("en")}`);
  }
  const buffer = webapp.new_buffer(entry.size);
  let view = buffer.getBuffer("u8");
  try {
    for (let at = 0; at < entry.size; at += SLICE) {
      const part = new Uint8Array(await blob.slice(at, at + SLICE).arrayBuffer());
      if (view.data.byteLength === 0) { view.release(); view = buffer.getBuffer("u8"); }   // heap grew
      view.data.set(part, at);
      if (cached) progress(at + part.length);
    }
    if (view.data.byteLength === 0) { view.release(); view = buffer.getBuffer("u8"); }
    const digest = await sha256(view.data, buffer);
    if (digest !== entry.sha256) throw integrity(`its sha256 is ${digest}, the manifest lists ${entry.sha256}`);
  } catch (e) {
    view.release();
    buffer.destroy();
    if (cached) await cache.delete(key);
    throw e;
  }
  view.release();
  let cacheNote = null;
  if (cache && !cached) {
    try {
      await cache.put(key, new Response(blob, { headers: { "content-type": "application/octet-stream" } }));
      // older site models (other digests, or keys from before) are not needed any more
      for (const request of await cache.keys()) {
        if (request.url !== key && !request.url.startsWith(cacheKey(LOCAL_KEY, ""))) await cache.delete(request);
      }
    } catch (e) {
      cacheNote = `the model could not be saved for the next visit (${e.name}: ${e.message})`;
    }
  }
  return { buffer, source, cacheNote };
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

// A .gguf the user opened: the engine's own loader validates it; only if it loads does the
// app switch to it (the engine in use stays until then), and only then is it cached.
async function openModelFile({ name, bytes }) {
  const data = new Uint8Array(bytes);
  const buffer = pyBytes(data);
  let info;
  try {
    info = JSON.parse(await loadEngine(buffer, currentTier, "switch", data.length));
  } catch (e) {
    buffer.destroy();
    post({ kind: "error", code: "model-file",
           message: `${name} is not a model this engine can use: ${lastLine(e)}. The previous model is still in use.` });
    return;
  }
  buffer.destroy();                          // app.model keeps the Python object
  const sha256 = await digestOf(data);
  let cacheNote = null;
  try {
    const cache = await caches.open(MODEL_CACHE);
    for (const request of await cache.keys()) {   // one opened file is kept at a time
      if (request.url.startsWith(cacheKey(LOCAL_KEY, ""))) await cache.delete(request);
    }
    await cache.put(cacheKey(LOCAL_KEY, sha256), new Response(data, { headers: {
      "content-type": "application/octet-stream", "x-model-name": encodeURIComponent(name) } }));
  } catch (e) {
    cacheNote = `it could not be saved for the next visit (${e.name}: ${e.message})`;
  }
  post({ kind: "model-switched", file: name, size: data.length, sha256, cacheNote, threadsNote, ...info });
}

async function openCachedLocalModel({ sha256, name }, tier) {
  try {
    const cache = await caches.open(MODEL_CACHE);
    const cached = await cache.match(cacheKey(LOCAL_KEY, sha256));
    if (!cached) return { note: `the model file ${name} you opened before is no longer stored on this device` };
    const data = new Uint8Array(await cached.arrayBuffer());
    if (await digestOf(data) !== sha256) {
      await cache.delete(cacheKey(LOCAL_KEY, sha256));
      return { note: `the stored copy of ${name} was damaged and has been removed` };
    }
    const buffer = pyBytes(data);
    try {
      const usedTier = await loadEngine(buffer, tier, "load", data.length);
      return { tier: usedTier, info: { file: name, size: data.length, sha256, ...JSON.parse(app.model_info()) } };
    } finally {
      buffer.destroy();
    }
  } catch (e) {
    return { note: `the model file ${name} you opened before could not be used (${lastLine(e)})` };
  }
}

// A kernel worker that died mid-decode: the engine finished that decode alone and goes on
// with one worker (engine/executors/workers.py KernelWorkers.settle); the page is told once.
let lostReported = false;
function checkWorkers() {
  if (!pool || lostReported) return;
  const lost = app.workers_lost();
  if (lost) {
    lostReported = true;
    post({ kind: "workers-lost", message: lost, threads: app.threads() });
  }
}

// ------------------------------------------------------------------------------------------
// kernel workers: the encoder's linears and attention heads split across this worker
// and threads - 1 kernel workers, bit for bit what one worker computes

// An engine on `buffer` ("load", or "switch": the engine in use stays if this one fails), with
// kernel workers when asked for and possible; returns what app.load / app.switch return.
async function loadEngine(buffer, tier, how, modelBytes, gpuDigest = null) {
  if (gpu && how === "load") {
    const onGpu = await loadOnGpu(buffer, tier, gpuDigest);
    if (onGpu) return onGpu;                  // else preferred but refused: the wasm engine below
  }
  if (gpuActive) return py(app[how], buffer, tier);       // a switch: the new model on the device too
  const next = await startPool(tier, modelBytes);
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
    } catch (e) {                              // a kernel worker could not take its weights: one worker
      next.close();
      threadsNote = `one worker: the kernel workers did not start (${lastLine(e)})`;
      out = open(null);
      if (pool) pool.close();
      pool = null;
      return out;
    }
  }
  if (pool) pool.close();
  pool = next;
  lostReported = false;
  return out;
}

// The GPU: engine/webapp.py load_gpu requests the device, runs the known-answer check
// against the digest build.py computed natively (`digest`; without one, against the CPU kernels
// here) and only then puts the encoder's linears there; its tier. Forced (tier "webgpu"), a
// refusal is fatal with code "webgpu"; preferred, null (the CPU engine is loaded as without the
// GPU, kernel workers included) and tierNote says why. On the GPU, one worker: the CPU part runs
// beside the device, not split. (undefined reaches Python as None; null would be JsNull.)
async function loadOnGpu(buffer, tier, digest) {
  let out;
  try {
    out = JSON.parse(await app.load_gpu(buffer, tier, gpu.mode, digest || undefined, gpu.patch || undefined,
                                        Boolean(gpu.hardware)));
  } catch (e) {
    // "engine.executors.webgpu.browser.GpuUnavailable: why" -> "GpuUnavailable: why"
    const why = lastLine(e).replace(/^engine\.[\w.]+\.(Gpu(Unavailable|Refused): )/, "$1");
    if (/^Gpu(Unavailable|Refused): /.test(why)) {
      throw new Fatal("webgpu", `WebGPU was asked for (tier "webgpu") but cannot be used: ${why}`);
    }
    throw e;                                  // not the GPU's fault (a model the loader refuses, ...)
  }
  tierNote = out.note;
  adapter = out.adapter;
  if (out.tier !== "webgpu") return null;
  if (pool) pool.close();
  pool = null;
  gpuActive = true;
  return out.tier;
}

// The device failed mid-decode: that decode finished on the CPU (engine/executors/webgpu/executor.py); the
// page is told once, and the CPU runs from then on.
function checkGpu() {
  if (!gpuActive) return;
  const note = app.gpu_lost();
  if (note) {
    gpuActive = false;
    tierNote = note;
    post({ kind: "gpu-lost", message: note, tier: app.tier, tierNote: note });
  }
}

// Below this size a model's layers are too small to split: the crossings cost more than the
// second core gives (the default model, 2.7 MB, is 0.82x with two workers on 10 s in Chromium,
// BENCHMARKS.md). ?threads=N still forces a count.
const SPLIT_MIN_BYTES = 32 << 20;

async function startPool(tier, modelBytes) {
  threadsNote = threadsNoteFromPage;
  if (threadsWanted <= 1) return null;
  if (!threadsForced && modelBytes < SPLIT_MIN_BYTES) {
    threadsNote = "one worker: this model is small enough that splitting it across workers would cost more than it saves";
    return null;
  }
  if (!self.crossOriginIsolated || typeof SharedArrayBuffer === "undefined") {
    threadsNote = threadsNote || (self.crossOriginIsolated
      ? "one worker: this browser offers no SharedArrayBuffer, even to this cross-origin-isolated page, so workers cannot share memory"
      : "one worker: this page is not cross-origin isolated, so it cannot share memory between workers");
    return null;
  }
  try {
    return await KernelPool.forPyodide({ pyodide, tier, workers: threadsWanted - 1,
                                         modulePath: pyodide.pyimport("engine.kernels").wasm_module_path(tier),
                                         workerURL: new URL("kernel-worker.mjs", self.location.href) });
  } catch (e) {
    threadsNote = `one worker: the kernel workers did not start (${lastLine(e)})`;
    return null;
  }
}

function pyBytes(data) {
  const buffer = webapp.new_buffer(data.length);
  const view = buffer.getBuffer("u8");
  view.data.set(data);
  view.release();
  return buffer;
}

async function digestOf(data) {
  if (self.crypto && crypto.subtle) return hex(await crypto.subtle.digest("SHA-256", data));
  return pyodide.pyimport("hashlib").sha256(pyodide.toPy(data)).hexdigest();
}

function integrity(detail) {
  return new Fatal("model-digest", `The model file failed its integrity check (sha256): ${detail}. It was not used. Reload to download it again; if this persists, the site's files are damaged or were changed.`);
}

async function sha256(bytes, pyBuffer) {
  if (self.crypto && crypto.subtle) {
    return hex(await crypto.subtle.digest("SHA-256", bytes));
  }
  // No SubtleCrypto outside a secure context: hashlib, on the bytes in place.
  const hashlib = pyodide.pyimport("hashlib");
  return hashlib.sha256(pyBuffer).hexdigest();
}

const hex = (digest) => Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");

function heapBytes() {
  try { return pyodide._module.HEAPU8.length; } catch { return null; }
}

// This worker's wasm heap and the kernel workers' wasm memory together (0 without kernel
// workers), as the API reports them (r.heapBytes, r.kernelHeapBytes)
const memory = () => ({ heapBytes: heapBytes(), kernelHeapBytes: pool ? pool.heapBytes : 0 });

function lastLine(e) {
  const text = String(e && e.message || e).trim().split("\n");
  return text[text.length - 1];
}

// ------------------------------------------------------------------------------------------
// live stream

// A stream never skips audio: when decoding falls behind (a slow machine, audio fed faster than
// real time) the due decodes run in order, a step of STEP_BUDGET_MS at a time with this worker's
// messages read between steps, and "end" finishes only once every due decode has run.
function startStream({ rate, port, ring, id = null, maxPending = null }) {
  if (stream) throw new Fatal("state", "a stream is already open");
  if (maxPending === null) app.start(rate);
  else app.start(rate, maxPending);
  captured = [];
  stream = { id, rate, port, ring: ring ? openRing(ring) : null, timer: null, ending: false, overrun: false,
             started: performance.now(), busy: false, held: [], cancelled: false };
  port.onmessage = ({ data }) => guard(() => {
    if (!stream) return;
    if (data.kind === "audio") {
      if (stream.busy) stream.held.push(data.samples);   // a GPU step is suspended in Python: after it
      else feed(data.samples);
    } else if (data.kind === "end") {
      stream.ending = true;                    // finish after the due decodes, a step at a time
      clearTimeout(stream.timer);
      if (!stream.busy) stream.timer = setTimeout(tick, 0);   // else the step in flight goes on
    }
  });
  stream.timer = setTimeout(tick, TICK_MS);
  post({ kind: "started", rate });
}

function feed(samples) {
  const refused = app.feed(samples);
  if (refused) {                               // too far behind: said once, counted in the metrics
    if (!stream.overrun) post({ kind: "error", code: "overrun", id: stream.id, message: refused });
    stream.overrun = true;
    return;
  }
  stream.overrun = false;
  if (debug) captured.push(samples);
}

function openRing(sab) {
  return { header: new Int32Array(sab, 0, 4), data: new Float32Array(sab, 16) };
}

// Single producer (the worklet) and single consumer (here); positions are sample counts
// modulo 2^32 in header[0] (written) and header[1] (read); header[2] counts dropped samples.
function drainRing() {
  const { header, data } = stream.ring;
  const cap = data.length;
  const w = Atomics.load(header, 0) >>> 0;
  let r = Atomics.load(header, 1) >>> 0;
  let n = (w - r) >>> 0;
  while (n > 0) {
    const at = r % cap;
    const len = Math.min(n, cap - at);
    feed(data.slice(at, at + len));         // a copy: the worklet reuses the ring
    r = (r + len) >>> 0;
    n -= len;
  }
  Atomics.store(header, 1, r | 0);
}

// One step: the due decodes for up to STEP_BUDGET_MS, then the text. With more due, the next step
// comes as soon as the messages waiting meanwhile were read; the page learns the next decode's
// window (nextWindowSeconds) so its heartbeat can tell a long decode from a dead worker.
// With the GPU a step is a promise (py): meanwhile audio is held and a cancel waits for it.
async function tick() {
  if (!stream || stream.busy) return;
  const current = stream;
  let due = false;
  current.busy = true;
  try {
    if (current.ring) drainRing();
    for (const samples of current.held.splice(0)) feed(samples);
    announceDecode(current);
    const out = JSON.parse(await py(app.partial, STEP_BUDGET_MS));
    if (current.cancelled) {
      current.busy = false;
      return cancelStream();
    }
    due = out.due;
    if (current.ring) out.metrics.dropped_samples = Atomics.load(current.ring.header, 2);
    checkWorkers();
    checkGpu();
    // ending with nothing due, finish() comes next: it decodes the window's tail
    const next = due ? out.next_window_seconds : current.ending ? out.tail_window_seconds : 0;
    current.announced = next > 0;
    post({ kind: "partial", id: current.id, view: out.view, metrics: out.metrics, due,
           nextWindowSeconds: next, ending: current.ending });
    if (current.ending && !due) await endStream();
  } catch (e) {
    fail(e);
  } finally {
    current.busy = false;
  }
  if (stream === current) {
    if (current.held.length) due = true;
    stream.timer = setTimeout(tick, due || stream.ending ? 0 : TICK_MS);   // never overlapping
  }
}

// A stream that keeps up has nothing due after a step (its partial announced no window), so the
// decode that audio arriving since makes due would start unannounced: the page's heartbeat,
// hearing nothing for the length of that decode, could take a slow machine's busy worker for a
// dead one. Announce it first.
function announceDecode(current) {
  if (current.announced || current.ending) return;
  const seconds = app.next_window_seconds();
  if (seconds > 0) post({ kind: "decoding", id: current.id, nextWindowSeconds: seconds });
  current.announced = seconds > 0;
}

// The API's stream.cancel(): the session is dropped, nothing more is decoded or posted.
function cancelStream() {
  if (!stream) return;
  if (stream.busy) {                          // a GPU step is in flight: cancelled when it returns
    stream.cancelled = true;
    return;
  }
  clearTimeout(stream.timer);
  stream.port.close();
  const id = stream.id;
  stream = null;
  app.cancel_stream();
  post({ kind: "stream-cancelled", id });
}

async function endStream() {
  clearTimeout(stream.timer);
  if (stream.ring) drainRing();
  for (const samples of stream.held.splice(0)) feed(samples);
  const dropped = stream.ring ? Atomics.load(stream.ring.header, 2) : 0;
  const id = stream.id;
  stream.port.close();
  stream = null;
  const { result, metrics } = JSON.parse(await py(app.finish));
  metrics.dropped_samples = dropped;
  checkWorkers();
  checkGpu();
  post({ kind: "final", id, result, metrics, ...memory() });
}

// ------------------------------------------------------------------------------------------
// files

async function transcribeFile(data) {
  let seconds;
  try {
    seconds = data.wav ? app.prepare_wav(new Uint8Array(data.wav))
                       : app.prepare_pcm(data.pcm, data.rate, data.channels);
  } catch (e) {
    post({ kind: "error", code: "file", message: `${data.name} could not be read: ${lastLine(e)}` });
    return;
  }
  post({ kind: "file-busy", name: data.name, seconds });
  // a step at a time (at most one 30 s window each): between steps this worker reads its
  // messages, so progress goes out and a cancel gets in
  const total = app.begin_file();
  fileJob = { name: data.name, cancelled: false };
  try {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (fileJob.cancelled) {
        app.cancel_file();
        post({ kind: "file-cancelled", name: data.name });
        return;
      }
      const step = JSON.parse(await py(app.file_step));
      checkWorkers();
      checkGpu();
      if (step.result) {
        post({ kind: "file-result", name: data.name, result: step.result, ...memory() });
        return;
      }
      post({ kind: "file-progress", name: data.name, done: step.done, total });
    }
  } finally {
    fileJob = null;
  }
}

// While a file runs, this worker still reads messages (between steps): anything that would use
// the engine meanwhile is refused, not interleaved.
function refuseWhileFileRuns(what) {
  if (!fileJob) return false;
  post({ kind: "error", code: "busy", message: `Cannot ${what} while ${fileJob.name} is being transcribed: cancel it first.` });
  return true;
}

// ------------------------------------------------------------------------------------------

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
  if (e instanceof Fatal) post({ kind: "fatal", code: e.code, message: e.message });
  else post({ kind: "fatal", code: "engine", message: `The engine failed: ${lastLine(e)}`, detail: String(e && e.stack || e) });
}

self.onmessage = ({ data }) => guard(async () => {
  switch (data.kind) {
    case "init": return init(data);
    case "ping": return post({ kind: "pong", ...(pyodide ? memory() : { heapBytes: null }) });
    case "start": return refuseWhileFileRuns("start listening") || startStream(data);
    case "file": return refuseWhileFileRuns(`transcribe ${data.name}`) || transcribeFile(data);
    case "open-model": return refuseWhileFileRuns("switch models") || openModelFile(data);
    case "cancel-file": if (fileJob) fileJob.cancelled = true; return;
    case "cancel-stream": return cancelStream();
    case "kill-kernel-worker": if (debug && pool) pool.kill(data.slot || 0); return;     // tests: a crash
    case "lose-gpu": if (debug && gpuActive) return py(app.lose_gpu, data.afterReads || 0);  // tests: device loss
    case "csp-probe": if (debug) post({ kind: "csp-probe", evalBlocked: evalBlocked() }); return;   // tests: the policy holds
    case "captured": {
      const n = captured.reduce((s, c) => s + c.length, 0);
      const all = new Float32Array(n);
      let at = 0;
      for (const c of captured) { all.set(c, at); at += c.length; }
      return post({ kind: "captured", samples: all }, [all.buffer]);
    }
    default: throw new Error(`unknown request ${data.kind}`);
  }
});
