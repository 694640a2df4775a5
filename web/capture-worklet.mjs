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

class CaptureProcessor extends AudioWorkletProcessor {
  constructor({ processorOptions = {} }) {
    super();
    const { blockSize = 2048, ring = null } = processorOptions;
    this.size = blockSize;
    this.block = new Float32Array(blockSize);
    this.fill = 0;
    this.out = null;
    this.running = true;
    if (ring) this.ring = { header: new Int32Array(ring, 0, 4), data: new Float32Array(ring, 16) };
    this.port.onmessage = ({ data }) => {
      if (data.kind === "connect") this.out = data.port;
      else if (data.kind === "stop") this.stop();
    };
  }

  process(inputs) {
    if (!this.running) return false;
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
    Atomics.store(header, 0, (w + x.length) | 0);
  }

  stop() {
    if (!this.running) return;
    this.running = false;
    if (this.out) {
      if (!this.ring) this.flush();
      this.out.postMessage({ kind: "end" });
      this.out.close();
    }
    this.port.postMessage({ kind: "stopped" });
  }
}

registerProcessor("phonon-capture", CaptureProcessor);
