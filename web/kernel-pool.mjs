// Kernel workers beside the engine worker. The engine (Python in
// Pyodide, engine/executors/workers.py KernelWorkers) keeps slice 0 of every split linear and the first
// range of attention heads; each kernel worker (web/kernel-worker.mjs) keeps one other slice and
// computes it when asked. Activations go out and results come back through a SharedArrayBuffer,
// synchronised with Atomics: the engine worker posts a command to every kernel worker, computes
// its own part, then blocks until all are done. Needs cross-origin isolation (SharedArrayBuffer).
//
//   const pool = await KernelPool.forPyodide({ pyodide, tier, workers: 1, modulePath });
//   ... Python registers its linears (addLinear) ...
//   await pool.serve();
//   pool.linearBegin(...); (own slice in Python) pool.linearEnd(...);
//
// Pointers are addresses in Pyodide's wasm memory (ctypes.addressof); heap() returns its current
// Uint8Array (a new one after the memory grows).

import { CONTROL, KERNEL, OP, activationLayout, align16 } from "./kernel-protocol.mjs";

const MAX_DATA_BYTES = 1 << 30;
const WAIT_MS = 120000;                         // a command this long has failed
const ACK_MS = 20000;                           // a worker that has not woken up by then has died (3 s and 10 s
                                                // lost live workers on this 2-core VM under load)

export class KernelPoolError extends Error {}

export class KernelPool {
  // For an engine in `pyodide`: the tier's side module read from Pyodide's file system
  // (engine.kernels.wasm_module_path), addresses read in its wasm memory.
  static async forPyodide({ pyodide, tier, workers, modulePath, workerURL }) {
    const module = await WebAssembly.compile(pyodide.FS.readFile(modulePath));
    return KernelPool.start({ module, tier, workers, heap: () => pyodide._module.HEAPU8, workerURL });
  }

  static async start({ module, tier, workers, heap, workerURL = new URL("./kernel-worker.mjs", import.meta.url) }) {
    if (!self.crossOriginIsolated)
      throw new KernelPoolError("kernel workers need a cross-origin isolated page (COOP/COEP headers)");
    if (typeof SharedArrayBuffer === "undefined")
      throw new KernelPoolError("kernel workers need SharedArrayBuffer, which this browser does not offer even to an isolated page");
    const pool = new KernelPool(workers, heap, workerURL);
    try {
      await Promise.all(pool.workers.map((w) => pool._request(w, { kind: KERNEL.INIT, module, tier,
        control: pool.control.buffer, data: pool.data }, KERNEL.READY)));
    } catch (e) {
      pool.close();                             // none left running when one could not start
      throw e;
    }
    return pool;
  }

  constructor(count, heap, workerURL) {
    this.heap = heap;
    this.control = new Int32Array(new SharedArrayBuffer(4 * CONTROL.WORDS * count));
    this.data = new SharedArrayBuffer(16 << 20, { maxByteLength: MAX_DATA_BYTES });
    this.linears = new Map();                  // id -> [{worker, r0, rows}] (the kernel workers' slices)
    this.convs = new Map();                    // id -> [{worker, r0 (first channel), rows (channels)}]
    this.pending = null;                       // the command in flight: {kind, posted: [[slot, seq]], ...}
    this.failures = [];                        // messages of kernel workers that failed
    this.lost = null;                          // why the pool gave up (a kernel worker was lost)
    this.waitedMs = 0;                         // the engine worker's time blocked on kernel workers
    this.ownMs = 0;                            // its own part of split commands
    this.workers = Array.from({ length: count }, (_, i) => {
      const w = new Worker(workerURL, { type: "module", name: `phonon-kernels-${i}` });
      w.addEventListener("message", ({ data }) => { if (data.kind === KERNEL.FAILED) this.failures.push(data.message); });
      w.addEventListener("error", (e) => this.failures.push(`kernel worker ${i}: ${e.message || "error"}`));
      return w;
    });
  }

  get size() { return this.workers.length; }

  _word(slot, word) { return Atomics.load(this.control, slot * CONTROL.WORDS + word); }

  // The kernel workers' wasm memory now (bytes, once serving), their ms spent on commands and
  // the commands each has run (for the benchmarks and tests).
  get heapBytes() { return this.workers.reduce((sum, _, slot) => sum + 65536 * this._word(slot, CONTROL.HEAP), 0); }
  get busyMs() { return this.workers.map((_, slot) => this._word(slot, CONTROL.BUSY)); }
  get commands() { return this.workers.map((_, slot) => this._word(slot, CONTROL.DONE)); }

  _request(w, message, reply) {
    const index = this.workers.indexOf(w);
    return new Promise((resolve, reject) => {
      const onMessage = ({ data }) => {
        if (data.kind !== reply && data.kind !== KERNEL.FAILED) return;
        w.removeEventListener("message", onMessage);
        if (data.kind === reply) resolve(data);
        else reject(new KernelPoolError(`kernel worker ${index}: ${data.message}`));
      };
      w.addEventListener("message", onMessage);
      w.addEventListener("error", (e) => reject(new KernelPoolError(`kernel worker ${index} failed: ${e.message}`)), { once: true });
      w.postMessage(message);
    });
  }

  // -- set-up (before serve) ------------------------------------------------------------------

  _copy(ptr, bytes) {                            // Pyodide memory -> a fresh ArrayBuffer
    return ptr ? this.heap().slice(ptr, ptr + bytes).buffer : null;
  }

  // One kernel worker's row slice [r0, r0 + rows) of linear `id` (O x K): fv5 (packed blocks, the
  // slice's [rows][8] int8 grid and scales) or int8 (q [rows][K], scale [rows]); bias optional.
  // act: 1 = silu on the slice's output (the feed-forward's first linear).
  addLinear(id, worker, fmt, r0, rows, K, act, a, aBytes, b, bBytes, c, cBytes, bias) {
    const message = { kind: KERNEL.LINEAR, id, fmt, rows, K, act, packed: null, lut: null, ws: null, q: null, scale: null,
                      bias: this._copy(bias, 4 * rows) };
    if (fmt === "fv5") Object.assign(message, { packed: this._copy(a, aBytes), lut: this._copy(b, bBytes), ws: this._copy(c, cBytes) });
    else Object.assign(message, { q: this._copy(a, aBytes), scale: this._copy(b, bBytes) });
    const transfer = [message.packed, message.lut, message.ws, message.q, message.scale, message.bias].filter(Boolean);
    this.workers[worker].postMessage(message, transfer);
    if (!this.linears.has(id)) this.linears.set(id, []);
    this.linears.get(id).push({ worker, r0, rows });
  }

  // The conv module's middle for channels [c0, c0 + width) on one kernel worker: linears
  // `value` and `gate` (its pw1 rows), GLU, the depthwise conv (dw [width][ksize], dwb [width]), silu.
  addConv(id, worker, value, gate, c0, width, ksize, dw, dwBytes, dwb, dwbBytes) {
    const message = { kind: KERNEL.CONV, id, value, gate, width, ksize, dw: this._copy(dw, dwBytes), dwb: this._copy(dwb, dwbBytes) };
    this.workers[worker].postMessage(message, [message.dw, message.dwb]);
    if (!this.convs.has(id)) this.convs.set(id, []);
    this.convs.get(id).push({ worker, r0: c0, rows: width });
  }

  // holdMs (tests only): each worker blocks that long after saying "serving", as a worker that
  // a loaded machine deschedules there would; the first command must still be answered.
  async serve({ holdMs = 0 } = {}) {
    await Promise.all(this.workers.map((w, slot) => this._request(w, { kind: KERNEL.SERVE, slot, holdMs }, KERNEL.SERVING)));
  }

  // -- commands -----------------------------------------------------------------------------

  _ensure(bytes) {
    if (bytes > MAX_DATA_BYTES) throw new KernelPoolError(`a kernel command needs ${bytes} bytes of shared memory`);
    if (this.data.byteLength < bytes) this.data.grow(Math.min(MAX_DATA_BYTES, align16(Math.max(bytes, 2 * this.data.byteLength))));
  }

  _post(slot, op, args, floats = []) {
    const base = slot * CONTROL.WORDS;
    const c = this.control;
    c[base + CONTROL.OP] = op;
    for (let i = 0; i < args.length; i++) c[base + CONTROL.ARGS + i] = args[i];
    const f = new Float32Array(c.buffer, 4 * (base + CONTROL.FLOATS), 4);
    for (let i = 0; i < floats.length; i++) f[i] = floats[i];
    const seq = (c[base + CONTROL.SEQ] + 1) | 0;
    Atomics.store(c, base + CONTROL.SEQ, seq);
    Atomics.notify(c, base + CONTROL.SEQ);
    return seq;
  }

  _wait(slot, seq, posted) {
    const base = slot * CONTROL.WORDS, c = this.control;
    for (;;) {
      const done = Atomics.load(c, base + CONTROL.DONE);
      if (done === seq) break;
      Atomics.wait(c, base + CONTROL.DONE, done, 50);
      const waited = performance.now() - posted;
      if (Atomics.load(c, base + CONTROL.ACK) !== seq && waited > ACK_MS)
        this._lose(`kernel worker ${slot} stopped answering (it was terminated or crashed)`);
      if (waited > WAIT_MS) this._lose(`kernel worker ${slot} did not finish a command in ${WAIT_MS / 1000} s`);
    }
    const status = c[base + CONTROL.STATUS];
    if (status !== 0)
      this._lose(`kernel worker ${slot} failed (status ${status})${this.failures.length ? ": " + this.failures.at(-1) : ""}`);
  }

  // A lost kernel worker ends the pool: the others are stopped, and every later command is
  // refused, so the engine (engine/executors/workers.py KernelWorkers) goes on alone.
  _lose(message) {
    if (!this.lost) {
      this.lost = message;
      this.close();
    }
    throw new KernelPoolError(message);
  }

  _begin(kind, posted) {
    if (this.pending) throw new KernelPoolError(`a ${this.pending.kind} command is still in flight`);
    this.pending = { kind, posted, at: performance.now() };
  }

  _end(kind) {
    const p = this.pending;
    if (!p || p.kind !== kind) throw new KernelPoolError(`no ${kind} command in flight`);
    this.pending = null;
    const started = performance.now();
    this.ownMs += started - p.at;
    for (const [slot, seq] of p.posted) this._wait(slot, seq, p.at);
    this.waitedMs += performance.now() - started;
    return p;
  }

  // xq [N][K] int8 and xs [N] float32 out to every kernel worker holding a slice of `id`.
  linearBegin(id, N, K, xqPtr, xsPtr) {
    this._rowsBegin("linear", OP.LINEAR, this.linears.get(id), id, N, K, xqPtr, xsPtr);
  }

  // Waits for the kernel workers, then puts each slice's [N][rows] into its columns of y [N][O].
  linearEnd(yPtr, O) { this._rowsEnd("linear", yPtr, O); }

  // The conv module's middle: the same input as a linear, each worker's channels back into h [N][D].
  convBegin(id, N, K, xqPtr, xsPtr) {
    this._rowsBegin("conv", OP.CONV, this.convs && this.convs.get(id), id, N, K, xqPtr, xsPtr);
  }

  convEnd(hPtr, D) { this._rowsEnd("conv", hPtr, D); }

  _rowsBegin(kind, op, slices, id, N, K, xqPtr, xsPtr) {
    if (this.lost) throw new KernelPoolError(this.lost);
    if (!slices) throw new KernelPoolError(`${kind} ${id} was not registered`);
    const layout = activationLayout(N, K);
    const outOffs = [];
    let end = layout.end;
    for (const s of slices) { outOffs.push(end); end = align16(end + 4 * N * s.rows); }
    this._ensure(end);
    const d = new Uint8Array(this.data), h = this.heap();
    d.set(h.subarray(xqPtr, xqPtr + N * K), 0);
    d.set(h.subarray(xsPtr, xsPtr + 4 * N), layout.xs);
    this._begin(kind, slices.map((s, i) => [s.worker, this._post(s.worker, op, [id, N, 0, outOffs[i]])]));
    Object.assign(this.pending, { slices, outOffs, N });
  }

  _rowsEnd(kind, yPtr, O) {
    const { slices, outOffs, N } = this._end(kind);
    const h = this.heap(), d = new Uint8Array(this.data);
    slices.forEach((s, i) => {
      const width = 4 * s.rows;
      for (let n = 0; n < N; n++) {
        const from = outOffs[i] + n * width;
        h.set(d.subarray(from, from + width), yPtr + 4 * (n * O + s.r0));
      }
    });
  }

  // Heads ranges[i] = [h0, h1] go to kernel worker i; q, k, v [T][D], p [2T-1][D], u, vb [D].
  attentionBegin(T, D, dk, rangesJSON, qPtr, kPtr, vPtr, pPtr, uPtr, vbPtr, s) {
    if (this.lost) throw new KernelPoolError(this.lost);
    const ranges = JSON.parse(rangesJSON);
    const td = 4 * T * D, pd = 4 * (2 * T - 1) * D;
    const inBytes = align16(3 * td + pd + 8 * D), outOff = inBytes;
    this._ensure(outOff + td);
    const d = new Uint8Array(this.data), h = this.heap();
    let at = 0;
    for (const [ptr, bytes] of [[qPtr, td], [kPtr, td], [vPtr, td], [pPtr, pd], [uPtr, 4 * D], [vbPtr, 4 * D]]) {
      d.set(h.subarray(ptr, ptr + bytes), at);
      at += bytes;
    }
    this._begin("attention", ranges.map(([h0, h1], slot) =>
      [slot, this._post(slot, OP.ATTENTION, [T, D, dk, h0, h1, 0, outOff], [s])]));
    Object.assign(this.pending, { T, D, dk, ranges, outOff });
  }

  // Waits, then copies each kernel worker's heads (its columns of [T][D]) into out.
  attentionEnd(outPtr) {
    const { T, D, dk, ranges, outOff } = this._end("attention");
    const h = this.heap(), d = new Uint8Array(this.data);
    for (const [h0, h1] of ranges) {
      const c0 = 4 * h0 * dk, width = 4 * (h1 - h0) * dk;
      for (let t = 0; t < T; t++) {
        const from = outOff + 4 * t * D + c0;
        h.set(d.subarray(from, from + width), outPtr + 4 * t * D + c0);
      }
    }
  }

  // For tests: kernel worker `slot` stops answering, as a crashed one would (the pool finds out at
  // its next command). terminate() alone is not enough to test with: Chromium ends a worker
  // that is blocked in Atomics.wait only later, so it is told to leave its loop first.
  kill(slot) {
    this._post(slot, OP.STOP, []);
    this.workers[slot].terminate();
  }

  close() {
    this.workers.forEach((w, slot) => { this._post(slot, OP.STOP, []); w.terminate(); });
  }
}
