// phonon-web's JavaScript API: speech recognition in a Web Worker (Pyodide + the engine +
// WebAssembly kernels), nothing sent anywhere. The demo app (app.mjs) is one user of it.
//
//   import { Recognizer } from "./phonon.mjs";
//   const r = await Recognizer.load({ onProgress: (p) => console.log(p.stage, p.loaded, p.total) });
//   const { text, words, tokens } = await r.transcribe(float32Samples, 16000);   // or an ArrayBuffer/Blob
//   const s = r.stream({ sampleRate: 48000 });
//   s.addEventListener("partial", (e) => show(e.detail.committed, e.detail.tentative));
//   s.addEventListener("commit", (e) => append(e.detail.words));
//   s.feed(samples); ...; const final = await s.finish();       // or s.cancel()
//   (feeding a recording faster than it decodes: `if (s.pending > 30) await s.pendingBelow(10);`)
//   r.close();
//
// Files beside this module (the site or the package built by `python3 build.py site|package`):
// manifest.json (runtime, wheel, tiers, default model), worker.mjs, pyodide/, wheel/, models/.
// Types: phonon.d.ts. The messages between the page, the engine worker and the capture worklet:
// messages.mjs.

import { CAPTURE, FEED, TO_PAGE, TO_WORKER, makeRing } from "./messages.mjs";

const RATE_MIN = 8000, RATE_MAX = 192000;
const HEARTBEAT_MS = 2000;
const FIRST_WORD_MS = 20000;                 // a new engine worker says something (stage, pong) by then
const LONG_STEP_MS = 120000;                 // loading or switching a model: one long synchronous step
const FILE_STEP_MS = 30000 + 20000 * 40;     // a file step's worst case (one 30 s window, slow machine)
// A stream step decodes one window (at most 12 s) and then answers pings again: beyond the
// heartbeat's silence, allow the worst case of a slow machine and a large model (10 s of
// compute per second of window). The full-size model needs about 0.3 s per second here.
const STREAM_STEP_MS_PER_SECOND = 10000;
const MAX_RESTARTS = 3;                      // engine workers restarted under one stream before it fails
const MAX_PENDING_S = 1200;                  // stream backlog that feed() refuses past (20 min of audio)
const LATENCIES = ["fast", "balanced", "battery"];   // the stream's named settings (engine StreamConfig.for_latency)
const PACES = ["exact", "live"];                     // every decode position, or the newest audio when behind
const CAPTURE_BLOCK = 2048;                  // captureNode(): samples per block the worklet posts
const RING_SECONDS = 30;                     // captureNode(), cross-origin isolated: audio the worker may lag by

/** An error from the engine or from misuse; `code` says which kind ("closed", "busy", "state",
 *  "sample-rate", "samples", "audio", "model-file", "model-digest", "model-fetch", "boot",
 *  "csp" (a Content-Security-Policy forbids WebAssembly), "server" (a file of the runtime is
 *  missing or served with the wrong type), "engine", "cancelled", "worker", "overrun", "webgpu"). */
export class PhononError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "PhononError";
    this.code = code;
  }
}

const checkRate = (rate) => {
  if (typeof rate === "string" && rate.trim() !== "" && Number.isFinite(Number(rate))) {
    throw new PhononError("sample-rate", `sample rate ${JSON.stringify(rate)} is a string: pass the number ` +
                          `(${Number(rate)}), e.g. audioContext.sampleRate, so a mistyped rate is never guessed at`);
  }
  if (!Number.isInteger(rate) || rate < RATE_MIN || rate > RATE_MAX) {
    throw new PhononError("sample-rate", `sample rate ${rate} is not supported: use an integer from ${RATE_MIN} to ${RATE_MAX} Hz`);
  }
};

function checkSamples(samples, what) {
  if (!(samples instanceof Float32Array)) {
    throw new PhononError("samples", `${what}: expected a Float32Array of samples, got ${Object.prototype.toString.call(samples)}`);
  }
  for (let i = 0; i < samples.length; i++) {
    if (!Number.isFinite(samples[i])) {
      throw new PhononError("samples", `${what}: sample ${i} is ${samples[i]} (NaN or infinite); nothing was added`);
    }
  }
}

// The wasm tiers, best first (engine/tiers.py via manifest.json), each with the smallest module
// using its instructions: the first that WebAssembly.validate accepts runs here.
export function bestTier(tiers) {
  const runs = (t) => !t.probe.length || WebAssembly.validate(Uint8Array.from(t.probe));
  const best = tiers.find(runs);
  return best ? best.name : "scalar";
}

// Only Recognizer.load() may construct (the constructor refuses anything else).
const LOADING = Symbol("Recognizer.load");

export class Recognizer extends EventTarget {
  /**
   * Start the engine worker and load a model.
   * options.base: the folder holding manifest.json (default: this module's folder).
   * options.model: undefined (the manifest's model), {url, sha256, size} (downloaded, checked,
   *   cached), a URL string (downloaded, not cached), or the model's bytes (ArrayBuffer,
   *   Uint8Array, Blob).
   * options.tier: the kernels' instruction set, "auto" (the best wasm tier) or a tier name
   *   ("webgpu" here is the deprecated spelling of backend "webgpu": honoured, with a warning).
   * options.backend: what runs the encoder (engine/executors/registry.py's names, BACKENDS):
   *   "webgpu": the encoder's linears on the GPU (WebGPU), the rest on the best wasm tier, once
   *   the adapter passed a known-answer check (the model's encoder on fixed features against
   *   the digest the build computed natively); no adapter, or one that fails it, rejects with
   *   code "webgpu". "kernel-workers": split across workers (a cross-origin-isolated page);
   *   "one-thread": the engine worker alone. "auto": the GPU when it is there, is not a
   *   CPU emulation (SwiftShader, llvmpipe, lavapipe: told by the adapter's info, before Python
   *   starts), passes the check, and encodes the check's 5.76 s faster than the best wasm tier
   *   (with the kernel workers it would have, at their best split); else the wasm tier. The
   *   timed verdict is kept (Cache Storage) per adapter, driver and model: a later visit does
   *   not time again, and one where the wasm tier was faster does not start the GPU at all.
   *   options.preferGpu: false keeps "auto" on the wasm tiers. A read-back the device does not
   *   finish in time (a watchdog) or a lost device (GPUDevice.lost, watched) moves the encoder to
   *   the CPU with the same bits ("gpu-lost"), and the kernel workers come back ("workers-back").
   *   r.backend: what runs the encoder; r.tier: the wasm tier ("webgpu" while the GPU runs: a
   *   deprecated value); r.tierNote: why (with the adapter's name and
   *   what was measured).
   *   options.threads: workers for the encoder (default: the
   *   cores up to 4 when the page is cross-origin isolated, the browser offers SharedArrayBuffer
   *   and the model is large; else 1, and r.threadsNote says why).
   * options.onProgress({stage, loaded?, total?}): "runtime", "engine", "model" (with bytes), "compile".
   * options.manifest: the parsed manifest.json, if the page has it already.
   * options.localModel: {sha256, name} of a model kept on this device by switchModel(); used
   *   instead of the manifest's if it is still stored (r.details.localNote says why not).
   * options.isolationNote: why the page is not cross-origin isolated, shown instead of the
   *   generic note when threads fall back to one.
   * options.silenceMs: a worker silent this long (outside known long steps) is declared dead
   *   (default 15000). options.debug: r.debug hooks; options.onWorkerMessage(message): every
   *   message of the engine worker, for tests and logs. options.gpuTestPatch (with debug, tests):
   *   a shader mutation of engine/executors/webgpu/mutations.py SHADER_MUTATIONS, so the check fails;
   *   options.gpuTestHardware (with debug, tests): a CPU emulation's adapter counts as hardware.
   *   options.gpuTestFaster (with debug, tests): the timed check takes the GPU as faster;
   */
  static async load(options = {}) {
    refuseOutsideAPage();
    const r = new Recognizer(LOADING);
    await r.#start(options);
    return r;
  }

  /** Private: a Recognizer comes from `await Recognizer.load(options)`, which starts its worker. */
  constructor(token) {
    super();
    if (token !== LOADING) {
      throw new PhononError("state", "new Recognizer() makes a recogniser with no engine: use " +
                            "`await Recognizer.load(options)`, which starts the engine worker and loads the model");
    }
  }

  #worker = null;
  #closed = false;
  #pending = null;           // the running transcribe: {resolve, reject, onProgress}
  #queue = Promise.resolve();
  #stream = null;            // the open Stream
  #streams = 0;              // ids: a cancelled stream's late messages never reach the next one
  #onProgress = null;
  #ready = null;             // {resolve, reject} during load
  #switching = null;         // {resolve, reject} during switchModel
  #captured = null;          // resolve of a debug captured() request
  #onWorkerMessage = null;
  #lastHeard = 0;
  #quietUntil = 0;           // a long synchronous step runs until then: silence is expected
  #heartbeat = 0;
  #silenceMs = 15000;
  #checkedAt = 0;            // the heartbeat's last round
  #pingedAt = null;          // the oldest ping not answered (by any message) when last looked
  #init = null;              // what a new worker is started with if this one dies mid-stream
  #workerUrl = null;
  #restartNote = null;       // why it cannot be (the model was given as bytes), or null
  #restarting = false;       // a new worker loads to resume the stream
  #capturedSoFar = null;     // (debug) the samples fed to workers that died, and where the
  #capturedFrom = 0;         // current worker's own begin (its resumed checkpoint's "from")

  /** The kernel tier ("webgpu" or a wasm tier) and why it runs (r.tierNote), encoder workers,
   *  why fewer run (or null), the model's name and notice. A GPU lost mid-decode: that decode
   *  finishes on the CPU with the same result, r.tier becomes the wasm tier, r.tierNote says so
   *  and a "gpu-lost" event ({message}) fires. */
  tier = null;
  /** The backend running the encoder (engine/executors/registry.py's name): "webgpu",
   *  "kernel-workers" or "one-thread". */
  backend = null;
  tierNote = null;
  threads = 1;
  threadsNote = null;
  model = null;
  timings = null;
  /** What the worker said when ready: modelSource ("network", "cache", "local-cache", "bytes"),
   *  cacheNote, localModel, localNote, heapBytes, timings, start ({snapshot: "restored", "made"
   *  or "none", note}: whether Python started from the snapshot an earlier visit kept). */
  details = null;
  /** The engine worker's wasm heap, and the kernel workers' wasm memory together (0 with one
   *  worker), as last reported. */
  heapBytes = null;
  kernelHeapBytes = null;

  async #start({ base, model, tier = "auto", backend = "auto", threads, onProgress, debug = false, manifest, localModel,
                 isolationNote, silenceMs = 15000, onWorkerMessage, preferGpu = true, gpuTestPatch,
                 gpuTestHardware = false, gpuTestFaster = false, snapshot = true } = {}) {
    if (!base && typeof import.meta.url !== "string") {
      throw new PhononError("boot", "Recognizer.load() was given no `base` and phonon.mjs cannot tell its own URL " +
                            "(import.meta.url is empty: it was bundled as a script, not an ES module - esbuild's " +
                            "default format, iife, does that). Bundle with --format=esm and load the bundle with " +
                            "<script type=\"module\">, or pass base: new URL(\"phonon-web/\", location.href), the folder " +
                            "its runtime files are served from");
    }
    base = new URL(base || "./", base ? location.href : import.meta.url);
    if (!base.href.endsWith("/")) base = new URL(base.href + "/");
    this.#onProgress = onProgress || null;
    this.#onWorkerMessage = onWorkerMessage || null;
    if (!manifest) manifest = await loadManifest(base);
    ({ tier, backend } = backendAndTier(backend, tier));
    const gpu = backend === "webgpu" ? { mode: "force" } : backend === "auto" && preferGpu !== false ? { mode: "prefer" } : null;
    if (gpu && debug && gpuTestPatch) gpu.patch = gpuTestPatch;
    if (gpu && debug && gpuTestHardware) gpu.hardware = true;
    if (gpu && debug && gpuTestFaster) gpu.faster = true;
    const init = { kind: TO_WORKER.INIT, manifest: { ...manifest }, tier: tier === "auto" ? bestTier(manifest.tiers) : tier,
                   debug, localModel: localModel || null, gpu, snapshot: snapshot !== false };
    if (debug) this.debug = this.#debugHooks();
    const known = manifest.tiers.map((t) => t.name);
    if (!known.includes(init.tier)) {
      throw new PhononError("state", `unknown tier ${JSON.stringify(tier)}: use "auto" or one of ${known.join(", ")} ` +
                            '(a tier is an instruction set; the GPU is backend: "webgpu")');
    }
    Object.assign(init, chooseThreads(threads, isolationNote, backend));
    const transfer = [];
    if (model !== undefined && model !== null) {
      if (typeof model === "string" || model instanceof URL) {
        init.modelBytes = await download(new URL(model, location.href));
      } else if (model instanceof Blob) {
        init.modelBytes = { name: model.name || "the model", bytes: await model.arrayBuffer() };
      } else if (model instanceof ArrayBuffer || ArrayBuffer.isView(model)) {
        const bytes = model instanceof ArrayBuffer ? model.slice(0) : model.buffer.slice(model.byteOffset, model.byteOffset + model.byteLength);
        init.modelBytes = { name: "the model", bytes };
      } else if (typeof model === "object" && model.url && model.sha256 && Number.isInteger(model.size)) {
        init.manifest.model = { url: new URL(model.url, location.href).href, sha256: model.sha256, size: model.size };
        await checkPinnedModel(init.manifest.model, base);
      } else {
        throw new PhononError("state", "model: expected a URL, {url, sha256, size}, or the model's bytes (ArrayBuffer, Uint8Array, Blob)");
      }
      if (init.modelBytes) transfer.push(init.modelBytes.bytes);
    }
    this.#silenceMs = silenceMs;
    this.#workerUrl = new URL("worker.mjs", base);
    this.#init = { ...init, modelBytes: undefined };
    if (init.modelBytes) this.#restartNote = "the model was given as bytes, which went to the worker";
    try {
      await this.#spawn(init, transfer);
    } catch (e) {
      this.close();
      throw e;
    }
  }

  // A new engine worker with `init`; resolves when its model is loaded ("ready").
  #spawn(init, transfer = []) {
    this.#worker = new Worker(this.#workerUrl, { type: "module" });
    const worker = this.#worker;
    let heard = false;
    // a worker whose module never finishes evaluating (an import that never answers) says
    // nothing at all, not even to a ping: that is a failed start, not a long step
    const firstWord = setTimeout(() => {
      if (worker === this.#worker && !heard) {
        this.#died(`the engine worker ${this.#workerUrl.href} said nothing in ${FIRST_WORD_MS / 1000} s after it ` +
                   "was started: its script, or a module it imports, did not load and run to its end");
      }
    }, FIRST_WORD_MS);
    worker.onmessage = ({ data }) => {
      heard = true;
      clearTimeout(firstWord);
      if (worker === this.#worker) this.#onMessage(data);
    };
    worker.onerror = (e) => {
      e.preventDefault();
      clearTimeout(firstWord);
      if (worker !== this.#worker) return;
      if (heard) return this.#died(e.message || "it failed");
      // the browser says only that a module worker failed to load: find which file and why
      whyModulesFail(this.#workerUrl).then((why) => {
        if (worker === this.#worker) this.#died(why || e.message || `the engine worker ${this.#workerUrl.href} failed to load`);
      });
    };
    worker.onmessageerror = () => { if (worker === this.#worker) this.#died("a message could not be read"); };
    const ready = new Promise((resolve, reject) => { this.#ready = { resolve, reject }; });
    worker.postMessage(init, transfer);
    this.#lastHeard = performance.now();
    this.#quietUntil = this.#lastHeard + LONG_STEP_MS;      // start-up has long synchronous steps
    this.#checkedAt = this.#lastHeard;
    this.#pingedAt = null;
    clearInterval(this.#heartbeat);
    this.#heartbeat = setInterval(() => this.#checkHeartbeat(this.#silenceMs), HEARTBEAT_MS);
    return ready;
  }

  /**
   * Transcribe a whole recording: a Float32Array of mono samples at `sampleRate`, a WebAudio
   * AudioBuffer (any channels and rate), or an encoded file (ArrayBuffer or Blob: WAV is read
   * by the engine, other formats are decoded by the browser). Calls run one after another. options.signal (AbortSignal) cancels;
   * options.onProgress({done, total}) reports seconds of audio done.
   * Resolves to {text, words: [{word, start, end}], tokens: [{id, frame, duration}], ...}.
   */
  transcribe(audio, sampleRate, options = {}) {
    try {
      return this.#transcribe(audio, sampleRate, options);
    } catch (e) {                                 // a mistake rejects the promise, never throws
      return Promise.reject(e);
    }
  }

  #transcribe(audio, sampleRate, { signal, onProgress, name } = {}) {
    this.#usable();
    let message;
    name = name || (audio && audio.name) || "audio";
    if (audio instanceof Float32Array) {
      checkRate(sampleRate);
      checkSamples(audio, "transcribe()");
      const pcm = audio.slice();
      message = [{ kind: TO_WORKER.FILE, name, pcm, rate: sampleRate, channels: 1 }, [pcm.buffer]];
    } else if (typeof AudioBuffer === "function" && audio instanceof AudioBuffer) {
      message = audioBufferMessage(audio, name);
    } else if (!(audio instanceof ArrayBuffer || audio instanceof Blob)) {
      throw new PhononError("audio", "transcribe(): expected a Float32Array (with its sample rate), an AudioBuffer, an ArrayBuffer or a Blob");
    }
    const run = async () => {
      this.#usable();
      if (signal && signal.aborted) throw new PhononError("cancelled", "the transcription was cancelled");
      if (!message) message = await encodedFile(audio, name);
      return new Promise((resolve, reject) => {
        const abort = () => this.#worker.postMessage({ kind: TO_WORKER.CANCEL_FILE });
        if (signal) signal.addEventListener("abort", abort, { once: true });
        const done = () => { this.#pending = null; if (signal) signal.removeEventListener("abort", abort); };
        this.#pending = { resolve: (v) => { done(); resolve(v); }, reject: (e) => { done(); reject(e); }, onProgress };
        this.#worker.postMessage(...message);
      });
    };
    const result = this.#queue.then(run, run);
    this.#queue = result.catch(() => {});
    return result;
  }

  /** A live stream: feed samples at `sampleRate` as they arrive; events "partial", "commit",
   *  "final", "pending" and "error". One stream at a time, not while a transcription runs. For
   *  capture on the audio thread, stream.takePort() hands the stream's MessagePort to an
   *  AudioWorklet (blocks {kind: "audio", samples}, then {kind: "end"}); with `ring` (a
   *  SharedArrayBuffer: int32 write, read and dropped counters, then float32 samples) the
   *  worklet writes there instead.
   *  Nothing fed is skipped: when decoding falls behind, every due decode still runs, in order,
   *  later. `pendingThreshold` (seconds, default 10): the "pending" event fires when
   *  stream.pending rises above it and when it falls back to half of it. `maxPending` (seconds,
   *  default 1200): feed() refuses (PhononError "overrun", nothing added) audio that would put
   *  decoding further behind. `latency` (default "fast"): a named setting, "fast" (a decode
   *  every 0.42 s: the most partials), "balanced" (about half the decoding for the same commit
   *  lag) or "battery" (fewer, later decodes); docs/streaming.md has what each costs. `pace`
   *  (default "exact"): "live" decodes at the newest audio when decoding falls behind, so the
   *  text stays about one decode behind the speaker on a slow device (the final's `jumps` list
   *  where it did; the native CLI's --replay reproduces the decodes from them). */
  stream({ sampleRate, ring = null, pendingThreshold = 10, maxPending = MAX_PENDING_S, latency = "fast",
           pace = "exact" } = {}) {
    this.#usable();
    checkRate(sampleRate);
    for (const [name, value, allowed] of [["latency", latency, LATENCIES], ["pace", pace, PACES]]) {
      if (!allowed.includes(value)) {
        throw new PhononError("state", `${name} must be one of ${allowed.map((v) => `"${v}"`).join(", ")}, got ${JSON.stringify(value)}`);
      }
    }
    for (const [name, value, least] of [["pendingThreshold", pendingThreshold, 0], ["maxPending", maxPending, 1]]) {
      if (typeof value !== "number" || !(value > least || (least && value === least)) || value > 3600) {
        throw new PhononError("state", `${name} must be a number of seconds in ${least ? "[1" : "(0"}, 3600], got ${value}`);
      }
    }
    this.#streamMayOpen();
    const channel = new MessageChannel(), id = ++this.#streams;
    this.#capturedSoFar = null;
    this.#capturedFrom = 0;
    const stream = new Stream(channel.port1, sampleRate, () => {
      if (!this.#restarting) this.#worker.postMessage({ kind: TO_WORKER.CANCEL_STREAM });
      if (this.#stream === stream) this.#stream = null;
    }, { pendingThreshold, maxPending });
    stream.id = id;
    this.#stream = stream;
    // the worker's bound is the backstop for worklet audio; feed() holds the page to maxPending,
    // and the slack keeps a chunk feed() admitted (by the worker's last, rounded report) from
    // being refused there
    stream.startMessage = { kind: TO_WORKER.START, rate: sampleRate, ring, id, maxPending: maxPending + 1, latency, pace };
    this.#worker.postMessage({ ...stream.startMessage, port: channel.port2 }, [channel.port2]);
    return stream;
  }

  /** Live transcription of a microphone: `media` is a MediaStream (getUserMedia). An
   *  AudioWorklet (capture-worklet.mjs, beside worker.mjs) sends its samples to the engine
   *  worker from the audio thread, at the AudioContext's rate (through a SharedArrayBuffer ring
   *  when the page is cross-origin isolated), and feeds a restarted worker what it lost.
   *  Resolves to the Stream (events "partial", "commit", "final", ...): `await stream.finish()`
   *  stops the capture after its last block and resolves to the final; `cancel()` stops it too.
   *  The stream's `transport` says how the samples travel ("shared-ring" or "transfer"), and its
   *  "capture-stopped" event (detail {sent}: every sample the worklet sent) says when the
   *  microphone may be released. The tracks stay the caller's (stop them when done). options.context: an AudioContext to
   *  use (else one is made, and closed when the stream ends); pendingThreshold, maxPending,
   *  latency and pace as for stream(), but a microphone's defaults: latency "balanced", pace
   *  "live". */
  async listen(media, { context = null, pendingThreshold = 10, maxPending = MAX_PENDING_S, latency = "balanced",
                        pace = "live" } = {}) {
    this.#usable();
    if (typeof MediaStream === "undefined" || !(media instanceof MediaStream) || !media.getAudioTracks().length) {
      throw new PhononError("state", "listen(media): expected a MediaStream with an audio track " +
                            "(await navigator.mediaDevices.getUserMedia({ audio: true }))");
    }
    if (typeof AudioWorkletNode === "undefined") {
      throw new PhononError("unsupported", "listen(): this browser has no AudioWorklet; feed samples to r.stream() instead");
    }
    this.#streamMayOpen();
    const own = !context;
    if (own) context = new AudioContext({ latencyHint: "interactive" });
    let node = null, source = null, stream = null;
    try {
      let ring;
      ({ node, ring } = await captureNode(context, new URL("capture-worklet.mjs", this.#workerUrl)));
      stream = this.stream({ sampleRate: context.sampleRate, ring, pendingThreshold, maxPending, latency, pace });
      const port = stream.takePort((next, from) => node.port.postMessage({ kind: CAPTURE.CONNECT, port: next, from }, [next]));
      node.port.postMessage({ kind: CAPTURE.CONNECT, port }, [port]);
      source = context.createMediaStreamSource(media);
      source.connect(node).connect(context.destination);      // a silent output keeps the node pulled
      if (context.state !== "running") await context.resume();
      let closed = false;
      node.port.onmessage = ({ data }) => { if (data.kind === CAPTURE.STOPPED) stream._captureStopped(data.sent); };
      stream._capture({
        transport: ring ? "shared-ring" : "transfer",
        stop: () => node.port.postMessage({ kind: CAPTURE.STOP }),   // the last block, then "end"
        close: () => {                                          // after the final: a restarted worker is fed until then
          if (closed) return;
          closed = true;
          source.disconnect();
          node.disconnect();
          if (own) context.close();
        },
      });
      return stream;
    } catch (e) {
      if (source) source.disconnect();
      if (node) node.disconnect();
      if (stream) stream.cancel();              // this call's stream only: another may have opened meanwhile
      if (own) context.close();
      throw e instanceof PhononError ? e : new PhononError("unsupported", `listen(): the capture could not start: ${e.message}`);
    }
  }

  /** Use another model (a .gguf's bytes): the engine's loader checks it first and the model in
   *  use stays if it fails (PhononError "model-file"). It is kept on this device (Cache Storage);
   *  the result's {sha256, file} reopen it with load({localModel}). Resolves to {file, size,
   *  sha256, cacheNote, name, notice, tier, threads, threadsNote}. */
  switchModel(bytes, name = "model.gguf") {
    this.#usable();
    if (this.#stream || this.#pending || this.#switching) {
      return Promise.reject(new PhononError("busy", "switchModel() while a stream, a transcription or another switch runs"));
    }
    if (!(bytes instanceof ArrayBuffer)) return Promise.reject(new PhononError("model-file", "switchModel(): expected an ArrayBuffer"));
    this.#quietUntil = performance.now() + LONG_STEP_MS;
    return new Promise((resolve, reject) => {
      this.#switching = { resolve, reject };
      this.#worker.postMessage({ kind: TO_WORKER.OPEN_MODEL, name, bytes }, [bytes]);
    });
  }

  #debugHooks() {
    return {
      post: (message) => this.#worker.postMessage(message),
      /** every sample the last stream fed the engine, in order */
      captured: () => new Promise((resolve) => {
        this.#captured = resolve;
        this.#worker.postMessage({ kind: TO_WORKER.CAPTURED });
      }),
      /** the engine worker dies (the heartbeat must notice) */
      terminateWorker: () => { this.#worker.terminate(); this.#worker.onmessage = null; },
      /** the engine worker hands its captured samples over, then stops answering (it dies; a
       *  stream then restarts, and captured() still gives every sample the stream was fed) */
      crashWorker: () => this.#worker.postMessage({ kind: TO_WORKER.CRASH }),
    };
  }

  // The worker is dead when a ping sent while this page was awake goes unanswered for
  // silenceMs (outside known long steps). "Awake" matters: a hidden tab's timers run once a
  // minute and a stalled page runs none, so the time since the worker was last heard says
  // nothing about the worker then (an idle worker speaks only when pinged); such a late round
  // judges nothing and pings afresh.
  #checkHeartbeat(silenceMs) {
    const now = performance.now();
    const slept = now - this.#checkedAt > 3 * HEARTBEAT_MS;
    this.#checkedAt = now;
    const unanswered = this.#pingedAt !== null && this.#lastHeard < this.#pingedAt;
    if (!slept && unanswered && now - this.#pingedAt > silenceMs && now > this.#quietUntil) {
      return this.#died("it stopped responding");
    }
    if (slept || !unanswered) this.#pingedAt = now;      // the oldest ping still unanswered
    this.#worker.postMessage({ kind: TO_WORKER.PING });
  }

  /** Stop the engine worker and free its memory; every later call throws. */
  close() {
    this.#shutdown(new PhononError("closed", "the recognizer was closed"));
  }

  // The worker stops; whatever waits on it (a transcription, a switch, a stream) fails with
  // `error`: the real reason when the worker died or failed, "closed" when the caller closed.
  #shutdown(error) {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#heartbeat);
    if (this.#worker) this.#worker.terminate();
    if (this.#pending) this.#pending.reject(error);
    if (this.#switching) this.#switching.reject(error);
    if (this.#stream) this.#stream._fail(error);
    this.#pending = this.#switching = this.#stream = null;
  }

  get closed() { return this.#closed; }

  // One stream at a time, and not beside a transcription.
  #streamMayOpen() {
    if (this.#stream) throw new PhononError("busy", "a stream is already open: finish() or cancel() it first");
    if (this.#pending) throw new PhononError("busy", "a transcription is running: await it or cancel it first");
  }

  #usable() {
    if (this.#closed) throw new PhononError("closed", "the recognizer is closed: load a new one");
  }

  #died(why) {
    if (this.#closed) return;
    const stream = this.#stream;
    const cannot = this.#restarting ? "it died again while it restarted"
      : this.#ready ? "it died while loading" : stream && (this.#restartNote || stream._unresumable());
    if (stream && !cannot) return this.#restart(why, stream);
    if (stream && cannot) why = `${why}; the stream could not go on in a new worker: ${cannot}`;
    const error = new PhononError("worker", why);
    if (this.#ready) this.#ready.reject(error);
    this.#ready = null;
    this.#shutdown(error);
    this.dispatchEvent(new CustomEvent("error", { detail: error }));
  }

  // The engine worker died mid-stream: a new one loads the same model (from the cache: seconds)
  // and resumes the stream from its newest checkpoint; the feeder sends it the input it kept
  // from there (the audio of the restart included). "restart" then "restarted" events say so.
  async #restart(why, stream) {
    this.#restarting = true;
    const old = this.#worker;
    old.onmessage = old.onerror = old.onmessageerror = null;
    old.terminate();
    const started = performance.now();
    const detail = { message: `The engine stopped (${why}); restarting it, and the stream goes on from its committed text.`,
                     reason: why, attempt: stream.restarts + 1 };
    this.dispatchEvent(new CustomEvent("restart", { detail }));
    const model = this.model;
    try {
      await this.#spawn(this.#init);
      if (this.model && model && this.model.name !== model.name) {
        throw new PhononError("worker", `the new worker loaded ${this.model.name}, not ${model.name}`);
      }
    } catch (e) {
      this.#restarting = false;
      return this.#died(`${why}; the new worker did not start (${e.message})`);
    }
    this.#restarting = false;
    if (this.#closed || this.#stream !== stream) return;            // cancelled meanwhile
    const channel = new MessageChannel();
    this.#worker.postMessage({ ...stream.startMessage, port: channel.port2, resume: stream._resumeState() }, [channel.port2]);
    this.#capturedFrom = stream._resumeFrom();
    const done = { ...detail, message: `The engine stopped (${why}) and was restarted in ` +
                   `${((performance.now() - started) / 1000).toFixed(1)} s; the stream goes on, nothing committed was lost.`,
                   seconds: (performance.now() - started) / 1000 };
    stream._reconnect(channel.port1, done);
    this.dispatchEvent(new CustomEvent("restarted", { detail: done }));
  }

  // (debug) The samples a stream was fed across worker restarts: the dead workers' up to the
  // current one's resumed checkpoint, then the current one's.
  #withCapturedSoFar(samples) {
    if (!this.#capturedSoFar) return samples;
    const all = new Float32Array(this.#capturedFrom + samples.length);
    all.set(this.#capturedSoFar.subarray(0, this.#capturedFrom));
    all.set(samples, this.#capturedFrom);
    return all;
  }

  #current(id) {
    return this.#stream !== null && this.#stream.id === id;
  }

  #onMessage(data) {
    this.#lastHeard = performance.now();
    if (this.#onWorkerMessage && data.kind !== TO_PAGE.PONG && data.kind !== TO_PAGE.CAPTURED) this.#onWorkerMessage(data);
    if (data.heapBytes) this.heapBytes = data.heapBytes;
    if (data.kernelHeapBytes !== undefined) this.kernelHeapBytes = data.kernelHeapBytes;
    switch (data.kind) {
      case TO_PAGE.STAGE:
        if (data.stage === "compile") this.#quietUntil = this.#lastHeard + LONG_STEP_MS;
        if (this.#onProgress && !this.#restarting) this.#onProgress({ stage: data.stage });
        return;
      case TO_PAGE.PROGRESS:
        if (this.#onProgress && !this.#restarting) this.#onProgress({ stage: "model", loaded: data.loaded, total: data.total, source: data.source });
        return;
      case TO_PAGE.READY:
        this.#quietUntil = 0;
        Object.assign(this, { tier: data.tier, backend: data.backend, tierNote: data.tierNote || null, threads: data.threads,
                              threadsNote: data.threadsNote, model: data.model, timings: data.timings, details: data });
        this.#ready.resolve();
        this.#ready = null;
        return;
      case TO_PAGE.MODEL_SWITCHED: {
        this.#quietUntil = 0;
        const { kind, ...info } = data;
        Object.assign(this, { tier: data.tier, backend: data.backend, tierNote: data.tierNote || null, threads: data.threads,
                              threadsNote: data.threadsNote,
                              model: { name: data.name, notice: data.notice, tier: data.tier, backend: data.backend,
                                       threads: data.threads } });
        const switching = this.#switching;
        this.#switching = null;
        // a restart loads this model (kept on the device), or cannot: nothing to load it from
        this.#init.localModel = data.cacheNote ? null : { sha256: data.sha256, name: data.file };
        this.#restartNote = data.cacheNote ? `the model ${data.file} could not be kept on this device` : null;
        return switching && switching.resolve(info);
      }
      case TO_PAGE.FILE_BUSY:
        this.#quietUntil = this.#lastHeard + FILE_STEP_MS;
        if (this.#pending && this.#pending.onProgress) {
          this.#pending.reported = 0;
          this.#pending.onProgress({ done: 0, total: data.seconds });
        }
        return;
      case TO_PAGE.FILE_PROGRESS: {
        this.#quietUntil = this.#lastHeard + FILE_STEP_MS;
        // a step that only read audio finishes no window: the same `done` again is not reported
        const pending = this.#pending;
        if (pending && pending.onProgress && data.done !== pending.reported) {
          pending.reported = data.done;
          pending.onProgress({ done: data.done, total: data.total });
        }
        return;
      }
      case TO_PAGE.FILE_RESULT:
        this.#quietUntil = 0;
        return this.#pending && this.#pending.resolve(data.result);
      case TO_PAGE.FILE_CANCELLED:
        this.#quietUntil = 0;
        return this.#pending && this.#pending.reject(new PhononError("cancelled", "the transcription was cancelled"));
      case TO_PAGE.CAPTURED: {
        const resolve = this.#captured;
        this.#captured = null;
        return resolve && resolve(this.#withCapturedSoFar(data.samples));
      }
      case TO_PAGE.CAPTURED_BEFORE_CRASH:
        this.#capturedSoFar = this.#withCapturedSoFar(data.samples);
        return;
      case TO_PAGE.PONG: return;
      case TO_PAGE.STARTED: return this.#current(data.id) && this.#stream._started(data.checkpoint);
      case TO_PAGE.DECODING:                         // a decode starts that no partial announced
      case TO_PAGE.PARTIAL:
        // the worker decodes a window of nextWindowSeconds next and answers pings only after it
        // (0: nothing due, the plain heartbeat applies again)
        this.#quietUntil = data.nextWindowSeconds > 0
          ? this.#lastHeard + this.#silenceMs + STREAM_STEP_MS_PER_SECOND * data.nextWindowSeconds : 0;
        if (data.kind === TO_PAGE.DECODING) return;
        return this.#current(data.id) && this.#stream._partial(data.view, data.metrics, data.checkpoint);
      case TO_PAGE.FINAL: {
        if (!this.#current(data.id)) return;
        const stream = this.#stream;
        this.#stream = null;
        return stream._final(data.result, data.metrics);
      }
      case TO_PAGE.STREAM_CANCELLED: return;
      case TO_PAGE.GPU_LOST:
        Object.assign(this, { tier: data.tier, backend: data.backend, tierNote: data.tierNote });
        this.dispatchEvent(new CustomEvent("gpu-lost", { detail: { message: data.message, tier: data.tier, backend: data.backend } }));
        return;
      case TO_PAGE.WORKERS_BACK:
        Object.assign(this, { threads: data.threads, backend: data.backend, threadsNote: data.threadsNote });
        this.dispatchEvent(new CustomEvent("workers-back", { detail: { threads: data.threads, backend: data.backend } }));
        return;
      case TO_PAGE.WORKERS_LOST:
        this.threads = data.threads;
        this.dispatchEvent(new CustomEvent("workers-lost", { detail: { message: data.message, threads: data.threads } }));
        return;
      case TO_PAGE.ERROR: {
        const error = new PhononError(data.code === "file" ? "audio" : data.code, data.message);
        if (data.code === "overrun") return this.#current(data.id) && this.#stream._error(error);
        this.#quietUntil = 0;
        if (data.code === "model-file" && this.#switching) {
          const switching = this.#switching;
          this.#switching = null;
          return switching.reject(error);
        }
        if (this.#pending) return this.#pending.reject(error);
        return this.dispatchEvent(new CustomEvent("error", { detail: error }));
      }
      case TO_PAGE.FATAL: {
        const error = new PhononError(data.code, data.message);
        error.detail = data.detail || null;
        if (this.#ready) { this.#ready.reject(error); this.#ready = null; return; }
        this.#shutdown(error);
        this.dispatchEvent(new CustomEvent("error", { detail: error }));
        return;
      }
      default: return;
    }
  }
}

/** A live stream (Recognizer.stream). Events: "partial" {committed: all committed text,
 *  tentative, tentativeWords, committedWords: how many, audio_seconds, metrics}, "commit"
 *  {words: the newly committed ones, added: what the committed text grew by, committed: all
 *  committed text}, "final" (the
 *  result of finish()), "pending" {seconds, over} (stream.pending crossed pendingThreshold:
 *  over = true above it, false once back at half of it), "error" (a PhononError "overrun": the
 *  worker refused audio from an AudioWorklet because decoding was maxPending behind). */
export class Stream extends EventTarget {
  #port; #state = "open"; #cancel; #final = null;
  #text = ""; #words = [];     // the committed transcript: the worker sends each word once (a poll
                               // carries what changed), so this is its only whole copy
  #tokens = new Int32Array(3 * 1024);   // ... and its tokens, [id, frame, duration] each
  #tokenCount = 0;
  #checkpoint = null;          // the worker's newest checkpoint: a new worker resumes from it
  #kept = [];                  // feed()'s input from the checkpoint's "from" on: [{at, samples}]
  #onReconnect = null;         // takePort(onReconnect): hands a new worker's port to the worklet
  #capture = null;             // listen(): {stop, close} of the microphone's worklet
  restarts = 0;                // the engine workers restarted under this stream
  #fed = 0;                    // samples given to feed() (at sampleRate)
  #report = { fedSeconds: 0, pending: 0 };   // the worker's last word: audio it has, audio undecoded
  #over = false;               // stream.pending is above pendingThreshold (the "pending" event)
  #waiters = [];               // pendingBelow() promises: {seconds, resolve, reject}
  constructor(port, sampleRate, cancel, { pendingThreshold = 10, maxPending = MAX_PENDING_S } = {}) {
    super();
    this.#port = port;
    this.#cancel = cancel;
    this.sampleRate = sampleRate;
    this.pendingThreshold = pendingThreshold;
    this.maxPending = maxPending;
    this.#final = {};
    this.#final.promise = new Promise((resolve, reject) => { this.#final.resolve = resolve; this.#final.reject = reject; });
    this.#final.promise.catch(() => {});
    this.#listen(port);
  }

  /** The stream's MessagePort, to transfer to an AudioWorklet that feeds it from the audio
   *  thread (feed() is then refused; the worklet ends the stream with {kind: "end"}).
   *  onReconnect(port, from): if the engine worker dies, a new one resumes the stream and this
   *  is called with its port; the worklet must feed it its input from sample `from` (counted
   *  from the stream's first), then go on (capture-worklet.mjs keeps that input: the worker
   *  posts {kind: "retain", from} on the port as it may drop older input). Without it, a dead
   *  worker ends the stream with an error. */
  takePort(onReconnect = null) {
    this.#open("takePort()");
    if (!this.#port) throw new PhononError("state", "takePort(): the port was taken already");
    if (onReconnect !== null && typeof onReconnect !== "function") {
      throw new PhononError("state", "takePort(onReconnect): expected a function(port, from)");
    }
    const port = this.#port;
    port.onmessage = null;
    this.#port = null;
    this.#kept = [];
    this.#onReconnect = onReconnect;
    return port;
  }

  // The worker's messages to the feeder: "retain" trims the input kept for a restart.
  #listen(port) {
    port.onmessage = ({ data }) => {
      if (data.kind !== FEED.RETAIN) return;
      while (this.#kept.length && this.#kept[0].at + this.#kept[0].samples.length <= data.from) this.#kept.shift();
    };
  }

  /** Add samples (a Float32Array at the stream's rate). Never waits for a decode. Throws
   *  PhononError "overrun" (nothing added) if they would put decoding more than maxPending
   *  seconds behind: feed them again after `await stream.pendingBelow(s)`. */
  feed(samples) {
    this.#open("feed()");
    if (!this.#port) throw new PhononError("state", "feed(): this stream's port was handed to an audio worklet, which feeds it");
    checkSamples(samples, "feed()");
    const seconds = samples.length / this.sampleRate;
    if (this.pending + seconds > this.maxPending) {
      throw new PhononError("overrun", `feed(): ${this.pending.toFixed(1)} s of audio wait to be decoded and these ` +
        `${seconds.toFixed(2)} s would pass maxPending (${this.maxPending} s); nothing was added: await ` +
        "stream.pendingBelow(seconds) and feed them again (decoding is slower than the audio arrives)");
    }
    const copy = samples.slice();
    this.#kept.push({ at: this.#fed, samples: samples.slice() });   // until the worker no longer needs it
    this.#port.postMessage({ kind: FEED.AUDIO, samples: copy }, [copy.buffer]);
    this.#fed += samples.length;
    this.#notePending();
  }

  /** Seconds of audio fed but not yet decoded: what is still in transit to the worker plus what
   *  waits there (as of its last report). Under a second while decoding keeps up. */
  get pending() {
    const inTransit = Math.max(0, this.#fed / this.sampleRate - this.#report.fedSeconds);
    return inTransit + this.#report.pending;
  }

  /** Resolves once stream.pending is at most `seconds` (at once if it is); rejects if the
   *  stream ends first. For pacing a recording: feed, and await this when pending grows. */
  pendingBelow(seconds) {
    if (typeof seconds !== "number" || !(seconds >= 0)) {
      return Promise.reject(new PhononError("state", `pendingBelow(): expected seconds >= 0, got ${seconds}`));
    }
    if (this.pending <= seconds) return Promise.resolve();
    if (this.#state !== "open" && this.#state !== "finishing") {
      return Promise.reject(new PhononError("state", `pendingBelow() after the stream ${this.#state === "finished" ? "finished" : "ended"}`));
    }
    return new Promise((resolve, reject) => this.#waiters.push({ seconds, resolve, reject }));
  }

  #notePending() {
    const pending = this.pending;
    if (!this.#over && pending > this.pendingThreshold) {
      this.#over = true;
      this.dispatchEvent(new CustomEvent("pending", { detail: { seconds: pending, over: true } }));
    } else if (this.#over && pending <= this.pendingThreshold / 2) {
      this.#over = false;
      this.dispatchEvent(new CustomEvent("pending", { detail: { seconds: pending, over: false } }));
    }
    const ready = this.#waiters.filter((w) => pending <= w.seconds);
    this.#waiters = this.#waiters.filter((w) => pending > w.seconds);
    for (const w of ready) w.resolve();
  }

  #endWaiters(error) {
    for (const w of this.#waiters.splice(0)) error ? w.reject(error) : w.resolve();
  }

  /** Decode what is left and resolve to the final {text, words, tokens, audio_seconds, metrics}
   *  (again the same on a second call; rejects with "cancelled" after cancel()). */
  finish() {
    if (this.#state === "open") {
      this.#state = "finishing";
      if (this.#port) this.#port.postMessage({ kind: FEED.END });      // else the worklet sends it
      else if (this.#capture) this.#capture.stop();
    }
    return this.#final.promise;
  }

  // listen()'s capture: stopped by finish() and cancel(), closed once the stream has ended.
  _capture(capture) {
    this.#capture = capture;
    const close = () => capture.close();
    this.#final.promise.then(close, close);
  }

  /** listen(): how the microphone's samples reach the engine worker ("shared-ring" or
   *  "transfer"); null for a stream fed by feed(). */
  get transport() {
    return this.#capture ? this.#capture.transport : null;
  }

  _captureStopped(sent) {
    this.dispatchEvent(new CustomEvent("capture-stopped", { detail: { sent } }));
  }

  /** Drop the stream: nothing more is decoded; finish() rejects. */
  cancel() {
    if (this.#state !== "open" && this.#state !== "finishing") return;
    this.#state = "cancelled";
    this.#kept = [];
    if (this.#capture) this.#capture.stop();
    this.#endWaiters(new PhononError("cancelled", "the stream was cancelled"));
    this.#cancel();
    this.#final.reject(new PhononError("cancelled", "the stream was cancelled"));
  }

  get state() { return this.#state; }

  /** Everything committed so far: {text, words: [{word, start, end}]} (a copy; the words
   *  committed later are not in it). After finish(): the final transcript's. */
  transcript() {
    return { text: this.#text, words: this.#words.slice() };
  }

  #open(what) {
    if (this.#state !== "open") {
      const after = { finishing: "finish()", finished: "finish()", cancelled: "cancel()", failed: "an error" }[this.#state];
      throw new PhononError("state", `${what} after ${after}: open a new stream`);
    }
  }

  _partial(view, metrics, checkpoint) {
    if (this.#state === "cancelled") return;
    this.#report = { fedSeconds: metrics.fed_seconds || 0, pending: metrics.pending_seconds || 0 };
    this.#notePending();
    for (const t of view.added_tokens) this.#addToken(t);
    if (checkpoint) this.#checkpoint = checkpoint;
    if (view.added_words.length) {
      for (const w of view.added_words) this.#words.push(w);
      this.#text += view.added_text;
      this.dispatchEvent(new CustomEvent("commit", { detail: { words: view.added_words, added: view.added_text, committed: this.#text } }));
    }
    this.dispatchEvent(new CustomEvent("partial", { detail: {
      committed: this.#text, tentative: view.tentative, tentativeWords: view.tentative_words,
      committedWords: this.#words.length, audio_seconds: view.audio_seconds, metrics } }));
  }

  #addToken({ id, frame, duration }) {
    if (3 * this.#tokenCount === this.#tokens.length) {
      const grown = new Int32Array(2 * this.#tokens.length);
      grown.set(this.#tokens);
      this.#tokens = grown;
    }
    this.#tokens.set([id, frame, duration], 3 * this.#tokenCount++);
  }

  _started(checkpoint) {
    if (checkpoint) this.#checkpoint = checkpoint;
  }

  // Why a new worker could not resume this stream, or null.
  _unresumable() {
    if (this.#state !== "open" && this.#state !== "finishing") return `the stream ${this.#state === "failed" ? "failed" : "ended"}`;
    if (!this.#checkpoint) return "the worker died before the stream started";
    if (!this.#port && !this.#onReconnect) return "its audio comes from a worklet given no onReconnect (stream.takePort)";
    if (this.restarts >= MAX_RESTARTS) return `the engine worker died ${this.restarts + 1} times in this stream`;
    return null;
  }

  _resumeFrom() { return this.#checkpoint.from; }

  // What the new worker's "start" carries: the newest checkpoint and the words committed up to it.
  _resumeState() {
    const tokens = [];
    for (let i = 0; i < this.#tokenCount; i++) {
      tokens.push({ id: this.#tokens[3 * i], frame: this.#tokens[3 * i + 1], duration: this.#tokens[3 * i + 2] });
    }
    return JSON.stringify({ ...this.#checkpoint, prefix: { text: this.#text, words: this.#words, tokens } });
  }

  // A new worker resumed the stream on `port`: the input from the checkpoint's "from" goes to
  // it again (what the dead worker was sent after that was lost with it), then the audio goes on.
  _reconnect(port, restart) {
    const from = this.#checkpoint.from;
    this.restarts += 1;
    if (this.#onReconnect) {
      this.#onReconnect(port, from);
    } else {
      if (this.#port) this.#port.close();
      this.#port = port;
      this.#listen(port);
      for (const { at, samples } of this.#kept) {
        if (at + samples.length <= from) continue;
        const copy = samples.slice(Math.max(0, from - at));
        port.postMessage({ kind: FEED.AUDIO, samples: copy }, [copy.buffer]);
      }
      if (this.#state === "finishing") port.postMessage({ kind: FEED.END });
    }
    this.dispatchEvent(new CustomEvent("restarted", { detail: restart }));
  }

  _final(result, metrics) {
    if (this.#state === "cancelled") return;
    this.#state = "finished";
    this.#kept = [];
    this.#report = { fedSeconds: this.#fed / this.sampleRate, pending: 0 };
    this.#endWaiters(null);
    const final = { ...result, metrics };
    const words = result.words.slice(this.#words.length);
    const added = result.text.slice(this.#text.length);       // the final text extends the committed one
    this.#text = result.text;
    this.#words = result.words.slice();
    if (words.length) this.dispatchEvent(new CustomEvent("commit", { detail: { words, added, committed: result.text } }));
    this.dispatchEvent(new CustomEvent("final", { detail: final }));
    this.#final.resolve(final);
  }

  _fail(error) {
    if (this.#state === "finished" || this.#state === "cancelled") return;
    this.#state = "failed";
    this.#kept = [];
    this.#endWaiters(error);
    this.#final.reject(error);
  }

  _error(error) {
    if (this.#state === "cancelled") return;
    this.dispatchEvent(new CustomEvent("error", { detail: error }));
  }
}

// Node, Deno or a server-side render has no page to run the engine worker from: say so, instead
// of failing later to fetch manifest.json. (A module imported there is fine: only load() refuses.)
function refuseOutsideAPage() {
  if (typeof Worker === "function" && typeof location === "object" && location !== null) return;
  const where = typeof process === "object" && process && process.versions && process.versions.node
    ? `Node ${process.versions.node}` : "this JavaScript runtime";
  throw new PhononError("boot", `Recognizer.load() runs in a web browser, and ${where} is not one (no page, no Web ` +
                        "Workers to run the engine in). In a server-side rendered app, call it in the browser only " +
                        "(for example in React's useEffect or Svelte's onMount)");
}

// The backends a page can ask for by name (engine/executors/registry.py's, those a browser has):
// "auto" picks as the registry does (the GPU when it is real, right and faster; else kernel
// workers where memory is shared and the model is large; else one worker).
export const BACKENDS = ["auto", "webgpu", "kernel-workers", "one-thread"];
let warnedTierWebgpu = false;

// ({backend, tier}) checked; the old spelling tier: "webgpu" becomes backend "webgpu" (with a
// warning, once per page: a tier is an instruction set, the GPU is a backend).
function backendAndTier(backend, tier) {
  if (!BACKENDS.includes(backend)) {
    throw new PhononError("state", `unknown backend ${JSON.stringify(backend)}: use one of ${BACKENDS.join(", ")}`);
  }
  if (tier !== "webgpu") return { backend, tier };
  if (backend !== "auto" && backend !== "webgpu") {
    throw new PhononError("state", `tier "webgpu" (the old spelling of backend "webgpu") contradicts backend ${JSON.stringify(backend)}`);
  }
  if (!warnedTierWebgpu) {
    warnedTierWebgpu = true;
    console.warn('phonon-web: tier: "webgpu" is deprecated, use backend: "webgpu" (a tier names an instruction set); ' +
                 "it is still honoured and will be removed in the next major version");
  }
  return { backend: "webgpu", tier: "auto" };
}

// Encoder workers: the cores (up to 4) when workers can share memory, else one (and why: the
// page is not cross-origin isolated, or - WebKit as shipped - it is, and the browser still
// offers no SharedArrayBuffer).
// A backend named by the page fixes the count: "one-thread" one, "kernel-workers" two or more.
function chooseThreads(threads, isolationNote, backend = "auto") {
  if (threads !== undefined) {
    if (!Number.isInteger(threads) || threads < 1 || threads > 8) {
      throw new PhononError("state", `threads must be an integer from 1 to 8, got ${threads}`);
    }
  }
  const missing = !self.crossOriginIsolated
    ? isolationNote || "one worker: this page is not cross-origin isolated (no COOP/COEP headers), so workers cannot share memory"
    : typeof SharedArrayBuffer === "undefined"
      ? "one worker: this browser offers no SharedArrayBuffer, even to this cross-origin-isolated page, so workers cannot share memory"
      : null;
  const cores = Math.min(navigator.hardwareConcurrency || 1, 4);     // the default: the cores, up to 4
  if (backend === "one-thread") {
    if (threads > 1) throw new PhononError("state", `backend "one-thread" runs the encoder on one worker, but threads is ${threads}`);
    return { threads: 1, threadsForced: true, threadsNote: null };
  }
  if (backend === "kernel-workers") {
    if (threads === 1) throw new PhononError("state", 'backend "kernel-workers" splits the encoder across workers: threads must be 2 or more');
    if (missing) throw new PhononError("state", `backend "kernel-workers" needs workers that share memory, and this page has none (${missing.replace(/^one worker: /, "")})`);
    return { threads: threads || Math.max(2, cores), threadsForced: true, threadsNote: null };
  }
  const wanted = threads || cores;
  // the worker decides: a model too small to split runs on one worker whatever the page offers,
  // and that, not the missing isolation, is then the reason r.threadsNote gives
  return { threads: wanted, threadsForced: threads !== undefined, threadsNote: wanted > 1 ? missing : null };
}

/** The microphone's capture node in `context`: capture-worklet.mjs (from workletUrl) as a mono
 *  AudioWorkletNode (WebAudio down-mixes) that posts blocks of CAPTURE_BLOCK samples, or, when
 *  the page is cross-origin isolated, writes into a SharedArrayBuffer ring holding RING_SECONDS
 *  -> {node, ring} (ring null without). Recognizer.listen() and the demo app capture with it. */
export async function captureNode(context, workletUrl) {
  await context.audioWorklet.addModule(workletUrl);
  const ring = makeRing(context.sampleRate, RING_SECONDS);
  const node = new AudioWorkletNode(context, "phonon-capture", {
    numberOfInputs: 1, numberOfOutputs: 1, outputChannelCount: [1],
    channelCount: 1, channelCountMode: "explicit", channelInterpretation: "speakers",
    processorOptions: { blockSize: CAPTURE_BLOCK, ring },
  });
  return { node, ring };
}

// Why a module worker failed to load, or null: worker.mjs and the modules it imports (found in
// their text: `from "./x.mjs"`), each fetched as the worker would; the first missing one, or one
// not served as JavaScript, is named with the host's answer.
async function whyModulesFail(workerUrl) {
  const seen = new Set(), queue = [workerUrl.href];
  const fix = "serve every file of the package's folder, .mjs as text/javascript";
  while (queue.length) {
    const url = queue.shift();
    if (seen.has(url)) continue;
    seen.add(url);
    let response, text;
    try {
      response = await fetch(url, { cache: "no-store" });
      text = response.ok ? await response.text() : "";
    } catch (e) {
      return `the engine worker did not start: ${url} could not be fetched (${e.message})`;
    }
    if (!response.ok) return `the engine worker did not start: ${url} answered HTTP ${response.status} (${fix})`;
    const type = (response.headers.get("content-type") || "").split(";")[0].trim();
    if (!/javascript|ecmascript/.test(type)) {
      return `the engine worker did not start: ${url} was served as ${type || "no type"}, not JavaScript (${fix})`;
    }
    for (const [, spec] of text.matchAll(/\bfrom\s+["'](\.{1,2}\/[^"']+)["']/g)) queue.push(new URL(spec, url).href);
  }
  return null;
}

// The runtime's manifest.json from `base`. A bundler that moved phonon.mjs and not the runtime
// files gets a 404, or (a dev server's fallback) an HTML page: both are said with the fix.
async function loadManifest(base) {
  const url = new URL("manifest.json", base);
  const fix = "the runtime files (the package's folder: manifest.json, worker.mjs, pyodide/, wheel/, models/) " +
    "must be served from one folder, and Recognizer.load({ base }) must name it - with a bundler, copy the " +
    "package folder to your static assets (e.g. Vite's public/phonon-web/) and pass " +
    "base: new URL(\"phonon-web/\", location.href)";
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw new PhononError("boot", `phonon-web's manifest.json could not be loaded from ${url.href} (${e.message})`);
  }
  if (!response.ok) {
    throw new PhononError("boot", `phonon-web's manifest.json is not at ${url.href} (HTTP ${response.status}): ${fix}`);
  }
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    const what = /^\s*</.test(text) ? "an HTML page (a server's fallback for a missing file)" : "not JSON";
    throw new PhononError("boot", `${url.href} is ${what}, not phonon-web's manifest.json: ${fix}`);
  }
}

// A pinned model's address, checked before the worker starts Pyodide (seconds): a server that
// answers 4xx is a wrong address, said at once. Not checked when the model is in Cache Storage
// already (the worker's key: its digest under the API's folder), nor when the check itself
// cannot get through (offline, or a host without HEAD): the worker's download then says why.
async function checkPinnedModel({ url, sha256 }, base) {
  try {
    const cache = await caches.open("phonon-web-model");
    if (await cache.match(new URL(`phonon-model/site/${sha256}`, base).href)) return;
  } catch { /* no Cache Storage here: check the address */ }
  let response;
  try {
    response = await fetch(url, { method: "HEAD" });
  } catch {
    return;
  }
  if (response.status >= 400 && response.status < 500 && response.status !== 405) {
    throw new PhononError("model-fetch", `the model ${url} could not be downloaded (HTTP ${response.status}): ` +
                          "the server has no such file or refuses it; check the model's address");
  }
}

async function download(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw new PhononError("model-fetch", `the model ${url.href} could not be downloaded (${e.message})`);
  }
  if (!response.ok) throw new PhononError("model-fetch", `the model ${url.href} could not be downloaded (HTTP ${response.status})`);
  return { name: url.pathname.split("/").pop() || url.href, bytes: await response.arrayBuffer() };
}

// An encoded file: WAV goes to the engine as bytes (its own parser and resampler); anything else
// is decoded by the browser (WebAudio) and sent as interleaved float32 at the decoder's rate.
async function encodedFile(audio, name) {
  const bytes = audio instanceof Blob ? await audio.arrayBuffer() : audio.slice(0);
  const head = new Uint8Array(bytes, 0, Math.min(12, bytes.byteLength));
  const text = String.fromCharCode(...head);
  if (text.startsWith("RIFF") && text.slice(8, 12) === "WAVE") return [{ kind: TO_WORKER.FILE, name, wav: bytes }, [bytes]];
  const Context = self.OfflineAudioContext || self.webkitOfflineAudioContext;
  if (!Context) throw new PhononError("audio", `${name}: only WAV can be read here (this browser has no WebAudio decoder)`);
  let decoded;
  try {
    decoded = await new Context(1, 1, 48000).decodeAudioData(bytes);   // 48 kHz: most compressed audio's rate
  } catch (e) {
    throw new PhononError("audio", `${name} is not in an audio format this browser can decode. WAV, MP3, M4A/AAC, Ogg, Opus, FLAC and WebM usually work.`);
  }
  return audioBufferMessage(decoded, name);
}

// Interleaved channels at the buffer's rate: the engine down-mixes and resamples.
function audioBufferMessage(buffer, name) {
  const channels = buffer.numberOfChannels, n = buffer.length;
  const pcm = new Float32Array(n * channels);
  for (let c = 0; c < channels; c++) {
    const data = buffer.getChannelData(c);
    for (let i = 0; i < n; i++) pcm[i * channels + c] = data[i];
  }
  return [{ kind: TO_WORKER.FILE, name, pcm, rate: buffer.sampleRate, channels }, [pcm.buffer]];
}
