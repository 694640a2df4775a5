// AudioWorklet processor: microphone samples at the AudioContext's own rate, mono (the node
// is created with channelCount 1, "explicit", so WebAudio does the down-mix), straight to the
// engine worker through a MessagePort - the main thread is not on the audio path. Resampling
// happens in the engine (engine/stream/session.py), not here.
//
// Two transports (the messages and the ring: messages.mjs):
// - transferable blocks: 128-frame render quanta are gathered into blocks of `blockSize`
//   samples and posted with their ArrayBuffer transferred;
// - the capture ring (when the page is cross-origin isolated): every quantum is written into
//   it; the worker drains it on its own timer.
// On {kind: "stop"} the last partial block is sent, then {kind: "end"} on the same port, so the
// worker sees every sample before it finishes the stream.
//
// A worker that dies mid-stream loses what it was sent. So this processor keeps what it sent
// from the newest checkpoint on (the worker posts {kind: "retain", from} as it may drop older
// input: about the stream's window plus what waits undecoded), and when the page connects a
// new worker's port with {kind: "connect", port, from} it sends that input again from `from`
// (with a ring: by the port, then it empties the ring and says {kind: "resent"}) and goes on.

import { CAPTURE, FEED, openRing, ringSkip, ringWrite } from "./messages.mjs";

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
    if (ring) this.ring = openRing(ring);
    this.port.onmessage = ({ data }) => {
      if (data.kind === CAPTURE.CONNECT) this.connect(data.port, data.from);
      else if (data.kind === CAPTURE.STOP) this.stop();
    };
  }

  connect(port, from) {
    this.out = port;
    port.onmessage = ({ data }) => { if (data.kind === FEED.RETAIN) this.kept.trim(data.from); };
    if (from === undefined) return;
    for (const samples of this.kept.since(from)) port.postMessage({ kind: FEED.AUDIO, samples }, [samples.buffer]);
    if (this.ring) {                        // what the ring holds was just sent: empty it
      ringSkip(this.ring);
      port.postMessage({ kind: FEED.RESENT });
    }
    if (!this.running) port.postMessage({ kind: FEED.END });
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
    this.out.postMessage({ kind: FEED.AUDIO, samples }, [samples.buffer]);
    this.block = new Float32Array(this.size);                 // the old one was transferred
    this.fill = 0;
  }

  write(x) {
    if (ringWrite(this.ring, x)) this.kept.push(x);        // full: dropped and counted there
  }

  stop() {
    if (!this.running) return;
    this.running = false;
    if (this.out) {
      if (!this.ring) this.flush();
      this.out.postMessage({ kind: FEED.END });
    }
    this.port.postMessage({ kind: CAPTURE.STOPPED, sent: this.kept.count });   // every sample sent, for the page's checks
  }
}

registerProcessor("phonon-capture", CaptureProcessor);
