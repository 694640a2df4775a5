// phonon-web, the page: UI, microphone capture set-up, files, exports, the service worker.
// The engine is reached only through the JavaScript API (phonon.mjs: a Recognizer running the
// engine in a module worker); microphone audio goes from an AudioWorklet (capture-worklet.mjs)
// straight to that worker through the stream's port. Nothing here waits on a decode.
//
// URL parameters: ?tier=scalar|wasm_simd128|wasm_relaxed_simd forces the kernel tier (an
// instruction set), ?backend=webgpu the GPU (the encoder's linears on WebGPU once the adapter
// passed the known-answer check; else the page says why it cannot; ?tier=webgpu, the old
// spelling, still works); by default ("auto") the GPU runs when it is real hardware, passes
// the check and is faster than the wasm tier (the API's timed verdict), and ?gpu=off never asks;
// ?threads=N forces the number of workers the encoder is split across (1 = the engine worker
// alone; more need cross-origin isolation, which the service worker provides);
// ?debug=1 keeps an event log and the captured samples for tests (window.phonon.debug).
import { toJSON, toSRT, toText, toVTT } from "./formats.mjs";
import { SERVICE_WORKER } from "./messages.mjs";
import { SessionStore } from "./session-store.mjs";
import { Recognizer, bestTier } from "./phonon.mjs";

const params = new URLSearchParams(location.search);
const DEBUG = params.get("debug") === "1";
const FORCED_BACKEND = params.get("backend") || (params.get("tier") === "webgpu" ? "webgpu" : null);
const FORCED_TIER = params.get("tier") === "webgpu" ? null : params.get("tier");
const GPU_OFF = params.get("gpu") === "off";      // ?gpu=off: the wasm tiers only, the GPU not asked for
const GPU_TEST_PATCH = (DEBUG && params.get("gpu_test_patch")) || undefined;   // tests: a failing check
const FORCED_THREADS = params.has("threads") ? Math.max(1, Math.min(8, Math.floor(Number(params.get("threads"))) || 1)) : null;
const MAX_DEFAULT_THREADS = 4;              // past this a 2-core phone gains nothing and pays memory
const ISOLATION_RELOAD = "phonon-web-isolation-reload";
// no word from an idle engine worker for this long: it died (the API watches; ?debug=1&silence_ms=N
// shortens it for tests)
const SILENCE_MS = (DEBUG && Number(params.get("silence_ms"))) || 15000;
// The microphone's stream: a named setting (the select, or ?latency=) and the live pace (the
// newest audio when the device falls behind; ?pace=exact decodes every position, later)
const LATENCY_PARAM = params.get("latency");
const PACE = params.get("pace") === "exact" ? "exact" : "live";
// The live text trails the audio by more than BEHIND_S seconds for BEHIND_FOR_MS: the device is
// slower than real time for this model; the page says so and what would help.
const BEHIND_S = 5, BEHIND_FOR_MS = 20000;

const $ = (id) => document.getElementById(id);
const ui = {
  status: $("status-text"), alert: $("alert"), alertText: $("alert-text"), alertAction: $("alert-action"),
  loader: $("loader"), stage: $("load-stage"), bytes: $("load-bytes"), progress: $("load-progress"),
  card: $("drop-zone"), transcript: $("transcript"), committed: $("committed"), tentative: $("tentative"),
  live: $("live"), mic: $("mic"), micLabel: $("mic-label"), open: $("open-file"), file: $("file"), latency: $("latency"),
  copy: $("copy"), clear: $("clear"), downloads: [...document.querySelectorAll("[data-format]")],
  audio: $("m-audio"), rtf: $("m-rtf"), lag: $("m-lag"), behind: $("m-behind"), tier: $("m-tier"),
  modelName: $("model-name"), modelDescription: $("model-description"), modelOpen: $("model-open"),
  modelFile: $("model-file"), modelReset: $("model-reset"), threadsNote: $("threads-note"), tierNote: $("tier-note"),
  cancelFile: $("cancel-file"), fileProgress: $("file-progress"),
  restore: $("restore"), restoreText: $("restore-text"), restoreShow: $("restore-show"), restoreDiscard: $("restore-discard"),
};
if ([...ui.latency.options].some((o) => o.value === LATENCY_PARAM)) ui.latency.value = LATENCY_PARAM;
const LOCAL_MODEL = "phonon-web-local-model";     // localStorage: {sha256, name} of an opened .gguf

// What tests and the measuring script read: state, timings (ms since navigation), the last
// result; with ?debug=1 also every engine worker message and the captured samples.
const phonon = window.phonon = { state: "loading", timings: {}, log: [], result: null, metrics: null };
if (DEBUG) phonon.toWorker = (message) => engine.recognizer.debug.post(message);   // tests: e.g. kill-kernel-worker
if (DEBUG) phonon.mic = () => live.mic;     // tests: end its track, suspend its AudioContext

// The page's state, one object per job, each changed only by its section below:
const engine = { recognizer: null, manifest: null, tier: null };   // the Recognizer; the site's manifest; the tier asked for
const live = { stream: null, mic: null };   // the open live Stream; the microphone {media, context, node, source}
const fileJob = { abort: null, running: null };   // AbortController of the file being sent; its name once the worker's steps start
const kept = { store: null, id: null, told: false };   // this device's copy of the live session (SessionStore); the
                                                       // promise of its id while one is written; whether a failed write was told
// On screen: a finished transcript {text, words, audio_seconds, source}, or a live stream's
// {stream, tentative, tentativeWords, committedWords, audio_seconds, source} (its committed words
// are the Stream's, stream.transcript(), read when exported: a poll brings only what changed).
const shown = { transcript: null };

// ------------------------------------------------------------------------------------------
// state and messages

const STATUS = { loading: "Loading the speech engine…", ready: "Ready", starting: "Opening the microphone…",
                 listening: "Listening", finishing: "Finishing…", transcribing: "Transcribing…", done: "Done",
                 error: "Stopped" };

function setState(state, text) {
  phonon.state = state;
  document.body.dataset.state = state;
  ui.status.textContent = text || STATUS[state];
  const idle = state === "ready" || state === "done";
  ui.mic.disabled = !(idle || state === "listening") || !captureSupport().ok;
  ui.latency.disabled = !idle;                    // a stream keeps the setting it opened with
  ui.open.disabled = !idle;
  ui.modelOpen.disabled = !idle;
  const hasText = hasTranscript();
  for (const b of [ui.copy, ...ui.downloads]) b.disabled = !hasText || state === "transcribing";
  ui.clear.disabled = !hasText || !idle;
  if (state !== "transcribing") fileJob.running = null;
  ui.cancelFile.hidden = ui.fileProgress.hidden = !fileJob.running;
}

function showAlert(text, { info = false, action = null } = {}) {
  ui.alertText.textContent = text;
  ui.alert.classList.toggle("info", info);
  ui.alert.setAttribute("role", info ? "status" : "alert");
  ui.alert.hidden = false;
  ui.alertAction.hidden = !action;
  if (action) {
    ui.alertAction.textContent = action.label;
    ui.alertAction.onclick = action.run;
  }
}

function hideAlert() { ui.alert.hidden = true; }

function fatal(text) {
  if (live.mic) closeCapture(live.mic);
  ui.loader.hidden = true;
  setState("error");
  showAlert(text, { action: { label: "Reload", run: () => location.reload() } });
  for (const b of [ui.mic, ui.open]) b.disabled = true;
}

const mb = (bytes) => (bytes / 1048576).toFixed(1);

function stage(text, loaded, total) {
  ui.stage.textContent = text;
  if (total) {
    ui.progress.max = total;
    ui.progress.value = loaded;
    ui.bytes.textContent = `${mb(loaded)} / ${mb(total)} MB`;
  } else {
    ui.progress.removeAttribute("value");      // indeterminate
    ui.bytes.textContent = "";
  }
}

// ------------------------------------------------------------------------------------------
// what this browser can do

function captureSupport() {
  if (!window.isSecureContext) return { ok: false, why: "The microphone needs a secure page (https:// or localhost). Files can still be transcribed." };
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) return { ok: false, why: "This browser gives no access to a microphone. Files can still be transcribed." };
  if (!window.AudioContext || !window.AudioWorkletNode) return { ok: false, why: "This browser has no AudioWorklet, which live transcription needs. Files can still be transcribed." };
  return { ok: true };
}

// "auto": the API takes the GPU when it is real, right and faster, else the best tier this
// browser validates (engine/tiers.py via manifest.json); ?tier= forces one; ?gpu=off: the best
// wasm tier, the GPU not asked for.
const chooseTier = () => FORCED_TIER || (GPU_OFF ? bestTier(engine.manifest.tiers) : "auto");

// ------------------------------------------------------------------------------------------
// start-up: service worker (offline shell), then the engine worker

async function main() {
  if (typeof WebAssembly !== "object" || typeof WebAssembly.validate !== "function" || typeof Worker !== "function") {
    fatal("This browser cannot run phonon-web: it needs WebAssembly and Web Workers (any current Chrome, Edge, Firefox or Safari).");
    return;
  }
  setState("loading");
  stage("Starting…");
  const sw = await serviceWorker();
  phonon.timings.serviceWorker = performance.now();
  phonon.serviceWorker = sw;
  try {
    const response = await fetch("manifest.json");
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    engine.manifest = await response.json();
  } catch (e) {
    fatal(`The app's manifest could not be loaded (${e.message}). Check the connection and reload.`);
    return;
  }
  const threads = chooseThreads(sw);
  if (threads.reload) return location.reload();
  phonon.threadsWanted = threads.count;
  engine.tier = chooseTier();
  ui.tier.textContent = FORCED_BACKEND || engine.tier;
  try {
    engine.recognizer = await Recognizer.load({
      manifest: engine.manifest, tier: engine.tier, backend: FORCED_BACKEND || "auto", debug: DEBUG, localModel: storedLocalModel(), silenceMs: SILENCE_MS,
      preferGpu: !GPU_OFF, gpuTestPatch: GPU_TEST_PATCH,
      threads: FORCED_THREADS ?? undefined, isolationNote: threads.note, onProgress: onLoadProgress,
      onWorkerMessage: DEBUG ? (data) => phonon.log.push({ t: performance.now(), ...data }) : null,
    });
  } catch (e) {
    if (e.name !== "PhononError") {
      return fatal(`This browser cannot start module workers, which phonon-web needs (${e.message}). Use a current Chrome, Edge, Firefox or Safari.`);
    }
    return onEngineError(e);
  }
  engine.recognizer.addEventListener("error", (e) => onEngineError(e.detail));
  engine.recognizer.addEventListener("workers-lost", (e) => onWorkersLost(e.detail));
  engine.recognizer.addEventListener("gpu-lost", (e) => onGpuLost(e.detail));
  engine.recognizer.addEventListener("workers-back", () => showTier({ tier: engine.recognizer.tier,
    threads: engine.recognizer.threads, threadsNote: engine.recognizer.threadsNote }));
  engine.recognizer.addEventListener("restart", (e) => onRestart(e.detail, false));
  engine.recognizer.addEventListener("restarted", (e) => onRestart(e.detail, true));
  onReady(engine.recognizer.details);
}

// How many workers share the encoder: ?threads=N, else the cores up to MAX_DEFAULT_THREADS.
// More than one needs SharedArrayBuffer, hence cross-origin isolation: the service worker adds
// the COOP/COEP headers to the pages it serves, so a page it did not serve yet (the first visit)
// is reloaded once, from it. Without isolation: one worker, and the note says why.
function chooseThreads(sw) {
  const wanted = FORCED_THREADS || Math.max(1, Math.min(navigator.hardwareConcurrency || 1, MAX_DEFAULT_THREADS));
  if (wanted <= 1) return { count: 1, note: null };
  if (self.crossOriginIsolated) {
    sessionStorage.removeItem(ISOLATION_RELOAD);
    return { count: wanted, note: null };
  }
  if (sw === "controlled" && !sessionStorage.getItem(ISOLATION_RELOAD)) {
    sessionStorage.setItem(ISOLATION_RELOAD, "1");           // once: never a reload loop
    return { reload: true };
  }
  if (sw === "controlled")
    return { count: 1, note: "one worker: this page was opened before cross-origin isolation was on, so workers cannot share memory; reload it to use every core" };
  return { count: 1, note: "one worker: this page is not cross-origin isolated (its server sends no COOP/COEP headers and no service worker could add them), so workers cannot share memory" };
}

async function serviceWorker() {
  if (!("serviceWorker" in navigator) || !window.isSecureContext) return "unsupported";
  let registration;
  try {
    // a registration that never settles (blocked by policy in some browsers) must not hold the app
    registration = await Promise.race([navigator.serviceWorker.register("sw.js"), new Promise((_, reject) =>
      setTimeout(() => reject(new Error("the service worker registration did not finish in 10 s")), 10000))]);
  } catch (e) {
    console.warn("phonon-web: no offline cache:", e);
    return "failed";
  }
  navigator.serviceWorker.addEventListener("message", ({ data }) => {
    if (data && data.kind === SERVICE_WORKER.PROGRESS && phonon.state === "loading" && !phonon.engineStarted) {
      stage("Saving the app for offline use", data.loaded, data.total);
    }
  });
  offerUpdates(registration);
  if (navigator.serviceWorker.controller) return "controlled";
  const installing = registration.installing || registration.waiting;
  if (!installing) return "uncontrolled";       // e.g. a hard reload: run from the network
  // First visit: the shell is fetched once, by the service worker; the engine then loads from
  // its cache (starting both at once would download the runtime twice).
  stage("Saving the app for offline use", 0, 1);
  return new Promise((resolve) => {
    navigator.serviceWorker.addEventListener("controllerchange", () => resolve("controlled"), { once: true });
    installing.addEventListener("statechange", () => {
      if (installing.state === "redundant") resolve("failed");
    });
  });
}

function offerUpdates(registration) {
  let asked = false;
  const offer = () => {
    if (!registration.waiting || !navigator.serviceWorker.controller) return;
    showAlert("A new version of phonon-web is ready.", { info: true, action: { label: "Reload", run: () => {
      asked = true;
      registration.waiting.postMessage({ kind: SERVICE_WORKER.SKIP_WAITING });
    } } });
  };
  navigator.serviceWorker.addEventListener("controllerchange", () => { if (asked) location.reload(); });
  registration.addEventListener("updatefound", () => {
    const next = registration.installing;
    if (next) next.addEventListener("statechange", () => { if (next.state === "installed") offer(); });
  });
  offer();
}

// ------------------------------------------------------------------------------------------
// the worker

const STAGES = { runtime: "Starting the Python runtime", engine: "Installing the engine",
                 model: "Loading the model", compile: "Preparing the model" };

function onLoadProgress(p) {
  phonon.engineStarted = true;
  if (p.loaded !== undefined) {
    return stage(p.source === "cache" ? "Loading the model from this device" : "Downloading the model", p.loaded, p.total);
  }
  phonon.timings[p.stage] = performance.now();
  stage(STAGES[p.stage]);
}

// A PhononError the engine raised outside a call the page awaits (or a failed start-up): the
// worker died, a fatal error (the recogniser is closed), or something the page can go on from.
function onEngineError(error) {
  if (error.code === "worker") return died(error.message);
  if (engine.recognizer && !engine.recognizer.closed) {
    showAlert(error.message);
    if (error.code !== "busy") setState(idleState());     // refused while a file runs: that file goes on
    return;
  }
  phonon.fatal = { code: error.code, message: error.message, detail: error.detail || null };
  if (error.detail) console.warn(error.detail);
  fatal(error.message);
}

function onWorkersLost({ message, threads }) {
  showTier({ tier: engine.recognizer.tier, threads, threadsNote: `one worker: ${message}` });
  showAlert(`A kernel worker stopped (${message}). Transcription goes on with one worker; nothing is lost.`, { info: true });
}

function onGpuLost({ message }) {
  showTier({ tier: engine.recognizer.tier, threads: engine.recognizer.threads, threadsNote: engine.recognizer.threadsNote,
             tierNote: engine.recognizer.tierNote });
  showAlert(`The GPU stopped working (${message}). Nothing is lost.`, { info: true });
}

// The engine worker died mid-stream and a new one takes the stream over: the audio meanwhile is
// kept (the worklet's input since the last checkpoint) and fed to it, so no word is lost.
function onRestart({ message }, done) {
  phonon.restarts = (phonon.restarts || 0) + (done ? 1 : 0);
  showAlert(message, { info: true });
}

const idleState = () => (hasTranscript() ? "done" : "ready");

// tierNote: why this tier runs ("webgpu: <adapter> (...)", "wasm_relaxed_simd: <why not the GPU>"),
// shown when the GPU was asked for or lost; undefined keeps the one shown.
function showTier({ tier: t, threads = 1, threadsNote, tierNote, adapter }) {
  ui.tier.textContent = t + (adapter && t === "webgpu" ? ` (${adapter})` : "") + (FORCED_TIER || FORCED_BACKEND ? " (forced)" : "")
    + ` · ${threads} worker${threads === 1 ? "" : "s"}`;
  ui.tier.title = threads > 1 ? `the encoder is split across ${threads} workers` : "one worker runs the encoder";
  if (tierNote !== undefined) {
    ui.tierNote.hidden = !tierNote;
    ui.tierNote.textContent = tierNote ? `Kernels: ${tierNote}.` : "";
    phonon.tierNote = tierNote || null;
  }
  phonon.tier = t;
  ui.threadsNote.hidden = !threadsNote;
  ui.threadsNote.textContent = threadsNote ? threadsNote[0].toUpperCase() + threadsNote.slice(1) + "." : "";
  phonon.threads = threads;
  phonon.threadsNote = threadsNote || null;
}

function onReady(data) {
  phonon.timings.ready = performance.now();
  phonon.ready = data;
  phonon.heapBytes = data.heapBytes;
  ui.loader.hidden = true;
  showTier(data);
  setState("ready");
  if (data.localModel) showModel(data.localModel);
  if (data.localNote) forgetLocalModel();
  const support = captureSupport();
  if (!support.ok) showAlert(support.why, { info: true });
  else if (data.localNote) showAlert(`Using this site's model: ${data.localNote}.`, { info: true });
  else if (data.cacheNote) showAlert(`Ready, but ${data.cacheNote}.`, { info: true });
}

// ------------------------------------------------------------------------------------------
// a model file of the user's own (validated by the engine's loader in the worker)

function storedLocalModel() {
  try { return JSON.parse(localStorage.getItem(LOCAL_MODEL) || "null"); } catch { return null; }
}

function forgetLocalModel() {
  try { localStorage.removeItem(LOCAL_MODEL); } catch { /* storage disabled */ }
}

function showModel({ file, name, size, notice }) {
  phonon.model = { file, name, size };
  ui.modelName.textContent = `${name} (your file ${file}, ${(size / 1048576).toFixed(1)} MB)`;
  ui.modelDescription.textContent = notice ? `· Licence: ${notice}` : "· No licence notice in the file.";
  ui.modelReset.hidden = false;
}

async function openModelFile(file) {
  if (!engine.recognizer || !(phonon.state === "ready" || phonon.state === "done")) return;
  hideAlert();
  setState("transcribing", `Checking ${file.name}…`);
  let info;
  try {
    info = await engine.recognizer.switchModel(await file.arrayBuffer(), file.name);
  } catch (e) {
    if (engine.recognizer.closed) return;              // the error event says why
    setState(idleState());
    return showAlert(e.message);                // the model in use stays
  }
  onModelSwitched(info);
}

function onModelSwitched(data) {
  showModel(data);
  showTier({ tier: data.tier, threads: data.threads, threadsNote: data.threadsNote });
  try { localStorage.setItem(LOCAL_MODEL, JSON.stringify({ sha256: data.sha256, name: data.file })); } catch { /* none */ }
  setState(hasTranscript() ? "done" : "ready");
  showAlert(`Now using ${data.file}` + (data.cacheNote ? `, but ${data.cacheNote}.` : "; it is kept on this device for the next visit."),
            { info: true });
}

function died(reason) {
  if (phonon.state === "error") return;
  phonon.died = reason;
  if (engine.recognizer) engine.recognizer.close();
  fatal(`The speech engine stopped (${reason}). Reload the page to start it again; ` +
        (kept.id ? "the words committed so far are kept on this device and offered back after the reload."
                 : "a transcript on screen is kept until then."));
}

// ------------------------------------------------------------------------------------------
// the transcript

function hasTranscript() {
  const t = shown.transcript;
  return !!t && (t.stream ? t.committedWords > 0 || t.tentativeWords.length > 0 : t.words.length > 0);
}

// The whole transcript on screen, {text, words, audio_seconds, source}; a live stream's with its
// tentative tail (grows with the session: for exports, not for every poll).
function transcriptShown() {
  const t = shown.transcript;
  if (!t || !t.stream) return t;
  const { text, words } = t.stream.transcript();
  return { text: [text, t.tentative].filter(Boolean).join(" "), words: [...words, ...t.tentativeWords],
           audio_seconds: t.audio_seconds, source: t.source };
}

function clearTranscript() {
  shown.transcript = null;
  ui.restore.hidden = true;
  ui.committed.replaceChildren();
  ui.tentative.replaceChildren();
  ui.live.textContent = "";
  ui.transcript.classList.remove("has-text");
  for (const el of [ui.audio, ui.rtf, ui.lag]) el.textContent = "–";
}

function wordSpan(w, fresh) {
  const span = document.createElement("span");
  span.className = fresh ? "w fresh" : "w";
  span.textContent = w.word;
  span.title = `${w.word}  ${w.start.toFixed(2)}–${w.end.toFixed(2)} s`;
  return span;
}

function appendWords(container, words, fresh) {
  const fragment = document.createDocumentFragment();
  for (const w of words) {
    if (container.childNodes.length || fragment.childNodes.length) fragment.append(" ");
    fragment.append(wordSpan(w, fresh));
  }
  container.append(fragment);
}

// Committed words never change: each is added once, as it commits (and announced); the tentative
// tail is redrawn each time. The DOM grows with the committed text only.
function appendCommitted(words, { announce = true } = {}) {
  if (!words.length) return;
  appendWords(ui.committed, words, announce);
  if (announce) ui.live.textContent = words.map((w) => w.word).join(" ");
  scrollToNewest();
}

function showTentative(words) {
  ui.tentative.replaceChildren();
  if (words.length) {
    if (ui.committed.childNodes.length) ui.tentative.append(" ");
    appendWords(ui.tentative, words, false);
  }
  ui.transcript.classList.toggle("has-text", ui.committed.childNodes.length > 0 || words.length > 0);
  scrollToNewest();
}

function scrollToNewest() {
  const box = ui.transcript;
  if (box.scrollHeight - box.scrollTop - box.clientHeight < 80) box.scrollTop = box.scrollHeight;
}

const seconds = (s) => (s == null ? "–" : `${s.toFixed(1)} s`);

function showPartial(stream, view, metrics) {
  if (!phonon.timings.firstPartial && (view.committedWords || view.tentativeWords.length)) phonon.timings.firstPartial = performance.now();
  if (!phonon.timings.firstCommit && view.committedWords) phonon.timings.firstCommit = performance.now();
  shown.transcript = { stream, tentative: view.tentative, tentativeWords: view.tentativeWords,
                       committedWords: view.committedWords, audio_seconds: view.audio_seconds, source: "microphone" };
  showTentative(view.tentativeWords);
  phonon.metrics = metrics;
  ui.audio.textContent = seconds(metrics.audio_seconds);
  ui.rtf.textContent = metrics.rtf == null ? "–" : metrics.rtf.toFixed(2);
  ui.lag.textContent = seconds(metrics.commit_lag_p50);
  showBacklog(metrics);
  if (metrics.dropped_samples) showAlert("Some audio was dropped: this device is not keeping up with live transcription.", { info: true });
  if (phonon.state === "listening") setState("listening");   // refresh the export buttons
  else if (phonon.state === "finishing" && metrics.pending_seconds > 1) {
    setState("finishing", `Finishing: ${metrics.pending_seconds.toFixed(0)} s of audio left to decode…`);
  }
}

// How far decoding trails the audio (nothing is skipped: the text catches up in order). When
// it stays behind, the device is slower than real time for this model: say so and what helps.
function showBacklog(metrics) {
  const pending = metrics.pending_seconds || 0;
  phonon.mostBehind = Math.max(phonon.mostBehind || 0, pending);     // what the page showed (tests read it)
  ui.behind.textContent = seconds(pending);
  ui.behind.classList.toggle("behind", pending > BEHIND_S);
  const now = performance.now();
  if (pending <= BEHIND_S / 2) phonon.behindSince = null;
  else if (pending > BEHIND_S && !phonon.behindSince) phonon.behindSince = now;
  if (phonon.behindSince && now - phonon.behindSince > BEHIND_FOR_MS && !phonon.behindTold) {
    phonon.behindTold = true;
    showAlert(`This device decodes ${engine.recognizer && engine.recognizer.model ? engine.recognizer.model.name : "this model"} slower than real time ` +
              `(${(metrics.compute_seconds / Math.max(1, metrics.audio_seconds - pending)).toFixed(2)} s of compute per ` +
              "second of audio): the text is " +
              `${pending.toFixed(0)} s behind the audio. Nothing is lost; it catches up after you stop. ` +
              `What would help: ${remedies().join("; ")}.`, { info: true });
  }
}

function remedies() {
  const out = [];
  if (engine.recognizer && engine.recognizer.threads < 2 && (navigator.hardwareConcurrency || 1) > 1) {
    out.push(`more workers (this page runs one${engine.recognizer.threadsNote ? `: ${engine.recognizer.threadsNote.replace(/^one worker: /, "")}` : ""})`);
  }
  if (engine.recognizer && !["wasm_relaxed_simd", "webgpu"].includes(engine.recognizer.tier)) out.push("a browser with WebAssembly relaxed SIMD (Chrome, Edge, Firefox), which runs the fastest kernels");
  out.push("a smaller model", "a faster device");
  return out;
}

function showFinal({ result, metrics, heapBytes }) {
  phonon.result = result;
  phonon.metrics = metrics;
  phonon.heapBytes = heapBytes;
  phonon.timings.final = performance.now();
  shown.transcript = { text: result.text, words: result.words, audio_seconds: result.audio_seconds, source: "microphone" };
  showTentative([]);                                 // the stream's "commit" event added the last words
  ui.audio.textContent = seconds(result.audio_seconds);
  ui.rtf.textContent = metrics.compute_per_audio == null ? "–" : metrics.compute_per_audio.toFixed(2);
  ui.lag.textContent = seconds(metrics.commit_lag_p50_seconds);
  ui.behind.textContent = seconds(0);
  ui.behind.classList.remove("behind");
  const lost = (metrics.refused_seconds || 0) > 0 || (metrics.dropped_samples || 0) > 0;
  const behind = metrics.deferred_seconds > 0
    ? ` (decoding fell up to ${metrics.max_pending_seconds.toFixed(1)} s behind, ${metrics.deferred_seconds.toFixed(1)} s ` +
      `of audio were decoded late, and it caught up${lost ? "" : ": nothing was skipped"})` : "";
  setState("done", `Done · ${result.audio_seconds.toFixed(1)} s${behind}`);
  if (metrics.refused_seconds) {
    showAlert(`${metrics.refused_seconds.toFixed(1)} s of audio were not transcribed: decoding fell more than ` +
              "20 minutes behind, so the engine refused new audio until it caught up.", { info: true });
  }
}

// The worker transcribes a file a step at a time (at most one 30 s window per step) and says
// how far it got after each: the watchdog allows one step's worst case between messages.
function showFileProgress(name, done, total) {
  if (!fileJob.running) {                            // the first report: the file is read, steps start
    fileJob.running = name;
    ui.cancelFile.disabled = false;
  }
  const share = total > 0 ? Math.min(1, done / total) : 0;
  ui.fileProgress.value = share;
  setState("transcribing", `Transcribing ${name}: ${Math.floor(share * 100)}% of ${total.toFixed(1)} s…`);
}

function cancelFile() {
  if (!fileJob.running || !fileJob.abort) return;
  ui.cancelFile.disabled = true;
  ui.status.textContent = `Stopping ${fileJob.running}…`;
  fileJob.abort.abort();
}

function showFileResult({ name, result, heapBytes }) {
  phonon.result = result;
  phonon.heapBytes = heapBytes;
  shown.transcript = { text: result.text, words: result.words, audio_seconds: result.timing.audio_seconds, source: name };
  clearDom();
  appendCommitted(result.words, { announce: false });
  showTentative([]);
  ui.live.textContent = result.text ? `Transcript of ${name}: ${result.text}` : `${name}: no speech found.`;
  const t = result.timing;
  ui.audio.textContent = seconds(t.audio_seconds);
  ui.rtf.textContent = t.audio_seconds ? (t.compute_seconds / t.audio_seconds).toFixed(2) : "–";
  ui.lag.textContent = "–";
  setState("done", `Done · ${name}` + (result.text ? "" : " (no speech found)"));
}

function clearDom() {
  ui.committed.replaceChildren();
  ui.tentative.replaceChildren();
}

// ------------------------------------------------------------------------------------------
// the microphone

async function startListening() {
  const support = captureSupport();
  if (!support.ok) return showAlert(support.why);
  hideAlert();
  setState("starting");
  let media;
  try {
    media = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false },
    });
  } catch (e) {
    setState(hasTranscript() ? "done" : "ready");
    return showAlert(micError(e));
  }
  const context = new AudioContext({ latencyHint: "interactive" });
  try {
    const latency = ui.latency.value, pace = PACE;
    const stream = live.stream = await engine.recognizer.listen(media, { context, latency, pace });
    const rate = context.sampleRate;
    phonon.latency = latency;
    phonon.pace = pace;
    stream.addEventListener("partial", (e) => showPartial(stream, e.detail, e.detail.metrics));   // also after stop, while finishing
    stream.addEventListener("commit", (e) => { appendCommitted(e.detail.words); keepCommitted(e.detail); });
    stream.addEventListener("error", (e) => showAlert(`Audio is being refused: ${e.detail.message}`, { info: true }));
    phonon.behindSince = null;
    phonon.behindTold = false;
    live.mic = { media, context, stream, pausedAt: null };
    watchMic(live.mic);
    clearTranscript();
    keepSession(rate);
    phonon.transport = stream.transport;
    phonon.sampleRate = rate;
    phonon.timings.captureStart = performance.now();
    phonon.timings.firstPartial = phonon.timings.firstCommit = undefined;
    phonon.captureSent = undefined;
    ui.mic.setAttribute("aria-pressed", "true");
    ui.micLabel.textContent = "Stop";
    setState("listening");
  } catch (e) {
    for (const track of media.getTracks()) track.stop();
    context.close();
    live.stream = null;                         // listen() cancelled its own stream
    setState(idleState());
    showAlert(`Live transcription could not start: ${e.message}`);
  }
}

function micError(e) {
  switch (e.name) {
    case "NotAllowedError":
    case "PermissionDeniedError":
    case "SecurityError":
      return "Microphone access was refused. Allow the microphone for this site (the icon in the address bar), then press Start listening again. Files can still be transcribed.";
    case "NotFoundError":
    case "OverconstrainedError":
      return "No microphone was found. Connect one and try again, or transcribe a file.";
    case "NotReadableError":
    case "AbortError":
      return "The microphone could not be opened: another application may be using it.";
    default:
      return `The microphone could not be started (${e.name}: ${e.message}).`;
  }
}

// A long session meets all of these: the track ends (the microphone unplugged, switched off, or
// taken by another app), the track goes mute (the system muted it), the browser suspends the
// AudioContext (an interruption: a call, another tab taking audio, iOS). Each either keeps
// transcribing or stops with a message saying so; the committed words stay (and stay kept).
function watchMic(mic) {
  for (const track of mic.media.getAudioTracks()) {
    track.onended = () => micEnded(track);
    track.onmute = () => showAlert("The microphone sends no sound (the system or the device muted it): " +
                                   "listening goes on and picks up when the sound comes back.", { info: true });
    track.onunmute = () => showAlert("The microphone sends sound again.", { info: true });
  }
  mic.context.onstatechange = () => contextChanged(mic);
}

function micEnded(track) {
  if (!live.mic || phonon.state !== "listening") return;
  phonon.micEnded = performance.now();
  stopListening();
  showAlert(`The microphone stopped (${track.label || "the input device"}: unplugged, switched off or taken by another ` +
            "application). Listening stopped and the transcript up to here is kept; press Start listening to go on.",
            { info: true });
}

// The browser suspended capture ("suspended", or Safari's "interrupted"): ask it to resume at
// once; if it wants a gesture first, the alert's button is one. The audio in between is not heard.
function contextChanged(mic) {
  const { context } = mic;
  if (live.mic !== mic || phonon.state !== "listening") return;
  if (context.state === "running" && mic.pausedAt !== null) {
    const gap = (performance.now() - mic.pausedAt) / 1000;
    mic.pausedAt = null;
    phonon.captureGaps = (phonon.captureGaps || 0) + 1;
    return showAlert(`The browser paused the microphone for ${gap.toFixed(1)} s; listening goes on (speech in that ` +
                     "time was not heard).", { info: true });
  }
  if (context.state === "closed") return micEnded({ label: "the audio system" });
  if (context.state === "running" || mic.pausedAt !== null) return;
  mic.pausedAt = performance.now();
  showAlert("The browser paused the microphone. Press Resume to go on; the transcript so far is kept.",
            { info: true, action: { label: "Resume", run: () => context.resume() } });
  context.resume().catch(() => {});
}

function stopListening() {
  if (!live.mic || phonon.state !== "listening") return;
  setState("finishing");
  ui.mic.setAttribute("aria-pressed", "false");
  ui.micLabel.textContent = "Start listening";
  const mic = live.mic;
  const closing = live.stream;
  live.stream = null;
  closing.addEventListener("capture-stopped", (e) => {
    phonon.captureSent = e.detail.sent;         // samples the worklet sent the stream (tests: all reached it)
    releaseMic(mic);
  }, { once: true });
  closing.finish().then((final) => {            // listen() stops the capture after its last block
    showFinal({ result: final, metrics: final.metrics, heapBytes: engine.recognizer.heapBytes });
    keptFinished(final.audio_seconds);
  }, () => {})                                  // a failed stream: the recogniser's error event says why
    .finally(() => closeCapture(mic));
}

// The microphone goes off as soon as the worklet sent its last block; the worklet itself lives
// until the stream's final (listen() disconnects it then): an engine worker restarted meanwhile
// is fed its input.
function releaseMic(mic) {
  if (live.mic === mic) live.mic = null;
  for (const track of mic.media.getTracks()) {
    track.onended = track.onmute = track.onunmute = null;
    track.stop();
  }
  mic.context.onstatechange = null;
  ui.mic.setAttribute("aria-pressed", "false");
  ui.micLabel.textContent = "Start listening";
}

function closeCapture(mic) {
  if (mic.closed) return;
  mic.closed = true;
  releaseMic(mic);
  mic.context.close();                          // the page's own AudioContext (listen() leaves it open)
}

// ------------------------------------------------------------------------------------------
// files

async function transcribeFile(file) {
  if (!engine.recognizer || !(phonon.state === "ready" || phonon.state === "done")) return;
  hideAlert();
  clearTranscript();
  setState("transcribing", `Reading ${file.name}…`);
  // The API reads WAV with the engine's own parser and resampler (as natively) and has the
  // browser decode other formats; tests set phonon.decodeAllFiles to send WAV through WebAudio too.
  let audio = file;
  if (phonon.decodeAllFiles) {
    try {
      audio = await new OfflineAudioContext(1, 1, 48000).decodeAudioData(await file.arrayBuffer());
    } catch {
      setState("ready");
      return showAlert(`${file.name} is not in an audio format this browser can decode.`);
    }
  }
  fileJob.abort = new AbortController();
  try {
    const result = await engine.recognizer.transcribe(audio, undefined, {
      name: file.name, signal: fileJob.abort.signal,
      onProgress: ({ done, total }) => showFileProgress(file.name, done, total),
    });
    showFileResult({ name: file.name, result, heapBytes: engine.recognizer.heapBytes });
  } catch (e) {
    if (engine.recognizer.closed) return;              // the error event says why
    setState(idleState());
    showAlert(e.code === "cancelled" ? `Stopped transcribing ${file.name}.` : e.message, { info: e.code === "cancelled" });
  } finally {
    fileJob.abort = null;
  }
}

// ------------------------------------------------------------------------------------------
// the kept session: a live session's committed words are written to this device as they commit
// (web/session-store.mjs), so a reload, a crashed tab or a closed lid loses none of them; the
// next visit offers them back. One session is kept: a new one replaces it, Clear deletes it.

async function openKept() {
  kept.store = await SessionStore.open();
  if (!kept.store) return;
  kept.store.onError = (e) => {
    if (kept.told) return;
    kept.told = true;
    showAlert(`The transcript cannot be kept on this device (${e && e.message}): export it before closing the page.`, { info: true });
  };
  if (DEBUG) {                       // tests: what is on disk, and a crash at a chosen instant
    phonon.kept = { latest: () => kept.store.latest(), hold: () => kept.store.hold(), settled: () => kept.store.settled(),
                    committed: () => live.stream && live.stream.transcript() };
  }
  const last = await kept.store.latest().catch(() => null);
  if (last && last.words.length && !live.stream) offerKept(last);
}

function offerKept({ session, text, words }) {
  const when = new Date(session.started).toLocaleString();
  ui.restoreText.textContent = `${session.finished ? "A transcript" : "An unfinished transcript"} from ${when} is kept on ` +
    `this device: ${words.length} words, ${(session.audio_seconds / 60).toFixed(1)} min (${session.model.name}, ` +
    `${session.tier}). Starting to listen replaces it.`;
  ui.restore.hidden = false;
  ui.restoreShow.onclick = () => showKept(session, text, words);
  ui.restoreDiscard.onclick = () => { ui.restore.hidden = true; forgetKept(); };
}

function showKept(session, text, words) {
  if (live.stream || phonon.state === "transcribing") return;
  clearTranscript();
  shown.transcript = { text, words, audio_seconds: session.audio_seconds, source: "microphone", kept: session };
  appendCommitted(words, { announce: false });
  showTentative([]);
  ui.audio.textContent = seconds(session.audio_seconds);
  if (phonon.state === "ready" || phonon.state === "done") setState("done", `Kept from ${new Date(session.started).toLocaleString()}`);
  else setState(phonon.state, ui.status.textContent);     // still loading, or stopped: export works all the same
}

// A live stream starts: it replaces the kept session (kept.id: the promise of the new one's id).
function keepSession(rate) {
  ui.restore.hidden = true;
  if (!kept.store) return;
  const r = engine.recognizer, local = storedLocalModel();
  const model = { name: r.model && r.model.name || engine.manifest.model.name, sha256: (local || engine.manifest.model).sha256 };
  kept.id = kept.store.begin({ model, tier: r.tier, sampleRate: rate, threads: r.threads })
    .catch((e) => { kept.store.onError(e); return null; });
}

function keepCommitted({ words, added }) {
  const audio = (phonon.metrics && phonon.metrics.audio_seconds) || 0;
  if (kept.id) kept.id.then((id) => id && kept.store.append(id, words, added, audio));
}

function keptFinished(audioSeconds) {
  if (kept.id) kept.id.then((id) => id && kept.store.finish(id, audioSeconds));
}

function forgetKept() {
  kept.id = null;
  if (kept.store) kept.store.clear().catch((e) => kept.store.onError(e));
}

// ------------------------------------------------------------------------------------------
// exports

const FORMATS = {
  txt: [toText, "text/plain"],
  json: [(t) => toJSON(t, t.kept ? { model: t.kept.model.name, model_sha256: t.kept.model.sha256, tier: t.kept.tier,
                                     source: t.source, started: t.kept.started }
                                 : { model: engine.manifest.model.name, model_sha256: engine.manifest.model.sha256,
                                     tier: phonon.ready && phonon.ready.tier, source: t.source }), "application/json"],
  srt: [toSRT, "application/x-subrip"],
  vtt: [toVTT, "text/vtt"],
};

function finalWords() {
  const t = transcriptShown();
  return { ...t, words: t.words.map(({ word, start, end }) => ({ word, start, end })) };
}

function download(format) {
  if (!shown.transcript) return;
  const [render, type] = FORMATS[format];
  const base = shown.transcript.source === "microphone"
    ? `transcript-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, "-")}`
    : shown.transcript.source.replace(/\.[^.]+$/, "");
  const url = URL.createObjectURL(new Blob([render(finalWords())], { type: `${type};charset=utf-8` }));
  const a = Object.assign(document.createElement("a"), { href: url, download: `${base}.${format}` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

async function copy() {
  if (!shown.transcript) return;
  try {
    await navigator.clipboard.writeText(transcriptShown().text);
    flash(ui.copy, "Copied");
  } catch {
    showAlert("The browser did not allow copying: select the text and copy it instead.", { info: true });
  }
}

function flash(button, text) {
  const old = button.textContent;
  button.textContent = text;
  setTimeout(() => { button.textContent = old; }, 1500);
}

// ------------------------------------------------------------------------------------------
// wiring

ui.mic.addEventListener("click", () => (phonon.state === "listening" ? stopListening() : startListening()));
ui.open.addEventListener("click", () => ui.file.click());
ui.file.addEventListener("change", () => {
  const [file] = ui.file.files;
  ui.file.value = "";
  if (file) transcribeFile(file);
});
ui.modelOpen.addEventListener("click", () => ui.modelFile.click());
ui.modelFile.addEventListener("change", () => {
  const [file] = ui.modelFile.files;
  ui.modelFile.value = "";
  if (file) openModelFile(file);
});
ui.modelReset.addEventListener("click", () => { forgetLocalModel(); location.reload(); });
ui.copy.addEventListener("click", copy);
ui.cancelFile.addEventListener("click", cancelFile);
ui.clear.addEventListener("click", () => { clearTranscript(); forgetKept(); hideAlert(); setState("ready"); });
for (const b of ui.downloads) b.addEventListener("click", () => download(b.dataset.format));

let dragDepth = 0;
const hasFiles = (e) => e.dataTransfer && [...e.dataTransfer.types].includes("Files");
window.addEventListener("dragenter", (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  if (++dragDepth === 1 && !ui.open.disabled) ui.card.classList.add("dragging");
});
window.addEventListener("dragleave", () => { if (--dragDepth <= 0) { dragDepth = 0; ui.card.classList.remove("dragging"); } });
window.addEventListener("dragover", (e) => { if (hasFiles(e)) e.preventDefault(); });
window.addEventListener("drop", (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  dragDepth = 0;
  ui.card.classList.remove("dragging");
  const [file] = e.dataTransfer.files;
  if (file && !ui.open.disabled) transcribeFile(file);
});

if (DEBUG) {
  phonon.debug = {
    // the samples the worker fed to the stream, as base64 float32 at phonon.sampleRate
    captured: async () => {
      const samples = await engine.recognizer.debug.captured();
      const bytes = new Uint8Array(samples.buffer);
      let text = "";
      for (let i = 0; i < bytes.length; i += 32768) text += String.fromCharCode(...bytes.subarray(i, i + 32768));
      return { rate: phonon.sampleRate, base64: btoa(text) };
    },
    killWorker: () => engine.recognizer.debug.terminateWorker(),
    crashWorker: () => engine.recognizer.debug.crashWorker(),
  };
}

const unsupported = captureSupport();
if (!unsupported.ok) ui.mic.title = unsupported.why;
openKept();                // offers a kept transcript even if the engine then fails to load
main();
