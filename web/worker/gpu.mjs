// The engine worker's Gpu (web/worker.mjs): the WebGPU device, its check, its loss.
import { TO_PAGE } from "../messages.mjs";
import { sha256Hex } from "../start-snapshot.mjs";
import { Fatal, lastLine, post } from "./common.mjs";

// Gpu: engine/worker/gpu.py Gpu.load requests the device, runs the known-answer check against the
// digest build.py computed natively (without one, against the CPU kernels here) and only then
// puts the encoder there. Forced (backend "webgpu"), a refusal is fatal with code "webgpu";
// preferred (backend "auto"), the CPU engine is loaded as without the GPU (kernel workers
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

export class Gpu {
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
        throw new Fatal("webgpu", `WebGPU was asked for (backend "webgpu") but cannot be used: ${why}`);
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
      post({ kind: TO_PAGE.GPU_LOST, message: note, tier: this.runtime.app.model.tier,
             backend: this.runtime.app.model.backend, tierNote: note });
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
