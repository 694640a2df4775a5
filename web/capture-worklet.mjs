// AudioWorklet processor: microphone samples at the AudioContext's own rate, mono (the node
// is created with channelCount 1, "explicit", so WebAudio does the down-mix), straight to the
// engine worker through a MessagePort - the main thread is not on the audio path. Resampling
// happens in the engine (engine/stream/session.py), not here.
//
// Two transports:
// - transferable blocks: 128-frame render quanta are gathered into blocks of `blockSize`
//   samples and posted with their ArrayBuffer transferred;
// - a SharedArrayBuffer ring (when the page is cross-origin isolated): every quantum is
//   written into the ring; the worker drains it on its own timer. Header (Int32): [0] samples
//   written, [1] samples read (both modulo 2^32), [2] samples dropped because the ring was
//   full (the worker fell behind by more than the ring holds). The ring's length is a power
//   of two, so positions modulo 2^32 stay consistent modulo the length.
// On {kind: "stop"} the last partial block is sent, then {kind: "end"} on the same port, so the
// worker sees every sample before it finishes the stream.
//
// A worker that dies mid-stream loses what it was sent. So this processor keeps what it sent
// from the newest checkpoint on (the worker posts {kind: "retain", from} as it may drop older
// input: about the stream's window plus what waits undecoded), and when the page connects a
// new worker's port with {kind: "connect", port, from} it sends that input again from `from`
// (with a ring: by the port, then it empties the ring and says {kind: "resent"}) and goes on.

// What was sent, from the newest checkpoint on, in chunks of up to `size` samples.
class KeptInput {
  constructor(size) {
    this.size = size;
    this.chunks = [];            // [{at, samples}], full ones, oldest first
    this.tail = new Float32Array(size);
    this.fill = 0;
    this.count = 0;              // samples sent since the stream began
  }

  push(x) {
    for (let i = 0; i < x.length;) {
      const n = Math.min(x.length - i, this.size - this.fill);
      this.tail.set(x.subarray(i, i + n), this.fill);
      this.fill += n;
      i += n;
      if (this.fill === this.size) {
        this.chunks.push({ at: this.count + i - this.size, samples: this.tail });
        this.tail = new Float32Array(this.size);
        this.fill = 0;
      }
    }
    this.count += x.length;
  }

  trim(from) {
    while (this.chunks.length && this.chunks[0].at + this.size <= from) this.chunks.shift();
  }

  // Copies of the input from sample `from` on, in order.
  *since(from) {
    const parts = [...this.chunks, { at: this.count - this.fill, samples: this.tail.subarray(0, this.fill) }];
    for (const { at, samples } of parts) {
      if (at + samples.length > from && samples.length) yield samples.slice(Math.max(0, from - at));
    }
  }
}

class CaptureProcessor extends AudioWorkletProcessor {
  constructor({ processorOptions = {} }) {
    super();
    const { blockSize = 2048, ring = null } = processorOptions;
    this.size = blockSize;
    this.block = new Float32Array(blockSize);
    this.fill = 0;
    this.out = null;
    this.running = true;
    this.kept = new KeptInput(blockSize);
    if (ring) this.ring = { header: new Int32Array(ring, 0, 4), data: new Float32Array(ring, 16) };
    this.port.onmessage = ({ data }) => {
      if (data.kind === "connect") this.connect(data.port, data.from);
      else if (data.kind === "stop") this.stop();
    };
  }

  connect(port, from) {
    this.out = port;
    port.onmessage = ({ data }) => { if (data.kind === "retain") this.kept.trim(data.from); };
    if (from === undefined) return;
    for (const samples of this.kept.since(from)) port.postMessage({ kind: "audio", samples }, [samples.buffer]);
    if (this.ring) {                        // what the ring holds was just sent: empty it
      Atomics.store(this.ring.header, 1, Atomics.load(this.ring.header, 0));
      port.postMessage({ kind: "resent" });
    }
    if (!this.running) port.postMessage({ kind: "end" });
  }

  // Kept alive after stop() until the page closes the context: a worker that dies while the
  // stream finishes is fed the kept input again.
  process(inputs) {
    if (!this.running) return true;
    const channels = inputs[0];
    if (this.out && channels && channels.length) {
      if (this.ring) this.write(channels[0]);
      else this.append(channels[0]);
    }
    return true;
  }

  append(x) {
    for (let i = 0; i < x.length;) {
      const n = Math.min(x.length - i, this.size - this.fill);
      this.block.set(x.subarray(i, i + n), this.fill);
      this.fill += n;
      i += n;
      if (this.fill === this.size) this.flush();
    }
  }

  flush() {
    if (!this.fill) return;
    const samples = this.fill === this.size ? this.block : this.block.slice(0, this.fill);
    this.kept.push(samples);
    this.out.postMessage({ kind: "audio", samples }, [samples.buffer]);
    this.block = new Float32Array(this.size);                 // the old one was transferred
    this.fill = 0;
  }

  write(x) {
    const { header, data } = this.ring;
    const cap = data.length;
    const w = Atomics.load(header, 0) >>> 0;
    const r = Atomics.load(header, 1) >>> 0;
    if (cap - ((w - r) >>> 0) < x.length) {          // full: drop this quantum, count it
      Atomics.add(header, 2, x.length);
      return;
    }
    const at = w % cap;
    const first = Math.min(x.length, cap - at);
    data.set(x.subarray(0, first), at);
    if (first < x.length) data.set(x.subarray(first), 0);
    this.kept.push(x);
    Atomics.store(header, 0, (w + x.length) | 0);
  }

  stop() {
    if (!this.running) return;
    this.running = false;
    if (this.out) {
      if (!this.ring) this.flush();
      this.out.postMessage({ kind: "end" });
    }
    this.port.postMessage({ kind: "stopped", sent: this.kept.count });   // every sample sent, for the page's checks
  }
}

registerProcessor("phonon-capture", CaptureProcessor);
