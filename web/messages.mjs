// The live wing's messages, named once: what the page (phonon.mjs, app.mjs), the engine worker
// (worker.mjs) and the capture worklet (capture-worklet.mjs) say to each other, and the capture
// ring they share. Each file imports its kinds from here; tests/test_web_protocol.py checks that
// no other kind is spelled out anywhere in web/. (The kernel workers' own words:
// kernel-protocol.mjs.)
//
// Every message is a plain object {kind, ...payload}; the payloads below.

// page -> engine worker
export const TO_WORKER = Object.freeze({
  INIT: "init",                 // {manifest, tier, debug, localModel, modelBytes, threads, snapshot, gpu}:
                                //   boot, fetch/verify/cache the model (localModel {sha256, name}: a file
                                //   opened before, if cached; modelBytes {name, bytes}: use these; gpu
                                //   {mode: "force" | "prefer", patch, hardware, faster}: the encoder on WebGPU)
  OPEN_MODEL: "open-model",     // {name, bytes}: switch to a local .gguf (the old one kept on failure)
  START: "start",               // {rate, port, ring, id, maxPending, resume, latency, pace}: open the live
                                //   stream; its audio arrives on `port` (FEED) or in `ring`; resume: the
                                //   newest checkpoint's JSON of a stream whose worker died
  CANCEL_STREAM: "cancel-stream", // {}: drop the open stream (no final)
  FILE: "file",                 // {name, wav} | {name, pcm, rate, channels}: transcribe a file
  CANCEL_FILE: "cancel-file",   // {}: stop the file being transcribed
  PING: "ping",                 // {}: heartbeat (answered with PONG)
  // debug only (Recognizer.load({debug: true}); the tests' hooks)
  CAPTURED: "captured",         // {}: the samples fed so far (answered with CAPTURED)
  CRASH: "crash",               // {}: hand the captured samples over (CAPTURED_BEFORE_CRASH), then stop
  KILL_KERNEL_WORKER: "kill-kernel-worker", // {slot}: a kernel worker stops, as if crashed
  LOSE_GPU: "lose-gpu",         // {afterReads}: the WebGPU device is destroyed mid-decode
  DESTROY_GPU: "destroy-gpu",   // {}: ... now, while idle
  HANG_GPU: "hang-gpu",         // {afterReads, limitMs}: a later read never settles (the watchdog)
  PLACE_TOKENS_WITH: "place-tokens-with", // {bytes, tier}: streams take their tokens from this model's decodes
  CSP_PROBE: "csp-probe",       // {}: whether the page's Content-Security-Policy blocks eval (it should)
});

// engine worker -> page
export const TO_PAGE = Object.freeze({
  STAGE: "stage",               // {stage}: a start-up step begins ("model", "compile", ...)
  PROGRESS: "progress",         // {loaded, total, source}: the model's download
  READY: "ready",               // {tier, tierNote, adapter, threads, threadsNote, model, modelSource, cacheNote,
                                //  localModel, localNote, start, timings, ...memory}: INIT done
  MODEL_SWITCHED: "model-switched", // {file, size, sha256, cacheNote, threadsNote, ...the model's info}: OPEN_MODEL done
  STARTED: "started",           // {id, rate, checkpoint}: the stream is open
  PARTIAL: "partial",           // {id, view, metrics, due, nextWindowSeconds, ending, checkpoint, stepMs}:
                                //   what changed since the last (view), and the newest checkpoint
  DECODING: "decoding",         // {id, nextWindowSeconds}: a decode of that window starts
  FINAL: "final",               // {id, result, metrics, ...memory}: the stream finished
  STREAM_CANCELLED: "stream-cancelled", // {id}
  FILE_BUSY: "file-busy",       // {name, seconds}: a file's transcription begins (other work waits)
  FILE_PROGRESS: "file-progress", // {name, done, total}
  FILE_RESULT: "file-result",   // {name, result, ...memory}
  FILE_CANCELLED: "file-cancelled", // {name}
  WORKERS_LOST: "workers-lost", // {message, threads}: kernel workers gone; the engine goes on alone
  WORKERS_BACK: "workers-back", // {threads, threadsNote}
  GPU_LOST: "gpu-lost",         // {message, tier, tierNote}: the device is gone; the CPU goes on
  PONG: "pong",                 // {...memory} ({heapBytes: null} before the engine started)
  ERROR: "error",               // {code, message, id?}: this request failed; the worker goes on
  FATAL: "fatal",               // {code, message, detail?}: the worker cannot go on
  // debug only: the answers to TO_WORKER's debug kinds
  CAPTURED: "captured",         // {samples}
  CAPTURED_BEFORE_CRASH: "captured-before-crash", // {samples}
  TOKENS_PLACED: "tokens-placed", // {}
  CSP_PROBE: "csp-probe",       // {evalBlocked}
});

// feeder (the capture worklet, or the page's stream) <-> engine worker, on the stream's port
export const FEED = Object.freeze({
  AUDIO: "audio",               // {samples}: a block (its buffer transferred)
  END: "end",                   // {}: no more audio
  RESENT: "resent",             // {}: a resumed stream's input was fed again (its ring may be read now)
  RETAIN: "retain",             // {from} (worker -> feeder): input before sample `from` may be dropped
});

// page -> capture worklet (its node's port), and back
export const CAPTURE = Object.freeze({
  CONNECT: "connect",           // {port, from}: feed this (new) worker; resend the kept input from `from`
  STOP: "stop",                 // {}: send the last block, then FEED.END
  STOPPED: "stopped",           // {sent} (worklet -> page): every sample sent
});

// the demo page <-> its service worker (sw.js, a classic script: it spells these two out, and
// tests/test_web_protocol.py holds it to them)
export const SERVICE_WORKER = Object.freeze({
  PROGRESS: "sw-progress",      // {loaded, total} (service worker -> page): the app shell being cached
  SKIP_WAITING: "skip-waiting", // {} (page -> waiting service worker): take over now
});

// -- the capture ring -----------------------------------------------------------------------------
// A SharedArrayBuffer that the worklet writes every quantum into and the worker drains on its own
// timer (when the page is cross-origin isolated). Header (Int32): [WRITTEN] samples written,
// [READ] samples read, both modulo 2^32; [DROPPED] samples dropped because the ring was full (the
// worker fell behind by more than it holds). The length is a power of two, so positions modulo
// 2^32 stay consistent modulo the length. One producer (the worklet), one consumer (the worker).
export const RING = Object.freeze({ WRITTEN: 0, READ: 1, DROPPED: 2, HEADER_BYTES: 16 });

/** A ring holding at least `seconds` of audio at `rate`, or null where SharedArrayBuffer cannot
 *  be shared (the page is not cross-origin isolated). */
export function makeRing(rate, seconds) {
  if (!globalThis.crossOriginIsolated || typeof SharedArrayBuffer !== "function") return null;
  return new SharedArrayBuffer(RING.HEADER_BYTES + 4 * 2 ** Math.ceil(Math.log2(rate * seconds)));
}

/** {header, data} views of a ring's SharedArrayBuffer. */
export function openRing(sab) {
  return { header: new Int32Array(sab, 0, RING.HEADER_BYTES / 4), data: new Float32Array(sab, RING.HEADER_BYTES) };
}

/** Write x into the ring; false (and the samples counted as dropped) when it has no room. */
export function ringWrite({ header, data }, x) {
  const cap = data.length;
  const w = Atomics.load(header, RING.WRITTEN) >>> 0;
  const r = Atomics.load(header, RING.READ) >>> 0;
  if (cap - ((w - r) >>> 0) < x.length) {
    Atomics.add(header, RING.DROPPED, x.length);
    return false;
  }
  const at = w % cap;
  const first = Math.min(x.length, cap - at);
  data.set(x.subarray(0, first), at);
  if (first < x.length) data.set(x.subarray(first), 0);
  Atomics.store(header, RING.WRITTEN, (w + x.length) | 0);
  return true;
}

/** Everything written and not yet read, to take(samples) in order (copies: the worklet reuses
 *  the ring), then marked read. */
export function ringDrain({ header, data }, take) {
  const cap = data.length;
  const w = Atomics.load(header, RING.WRITTEN) >>> 0;
  let r = Atomics.load(header, RING.READ) >>> 0;
  let n = (w - r) >>> 0;
  while (n > 0) {
    const at = r % cap;
    const len = Math.min(n, cap - at);
    take(data.slice(at, at + len));
    r = (r + len) >>> 0;
    n -= len;
  }
  Atomics.store(header, RING.READ, r | 0);
}

/** Mark everything written as read (its samples were sent another way). */
export function ringSkip({ header }) {
  Atomics.store(header, RING.READ, Atomics.load(header, RING.WRITTEN));
}

/** The samples dropped so far because the ring was full. */
export function ringDropped({ header }) {
  return Atomics.load(header, RING.DROPPED);
}
