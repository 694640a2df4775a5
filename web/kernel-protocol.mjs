// The control words shared by the engine worker (web/kernel-pool.mjs) and its kernel workers
// (web/kernel-worker.mjs): one slot of CONTROL.WORDS Int32 words per kernel worker in a
// SharedArrayBuffer. The engine writes OP, ARGS (and FLOATS), then bumps SEQ and notifies; the
// worker runs the op, writes STATUS (0 = done, else a kernel status or -100 unknown op, -101
// exception), sets DONE = SEQ and notifies.
// HEAP: the worker's wasm memory in 64 KiB pages (from serving on, updated after every
// command); BUSY: its ms spent on commands; ACK: the SEQ it woke up for (a live worker
// acknowledges within milliseconds, a terminated one never).
export const CONTROL = { WORDS: 32, SEQ: 0, DONE: 1, OP: 2, STATUS: 3, ARGS: 4, NARGS: 16, FLOATS: 20, HEAP: 24, BUSY: 25, ACK: 26 };
export const OP = { STOP: 1, LINEAR: 2, ATTENTION: 3, CONV: 4 };

// The messages that set a kernel worker up (postMessage; commands then go through CONTROL):
// engine -> kernel worker: INIT {module, tier, control, data}, LINEAR {id, fmt, rows, K, act,
// packed, lut, ws, scale, q, bias} (a row slice to keep), CONV {id, value, gate, width, ksize, dw,
// dwb} (a channel range of a conv module), SERVE {slot} (reply SERVING, then block on CONTROL);
// kernel worker -> engine: READY, SERVING, FAILED {message}.
export const KERNEL = Object.freeze({
  INIT: "init", LINEAR: "linear", CONV: "conv", SERVE: "serve", READY: "ready", SERVING: "serving", FAILED: "failed",
});

export const align16 = (n) => Math.ceil(n / 16) * 16;

// Where a linear's (or conv middle's) activations lie in the data buffer: xq [N][K] int8 at 0,
// xs [N] float32 at `xs`; outputs may start at `end`.
export function activationLayout(N, K) {
  const xs = align16(N * K);
  return { xs, end: align16(xs + 4 * N) };
}
