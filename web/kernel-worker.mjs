// A kernel worker: a plain WebAssembly instance of the engine's
// kernel side module - no Pyodide - holding its row slice of every linear and computing that
// slice (and its range of attention heads) whenever the engine worker asks.
//
// Started by web/kernel-pool.mjs. Messages, in this order:
//   {kind: "init", module, tier, control, data}   the compiled side module (the engine's tier),
//                                                  the control Int32 SAB and the data SAB
//   {kind: "linear", id, fmt, rows, K, act, packed, lut, ws, scale, q, bias}   a row slice to keep
//   {kind: "conv", id, value, gate, width, ksize, dw, dwb}   a channel range of a conv module
//   {kind: "serve", slot}                          reply "serving", then block on the control
//                                                  words of `slot` and run commands until "stop"
// Replies: {kind: "ready"}, {kind: "serving"}, {kind: "failed", message}.
//
// Commands (control words of this worker's slot, see kernel-pool.mjs): the engine writes the
// arguments and bumps SEQ; this worker runs the op, writes STATUS, sets DONE = SEQ and notifies.
// Inputs and outputs cross through the data SAB; the worker copies them into and out of its own
// memory (a side module cannot import a shared memory it was not built for).

import { CONTROL, KERNEL, OP, activationLayout } from "./kernel-protocol.mjs";

let wasm = null, tier = "", control = null, data = null;
const linears = new Map();              // id -> {fmt, rows, K, act, packed, lut, ws, q, scale, bias} (pointers)
const convs = new Map();                // id -> {value, gate (linear ids), width, ksize, dw, dwb}
let heapTop = 0, permanentTop = 0;      // bump allocator: weights below permanentTop, per-command above
let busyMs = 0;                         // time spent running commands

// ------------------------------------------------------------------------------------------
// the side module: its dylink.0 memory needs, data at __memory_base, a stack, memset

function dylinkMemorySize(module) {
  // dylink.0 subsection 1 (WASM_DYLINK_MEM_INFO): memorysize, memoryalignment, ... (LEB128); the
  // data goes at a 1024-byte base, aligned for any memoryalignment up to 2^10
  const [section] = WebAssembly.Module.customSections(module, "dylink.0");
  const bytes = new Uint8Array(section || new ArrayBuffer(0));
  let at = 0;
  const leb = () => {
    let value = 0, shift = 0, b;
    do { b = bytes[at++]; value |= (b & 0x7f) << shift; shift += 7; } while (b & 0x80);
    return value >>> 0;
  };
  while (at < bytes.length) {
    const type = bytes[at++], size = leb(), end = at + size;
    if (type === 1) return leb();
    at = end;
  }
  return 0;
}

const STACK_BYTES = 1 << 20;

function instantiate(module) {
  const memoryBase = 1024;
  const stackTop = Math.ceil((memoryBase + dylinkMemorySize(module) + STACK_BYTES) / 16) * 16;
  const memory = new WebAssembly.Memory({ initial: Math.ceil((stackTop + 65536) / 65536) });
  const env = {
    memory,
    __memory_base: new WebAssembly.Global({ value: "i32", mutable: false }, memoryBase),
    __table_base: new WebAssembly.Global({ value: "i32", mutable: false }, 0),
    __stack_pointer: new WebAssembly.Global({ value: "i32", mutable: true }, stackTop),
    memset: (p, v, n) => { new Uint8Array(memory.buffer, p, n).fill(v); return p; },
    memcpy: (d, s, n) => { new Uint8Array(memory.buffer).copyWithin(d, s, s + n); return d; },
  };
  const imports = { env };
  for (const imp of WebAssembly.Module.imports(module)) {
    if (!(imp.module in imports) || !(imp.name in imports[imp.module]))
      throw new Error(`the kernel module needs ${imp.module}.${imp.name}, which this loader does not provide`);
  }
  const instance = new WebAssembly.Instance(module, imports);
  const ex = instance.exports;
  if (ex.__wasm_apply_data_relocs) ex.__wasm_apply_data_relocs();
  if (ex.__wasm_call_ctors) ex.__wasm_call_ctors();
  heapTop = permanentTop = stackTop;
  return { exports: ex, memory };
}

function alloc(bytes) {
  const at = Math.ceil(heapTop / 16) * 16;
  heapTop = at + Math.max(bytes, 16);
  const have = wasm.memory.buffer.byteLength;
  if (heapTop > have) wasm.memory.grow(Math.ceil((heapTop - have) / 65536));
  return at;
}

function place(buffer) {            // an ArrayBuffer (or null) -> its copy's address in wasm memory
  if (!buffer) return 0;
  const at = alloc(buffer.byteLength);
  new Uint8Array(wasm.memory.buffer, at, buffer.byteLength).set(new Uint8Array(buffer));
  return at;
}

// ------------------------------------------------------------------------------------------
// ops

function fn(name) {
  const f = wasm.exports[`${name}__${tier}`];
  if (!f) throw new Error(`the kernel module has no ${name}__${tier}`);
  return f;
}

const u8 = () => new Uint8Array(data);
const heap = () => new Uint8Array(wasm.memory.buffer);

function copyIn(offset, bytes) {     // data SAB [offset, offset + bytes) -> a fresh wasm buffer
  const at = alloc(bytes);
  heap().set(u8().subarray(offset, offset + bytes), at);
  return at;
}

function copyOut(at, offset, bytes) {
  u8().set(heap().subarray(at, at + bytes), offset);
}

// A linear's activations (kernel-protocol.mjs activationLayout) copied in, and GEMM scratch.
function activations(inOff, N, K) {
  const layout = activationLayout(N, K);
  const need = wasm.exports.gemm_scratch_bytes(N, K);            // size_t: i32 in wasm32
  return { xq: copyIn(inOff, N * K), xs: copyIn(inOff + layout.xs, 4 * N), scratch: alloc(need), need };
}

function runLinear(args) {
  const [id, N, inOff, outOff] = args;
  const w = linears.get(id);
  if (!w) throw new Error(`no linear ${id} on this worker`);
  const x = activations(inOff, N, w.K), y = alloc(4 * N * w.rows);
  const status = gemm(w, N, x, y);
  if (status === 0) copyOut(y, outOff, 4 * N * w.rows);
  return status;
}

// One slice's y [N][rows] = x W^T (+ b), then its activation (1: silu), as the engine does.
function gemm(w, N, { xq, xs, scratch, need }, y) {
  let status = w.fmt === "fv5"
    ? fn("fv5_gemm")(N, w.rows, w.K, xq, xs, w.packed, w.lut, w.ws, w.bias, y, scratch, need)
    : fn("int8_gemm")(N, w.rows, w.K, xq, xs, w.q, w.scale, w.bias, y, scratch, need);
  if (status === 0 && w.act === 1) status = fn("silu")(N * w.rows, y, y);
  return status;
}

// The conv module's middle for this worker's channels (engine/parakeet_tdt/encoder.py ConvModule._middle):
// value and gate rows of pw1, GLU, depthwise conv over time, silu -> out [N][width].
function runConv(args) {
  const [id, N, inOff, outOff] = args;
  const c = convs.get(id);
  if (!c) throw new Error(`no conv ${id} on this worker`);
  const value = linears.get(c.value), gate = linears.get(c.gate);
  const x = activations(inOff, N, value.K), a = alloc(4 * N * c.width), b = alloc(4 * N * c.width);
  let status = gemm(value, N, x, a);
  if (status === 0) status = gemm(gate, N, x, b);
  if (status === 0) status = wasm.exports.pk_glu_split(N, c.width, a, b, a);
  if (status === 0) status = wasm.exports.pk_dwconv1d(N, c.width, c.ksize, a, c.dw, c.dwb, b);
  if (status === 0) status = fn("silu")(N * c.width, b, b);
  if (status === 0) copyOut(b, outOff, 4 * N * c.width);
  return status;
}

function runAttention(args, floats) {
  const [T, D, dk, h0, h1, inOff, outOff] = args;
  const s = floats[0];
  const td = 4 * T * D, pd = 4 * (2 * T - 1) * D;
  const q = copyIn(inOff, td), k = copyIn(inOff + td, td), v = copyIn(inOff + 2 * td, td);
  const p = copyIn(inOff + 3 * td, pd);
  const u = copyIn(inOff + 3 * td + pd, 4 * D), vb = copyIn(inOff + 3 * td + pd + 4 * D, 4 * D);
  const scratch = alloc(4 * wasm.exports.pk_attention_scratch_floats(T, dk));
  const out = alloc(td);
  const status = wasm.exports.pk_attention_heads(T, D, dk, h0, h1, q, k, v, p, u, vb, s, scratch, out);
  if (status === 0) {                     // this worker's heads: columns h0*dk .. h1*dk of [T][D]
    const c0 = 4 * h0 * dk, width = 4 * (h1 - h0) * dk, h = heap(), d = u8();
    for (let t = 0; t < T; t++) d.set(h.subarray(out + t * 4 * D + c0, out + t * 4 * D + c0 + width), outOff + t * 4 * D + c0);
  }
  return status;
}

// ------------------------------------------------------------------------------------------
// the command loop: blocks in Atomics.wait between commands (a worker may block; nothing else
// runs here)

// `seen` is the command number read before "serving" was posted: the pool may post its first
// command as soon as that message arrives, and a worker that read the number after that (it
// can be descheduled between the two on a loaded machine) would wait for a command already
// posted and never acknowledge it.
function serve(slot, seen) {
  const base = slot * CONTROL.WORDS;
  control[base + CONTROL.HEAP] = wasm.memory.buffer.byteLength / 65536;
  const floats = new Float32Array(control.buffer, 4 * (base + CONTROL.FLOATS), 4);
  for (;;) {
    Atomics.wait(control, base + CONTROL.SEQ, seen);
    const seq = Atomics.load(control, base + CONTROL.SEQ);
    if (seq === seen) continue;
    seen = seq;
    Atomics.store(control, base + CONTROL.ACK, seq);
    const op = control[base + CONTROL.OP];
    const args = control.subarray(base + CONTROL.ARGS, base + CONTROL.ARGS + CONTROL.NARGS);
    let status;
    heapTop = permanentTop;                           // per-command buffers start afresh
    const started = performance.now();
    try {
      if (op === OP.STOP) return;
      status = op === OP.LINEAR ? runLinear(args) : op === OP.ATTENTION ? runAttention(args, floats)
             : op === OP.CONV ? runConv(args) : -100;
    } catch (e) {
      status = -101;
      postMessage({ kind: KERNEL.FAILED, message: String(e && e.message || e) });
    }
    control[base + CONTROL.STATUS] = status;
    control[base + CONTROL.HEAP] = wasm.memory.buffer.byteLength / 65536;
    busyMs += performance.now() - started;
    control[base + CONTROL.BUSY] = Math.round(busyMs);
    Atomics.store(control, base + CONTROL.DONE, seq);
    Atomics.notify(control, base + CONTROL.DONE);
  }
}

self.onmessage = ({ data: m }) => {
  try {
    if (m.kind === KERNEL.INIT) {
      wasm = instantiate(m.module);
      tier = m.tier;
      control = new Int32Array(m.control);
      data = m.data;
      postMessage({ kind: KERNEL.READY });
    } else if (m.kind === KERNEL.LINEAR) {
      linears.set(m.id, { fmt: m.fmt, rows: m.rows, K: m.K, act: m.act, packed: place(m.packed), lut: place(m.lut),
                          ws: place(m.ws), q: place(m.q), scale: place(m.scale), bias: place(m.bias) });
      permanentTop = heapTop;
    } else if (m.kind === KERNEL.CONV) {
      convs.set(m.id, { value: m.value, gate: m.gate, width: m.width, ksize: m.ksize, dw: place(m.dw), dwb: place(m.dwb) });
      permanentTop = heapTop;
    } else if (m.kind === KERNEL.SERVE) {
      const seen = Atomics.load(control, m.slot * CONTROL.WORDS + CONTROL.SEQ);
      postMessage({ kind: KERNEL.SERVING });
      if (m.holdMs > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, m.holdMs);
      serve(m.slot, seen);
    }
  } catch (e) {
    postMessage({ kind: KERNEL.FAILED, message: String(e && e.message || e) });
  }
};
