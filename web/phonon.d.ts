// Types for phonon.mjs, phonon-web's JavaScript API (in-browser speech recognition).

export type ErrorCode =
  | "closed" | "busy" | "state" | "sample-rate" | "samples" | "audio" | "cancelled" | "worker"
  | "model-file" | "model-digest" | "model-fetch" | "boot" | "engine";

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

export interface LoadOptions {
  /** The folder holding manifest.json and worker.mjs (default: phonon.mjs's own folder). */
  base?: string | URL;
  /** Default: the manifest's model. A URL string is downloaded without a digest check. */
  model?: string | URL | PinnedModel | ArrayBuffer | Uint8Array | Blob;
  /** "auto" (the best the browser validates) or a tier name from manifest.json. */
  tier?: string;
  /** Encoder workers 1..8 (default: the cores up to 4 when cross-origin isolated). */
  threads?: number;
  onProgress?: (progress: Progress) => void;
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
  /** seconds of audio done and in all */
  onProgress?: (progress: { done: number; total: number }) => void;
}

export interface StreamView {
  committed: string;
  tentative: string;
  words: (Word & { committed: boolean })[];
  audio_seconds: number;
  metrics: Record<string, number | null>;
}

export interface StreamFinal {
  text: string;
  words: Word[];
  tokens: { id: number; frame: number; duration: number }[];
  audio_seconds: number;
  metrics: Record<string, number | null>;
}

export interface StreamEventMap {
  partial: CustomEvent<StreamView>;
  commit: CustomEvent<{ words: Word[]; committed: string }>;
  final: CustomEvent<StreamFinal>;
}

export class Stream extends EventTarget {
  readonly sampleRate: number;
  readonly state: "open" | "finishing" | "finished" | "cancelled" | "failed";
  /** Mono samples at the stream's rate; throws after finish()/cancel() or on NaN/infinity. */
  feed(samples: Float32Array): void;
  finish(): Promise<StreamFinal>;
  cancel(): void;
  addEventListener<K extends keyof StreamEventMap>(type: K, listener: (event: StreamEventMap[K]) => void,
                                                   options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
                   options?: boolean | AddEventListenerOptions): void;
}

export interface RecognizerEventMap {
  error: CustomEvent<PhononError>;
  "workers-lost": CustomEvent<{ message: string; threads: number }>;
}

export class Recognizer extends EventTarget {
  static load(options?: LoadOptions): Promise<Recognizer>;
  readonly tier: string;
  readonly threads: number;
  readonly threadsNote: string | null;
  readonly model: { name: string; notice: string; tier: string; threads: number };
  readonly timings: Record<string, number>;
  readonly closed: boolean;
  /** Float32Array needs its sample rate; ArrayBuffer and Blob are encoded files (WAV or what the browser decodes). */
  transcribe(audio: Float32Array, sampleRate: number, options?: TranscribeOptions): Promise<Transcript>;
  transcribe(audio: ArrayBuffer | Blob, sampleRate?: undefined, options?: TranscribeOptions): Promise<Transcript>;
  stream(options: { sampleRate: number }): Stream;
  close(): void;
  addEventListener<K extends keyof RecognizerEventMap>(type: K, listener: (event: RecognizerEventMap[K]) => void,
                                                       options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
                   options?: boolean | AddEventListenerOptions): void;
}

/** The first tier whose probe WebAssembly.validate accepts (manifest.json "tiers"). */
export function bestTier(tiers: { name: string; probe: number[] }[]): string;
