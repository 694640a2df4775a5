// The control words shared by the engine worker (web/kernel-pool.mjs) and its kernel workers
// (web/kernel-worker.mjs): one slot of CONTROL.WORDS Int32 words per kernel worker in a
// SharedArrayBuffer. The engine writes OP, ARGS (and FLOATS), then bumps SEQ and notifies; the
// worker runs the op, writes STATUS (0 = done, else a kernel status or -100 unknown op, -101
// exception), sets DONE = SEQ and notifies.
// HEAP: the worker's wasm memory in 64 KiB pages, BUSY: its ms spent on commands, both updated
// after every command; ACK: the SEQ it woke up for (a live worker acknowledges within
// milliseconds, a terminated one never).
export const CONTROL = { WORDS: 32, SEQ: 0, DONE: 1, OP: 2, STATUS: 3, ARGS: 4, NARGS: 16, FLOATS: 20, HEAP: 24, BUSY: 25, ACK: 26 };
export const OP = { STOP: 1, LINEAR: 2, ATTENTION: 3, CONV: 4 };
