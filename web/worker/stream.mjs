// The engine worker's Stream (web/worker.mjs): the live stream, fed from its port or ring.
import { FEED, TO_PAGE, openRing, ringDrain, ringDropped } from "../messages.mjs";
import { fail, guard, post } from "./common.mjs";

const TICK_MS = 150;                        // partial() cadence while listening (wall time)
const STEP_BUDGET_MS = 250;                 // while behind: decodes per step until this much wall time,
                                            // then messages (audio, pings, cancel) are read

// Stream: one open stream. It never skips audio: when decoding falls behind (a slow
// machine, audio fed faster than real time) the due decodes run in order, a step of
// STEP_BUDGET_MS at a time with this worker's messages read between steps, and "end" finishes
// only once every due decode has run.

export class Stream {
  constructor(host, { rate, port, ring, id = null, maxPending = null, resume = null, latency = "fast", pace = "exact" }) {
    this.host = host;
    // JS null is not Python's None: undefined is
    this.app.start(rate, maxPending ?? undefined, resume ?? undefined, latency, pace);
    this.id = id;
    this.port = port;
    this.ring = ring ? openRing(ring) : null;
    this.timer = null;
    this.ending = false;
    this.overrun = false;
    this.busy = false;                        // a step is running (with the GPU: suspended in Python)
    this.held = [];                           // audio that arrived meanwhile
    this.cancelled = false;
    this.announced = false;
    // a resumed stream reads its ring only once the feeder fed the input before it again
    this.ringHeld = Boolean(resume && this.ring);
    port.onmessage = ({ data }) => guard(() => {
      if (host.stream !== this) return;
      if (data.kind === FEED.RESENT) {
        this.ringHeld = false;
      } else if (data.kind === FEED.AUDIO) {
        if (this.busy) this.held.push(data.samples);   // a GPU step is suspended in Python: after it
        else this.feed(data.samples);
      } else if (data.kind === FEED.END) {
        this.ending = true;                    // finish after the due decodes, a step at a time
        clearTimeout(this.timer);
        if (!this.busy) this.timer = setTimeout(() => this.tick(), 0);   // else the step in flight goes on
      }
    });
    this.timer = setTimeout(() => this.tick(), TICK_MS);
    post({ kind: TO_PAGE.STARTED, id, rate, checkpoint: this.keep(JSON.parse(this.app.checkpoint_json())) });
  }

  // The page keeps the newest checkpoint (to resume the stream in a new worker if this one
  // dies) and the feeder its input from the checkpoint's "from" on.
  keep(checkpoint) {
    this.port.postMessage({ kind: FEED.RETAIN, from: checkpoint.from });
    return checkpoint;
  }

  get app() { return this.host.app.stream; }          // its Python side (engine/worker/stream.py)

  get open() { return this.host.stream === this; }

  feed(samples) {
    const refused = this.app.feed(samples);
    if (refused) {                               // too far behind: said once, counted in the metrics
      if (!this.overrun) post({ kind: TO_PAGE.ERROR, code: "overrun", id: this.id, message: refused });
      this.overrun = true;
      return;
    }
    this.overrun = false;
    if (this.host.debug) this.host.captured.push(samples);
  }

  // The ring's audio (messages.mjs ringDrain: copies, the worklet reuses the ring).
  drainRing() {
    if (!this.ringHeld) ringDrain(this.ring, (samples) => this.feed(samples));
  }

  // The audio waiting: from the ring, and what arrived during a step.
  takeWaiting() {
    if (this.ring) this.drainRing();
    for (const samples of this.held.splice(0)) this.feed(samples);
  }

  // One step: the due decodes for up to STEP_BUDGET_MS, then the text. With more due, the next
  // step comes as soon as the messages waiting meanwhile were read; the page learns the next
  // decode's window (nextWindowSeconds) so its heartbeat can tell a long decode from a dead
  // worker. With the GPU a step is a promise: meanwhile audio is held and a cancel waits for it.
  async tick() {
    if (!this.open || this.busy) return;
    let due = false;
    this.busy = true;
    try {
      this.takeWaiting();
      this.announceDecode();
      const began = performance.now();
      const out = JSON.parse(await this.host.gpu.call(this.app.partial, STEP_BUDGET_MS));
      const stepMs = performance.now() - began;      // the step's cost, decodes and all (benchmarks)
      if (this.cancelled) {
        this.busy = false;
        return this.cancel();
      }
      due = out.due;
      if (this.ring) out.metrics.dropped_samples = ringDropped(this.ring);
      this.host.checkLost();
      // ending with nothing due, finish() comes next: it decodes the window's tail
      const next = due ? out.next_window_seconds : this.ending ? out.tail_window_seconds : 0;
      this.announced = next > 0;
      if (out.checkpoint) this.keep(out.checkpoint);
      post({ kind: TO_PAGE.PARTIAL, id: this.id, view: out.view, metrics: out.metrics, due,
             nextWindowSeconds: next, ending: this.ending, checkpoint: out.checkpoint, stepMs });
      if (this.ending && !due) await this.end();
    } catch (e) {
      fail(e);
    } finally {
      this.busy = false;
    }
    if (this.open) {
      if (this.held.length) due = true;
      this.timer = setTimeout(() => this.tick(), due || this.ending ? 0 : TICK_MS);   // never overlapping
    }
  }

  // A stream that keeps up has nothing due after a step (its partial announced no window), so
  // the decode that audio arriving since makes due would start unannounced: the page's
  // heartbeat, hearing nothing for the length of that decode, could take a slow machine's busy
  // worker for a dead one. Announce it first.
  announceDecode() {
    if (this.announced || this.ending) return;
    const seconds = this.app.next_window_seconds();
    if (seconds > 0) post({ kind: TO_PAGE.DECODING, id: this.id, nextWindowSeconds: seconds });
    this.announced = seconds > 0;
  }

  // The API's stream.cancel(): the session is dropped, nothing more is decoded or posted.
  cancel() {
    if (!this.open) return;
    if (this.busy) {                          // a GPU step is in flight: cancelled when it returns
      this.cancelled = true;
      return;
    }
    this.close();
    this.app.cancel();
    post({ kind: TO_PAGE.STREAM_CANCELLED, id: this.id });
    this.host.gpu.restoreWorkers();
  }

  close() {
    clearTimeout(this.timer);
    this.port.close();
    this.host.stream = null;
  }

  async end() {
    clearTimeout(this.timer);
    this.takeWaiting();
    const dropped = this.ring ? ringDropped(this.ring) : 0;
    this.close();
    const { result, metrics } = JSON.parse(await this.host.gpu.call(this.app.finish));
    metrics.dropped_samples = dropped;
    this.host.checkLost();
    post({ kind: TO_PAGE.FINAL, id: this.id, result, metrics, ...this.host.memory() });
  }
}

// ------------------------------------------------------------------------------------------
