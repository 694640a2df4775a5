// Types for phonon.mjs, phonon-web's JavaScript API (in-browser speech recognition).

export type ErrorCode =
  | "closed" | "busy" | "state" | "sample-rate" | "samples" | "audio" | "cancelled" | "worker"
  | "model-file" | "model-digest" | "model-fetch" | "boot" | "csp" | "server" | "engine" | "overrun" | "webgpu"
  | "unsupported";

export class PhononError extends Error {
  readonly code: ErrorCode;
}

export interface Progress {
  /** "runtime" (Pyodide), "engine" (the wheel), "model" (downloading: loaded/total bytes), "compile" */
  stage: "runtime" | "engine" | "model" | "compile";
  loaded?: number;
  total?: number;
  source?: "network" | "cache";
}

/** A model pinned by digest: downloaded (with CORS if on another origin), checked, cached. */
export interface PinnedModel {
  url: string;
  sha256: string;
  size: number;
}

/** engine/executors/registry.py's backends that a browser has. */
export type Backend = "auto" | "webgpu" | "kernel-workers" | "one-thread";
/** Every name LoadOptions.backend takes, "auto" first. */
export const BACKENDS: readonly Backend[];

export interface LoadOptions {
  /** The folder holding manifest.json and worker.mjs (default: phonon.mjs's own folder). */
  base?: string | URL;
  /** Default: the manifest's model. A URL string is downloaded without a digest check. */
  /** A URL (relative ones resolve against the page, as fetch() does, not against base), a pinned
   *  model (checked and cached; a 4xx answer rejects before the engine starts), or its bytes. */
  model?: string | URL | PinnedModel | ArrayBuffer | Uint8Array | Blob;
  /** The instruction set of the kernels on the CPU: "auto" (the best wasm tier the browser
   *  validates) or a tier name from manifest.json. ("webgpu" is the deprecated spelling of
   *  backend "webgpu": still honoured, with a console warning, until the next major version.) */
  tier?: string;
  /** What runs the encoder: "auto" (default: the GPU when it is real hardware, passes the
   *  known-answer check and encodes faster than the wasm kernels, a verdict kept per adapter,
   *  driver and model; else kernel workers where memory is shared and the model is large; else
   *  one worker), "webgpu" (the encoder on the GPU once the adapter passed the known-answer
   *  check, else the load rejects with code "webgpu"), "kernel-workers" (split across workers:
   *  needs a cross-origin-isolated page) or "one-thread". */
  backend?: Backend;
  /** With backend "auto" (default true): false keeps it on the wasm kernels, the GPU not asked for. */
  preferGpu?: boolean;
  /** (debug, tests) A shader mutation (engine/executors/webgpu/mutations.py SHADER_MUTATIONS) that makes the check fail. */
  gpuTestPatch?: "flip_one_bit" | "wrong_when_decoded_once" | "no_entry_point" | "not_wgsl";
  /** (debug, tests) Take a CPU emulation's adapter (SwiftShader) for real hardware, so "auto" runs the check. */
  gpuTestHardware?: boolean;
  /** (debug, tests) The timed check takes the GPU as faster than the wasm tier, whatever it measured. */
  gpuTestFaster?: boolean;
  /** Encoder workers 1..8 (default: the cores up to 4 when cross-origin isolated with SharedArrayBuffer). */
  threads?: number;
  onProgress?: (progress: Progress) => void;
  /** The parsed manifest.json, if the page has it already. */
  manifest?: Record<string, unknown>;
  /** A model kept on this device by switchModel(), used instead of the manifest's if still stored. */
  localModel?: { sha256: string; name: string } | null;
  /** Why the page is not cross-origin isolated (shown when threads fall back to one). */
  isolationNote?: string | null;
  /** A worker silent this long outside known long steps is declared dead (default 15000 ms). */
  silenceMs?: number;
  /** Start Python from the memory snapshot an earlier load of this same build kept in Cache
   *  Storage, and keep one when there is none (default true; about 30 MB of storage). false:
   *  always start the long way and keep nothing. `details.start` says what happened. */
  snapshot?: boolean;
  /** Enables `debug` hooks. */
  debug?: boolean;
  /** Every message of the engine worker (logs and tests). */
  onWorkerMessage?: ((message: { kind: string; [key: string]: unknown }) => void) | null;
}

export interface Word {
  word: string;
  /** seconds */
  start: number;
  end: number;
}

export interface Transcript {
  text: string;
  words: Word[];
  /** token id, encoder frame (80 ms) and duration in frames */
  tokens: { id: number; frame: number; duration: number }[];
  [key: string]: unknown;
}

export interface TranscribeOptions {
  signal?: AbortSignal;
  /** names the audio in messages (default: a File's name) */
  name?: string;
  /** Seconds of audio done (its words final) and in all: first {done: 0}, then each advance,
   *  and last {done: total} before the promise resolves. */
  onProgress?: (progress: { done: number; total: number }) => void;
}

/** A "partial" event's detail. The worker sends only what changed since its last poll; the
 *  Stream keeps the committed transcript (stream.transcript()) and gives its text here. */
export interface StreamView {
  /** all committed text so far */
  committed: string;
  /** the uncommitted tail (may still change) */
  tentative: string;
  tentativeWords: Word[];
  /** how many words are committed */
  committedWords: number;
  audio_seconds: number;
  metrics: Record<string, number | null>;
}

/** A stream's final transcript: a Transcript, with the stream's audio length and metrics. */
export interface StreamFinal extends Transcript {
  audio_seconds: number;
  metrics: Record<string, number | null>;
  /** where a live-paced stream decoded at the newest audio instead of at the exact position:
   *  [exact position, position used] in 16 kHz samples (empty at the exact pace); the native
   *  CLI's `--replay` decodes the same positions */
  jumps?: [number, number][];
}

/** The stream's named settings: how often it decodes while words are tentative (docs/streaming.md). */
export type StreamLatency = "fast" | "balanced" | "battery";
/** "exact": every decode position, later if behind (a recording); "live": the newest audio when behind (a microphone). */
export type StreamPace = "exact" | "live";

export interface StreamEventMap {
  partial: CustomEvent<StreamView>;
  /** the newly committed words, their text (what the committed text grew by), all committed text */
  commit: CustomEvent<{ words: Word[]; added: string; committed: string }>;
  final: CustomEvent<StreamFinal>;
  /** stream.pending rose above pendingThreshold (over: true) or fell back to half of it (over: false) */
  pending: CustomEvent<{ seconds: number; over: boolean }>;
  /** "overrun": the worker refused audio from an AudioWorklet (decoding was maxPending behind) */
  error: CustomEvent<PhononError>;
  /** the engine worker died and a new one took the stream over from its newest checkpoint */
  restarted: CustomEvent<RestartDetail>;
  /** listen(): the capture sent its last block (sent: every sample it sent); the microphone's
   *  tracks may be stopped now */
  "capture-stopped": CustomEvent<{ sent: number }>;
}

export interface RestartDetail {
  /** what the page can show ("The engine stopped (...) and was restarted in 3.1 s; ...") */
  message: string;
  /** why the worker was taken for dead ("it stopped responding", its error) */
  reason: string;
  /** 1 for the stream's first restart */
  attempt: number;
  /** how long the restart took ("restarted" only) */
  seconds?: number;
}

export interface StreamOptions {
  sampleRate: number;
  /** a SharedArrayBuffer the worklet writes samples into (int32 write/read/dropped counters, then float32) */
  ring?: SharedArrayBuffer | null;
  /** seconds of pending audio at which the "pending" event fires (default 10) */
  pendingThreshold?: number;
  /** seconds of pending audio past which feed() refuses more ("overrun"; default 1200) */
  maxPending?: number;
  /** default "fast" */
  latency?: StreamLatency;
  /** default "exact" */
  pace?: StreamPace;
}

export interface ListenOptions {
  /** the AudioContext to capture in (default: one made for this stream, closed when it ends) */
  context?: AudioContext | null;
  /** as StreamOptions */
  pendingThreshold?: number;
  maxPending?: number;
  /** default "balanced" */
  latency?: StreamLatency;
  /** default "live" */
  pace?: StreamPace;
}

export class Stream extends EventTarget {
  readonly sampleRate: number;
  readonly state: "open" | "finishing" | "finished" | "cancelled" | "failed";
  readonly pendingThreshold: number;
  readonly maxPending: number;
  /** Seconds of audio fed but not yet decoded (nothing is ever skipped: it is decoded later). */
  readonly pending: number;
  /** Resolves once pending <= seconds; rejects if the stream fails or is cancelled first. */
  pendingBelow(seconds: number): Promise<void>;
  /** Mono samples at the stream's rate; throws after finish()/cancel(), on NaN/infinity, or
   *  ("overrun", nothing added) past maxPending seconds of pending audio. */
  feed(samples: Float32Array): void;
  /** The MessagePort for an AudioWorklet that feeds the stream from the audio thread
   *  ({kind: "audio", samples} blocks, then {kind: "end"}); feed() is refused afterwards. The
   *  worker posts {kind: "retain", from} on it: input before sample `from` is no longer needed.
   *  onReconnect(port, from): a new engine worker took the stream over; the worklet sends it
   *  its input from sample `from` on, then goes on there (web/capture-worklet.mjs does). Without
   *  it, a worker that dies ends the stream with an error. */
  takePort(onReconnect?: (port: MessagePort, from: number) => void): MessagePort;
  /** How many engine workers died under this stream and were replaced (at most 3). */
  readonly restarts: number;
  /** listen(): how the microphone's samples reach the engine worker; null for a stream fed by feed() */
  readonly transport: "shared-ring" | "transfer" | null;
  finish(): Promise<StreamFinal>;
  cancel(): void;
  /** everything committed so far (a copy); after finish(), the final transcript's text and words */
  transcript(): { text: string; words: Word[] };
  addEventListener<K extends keyof StreamEventMap>(type: K, listener: (event: StreamEventMap[K]) => void,
                                                   options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
                   options?: boolean | AddEventListenerOptions): void;
}

export interface StartDetail {
  /** "restored": from the snapshot an earlier visit kept; "made": the long way, and a snapshot
   *  is being kept for the next visit; "none": the long way (snapshot: false, or none possible). */
  snapshot: "restored" | "made" | "none";
  /** Why a kept snapshot was not used or none was kept, or null. */
  note: string | null;
}

export interface RecognizerEventMap {
  error: CustomEvent<PhononError>;
  "workers-lost": CustomEvent<{ message: string; threads: number }>;
  /** The GPU failed mid-decode: that decode finished on the CPU (same result); `tier` runs now. */
  "gpu-lost": CustomEvent<{ message: string; tier: string; backend: Exclude<Backend, "auto"> }>;
  /** After "gpu-lost", once no stream or file is open: the CPU engine's kernel workers are back. */
  "workers-back": CustomEvent<{ threads: number; backend: Exclude<Backend, "auto"> }>;
  /** The engine worker died mid-stream; a new one is loading to take the stream over. */
  restart: CustomEvent<RestartDetail>;
  /** ... and has: the stream goes on, nothing committed lost (also fired on the stream). */
  restarted: CustomEvent<RestartDetail>;
}

export class Recognizer extends EventTarget {
  /** A Recognizer comes from `await Recognizer.load(options)`; calling the constructor throws. */
  private constructor();
  static load(options?: LoadOptions): Promise<Recognizer>;
  /** The wasm tier of the kernels, or "webgpu" while the GPU runs the encoder (that value is
   *  deprecated: read `backend`; from the next major version `tier` names the wasm tier only). */
  readonly tier: string;
  /** The backend running the encoder: "webgpu", "kernel-workers" or "one-thread". */
  readonly backend: Exclude<Backend, "auto">;
  /** Why (e.g. "webgpu: google swiftshader (...)", "wasm_relaxed_simd: ... no adapter"), or null. */
  readonly tierNote: string | null;
  readonly threads: number;
  readonly threadsNote: string | null;
  readonly model: { name: string; notice: string; tier: string; backend: Exclude<Backend, "auto">; threads: number };
  readonly timings: Record<string, number>;
  readonly closed: boolean;
  /** What the worker said when ready: modelSource, cacheNote, localModel, localNote, heapBytes,
   *  start (how Python started: from a kept snapshot or not, and why not). */
  readonly details: Record<string, unknown> & { start?: StartDetail };
  /** The engine worker's wasm heap (bytes), as last reported. */
  readonly heapBytes: number | null;
  /** The kernel workers' wasm memory together (bytes; 0 with one worker), as last reported. */
  readonly kernelHeapBytes: number | null;
  /** With load({debug: true}). */
  readonly debug?: { post(message: object): void; captured(): Promise<Float32Array>; terminateWorker(): void };
  /** Float32Array needs its sample rate; ArrayBuffer and Blob are encoded files (WAV or what the browser decodes). */
  transcribe(audio: Float32Array, sampleRate: number, options?: TranscribeOptions): Promise<Transcript>;
  transcribe(audio: ArrayBuffer | Blob | AudioBuffer, sampleRate?: undefined, options?: TranscribeOptions): Promise<Transcript>;
  stream(options: StreamOptions): Stream;
  /** Live transcription of a microphone (getUserMedia's MediaStream) through an AudioWorklet:
   *  `await stream.finish()` stops the capture and gives the final; the tracks stay yours. */
  listen(media: MediaStream, options?: ListenOptions): Promise<Stream>;
  /** Another model (a .gguf's bytes), checked by the engine first; the one in use stays on failure. */
  switchModel(bytes: ArrayBuffer, name?: string): Promise<{ file: string; size: number; sha256: string; cacheNote: string | null;
                                                            name: string; notice: string; tier: string;
                                                            backend: Exclude<Backend, "auto">; threads: number;
                                                            threadsNote: string | null }>;
  close(): void;
  addEventListener<K extends keyof RecognizerEventMap>(type: K, listener: (event: RecognizerEventMap[K]) => void,
                                                       options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
                   options?: boolean | AddEventListenerOptions): void;
}

/** The first tier whose probe WebAssembly.validate accepts (manifest.json "tiers"). */
export function bestTier(tiers: { name: string; probe: number[] }[]): string;

/** The microphone's AudioWorklet node in `context` (capture-worklet.mjs at workletUrl), with a
 *  SharedArrayBuffer ring when the page is cross-origin isolated; listen() uses it. */
export function captureNode(context: AudioContext, workletUrl: URL | string):
  Promise<{ node: AudioWorkletNode; ring: SharedArrayBuffer | null }>;
