// A typed use of the API: tests/test_api.py runs tsc over this against web/phonon.d.ts, and over
// misuse.ts, which must fail to compile on each marked line.
import { Recognizer, PhononError, Stream, bestTier, type StreamFinal, type Transcript } from "phonon-web";

async function main(samples: Float32Array, file: Blob): Promise<string> {
  const r: Recognizer = await Recognizer.load({ tier: "auto", preferGpu: true, threads: 2, onProgress: (p) => console.log(p.stage, p.loaded) });
  const a: Transcript = await r.transcribe(samples, 16000, { signal: new AbortController().signal });
  const b: Transcript = await r.transcribe(file);
  const ids: number[] = a.tokens.map((t) => t.id);
  const s: Stream = r.stream({ sampleRate: 48000 });
  s.addEventListener("partial", (e) => console.log(e.detail.committed, e.detail.tentative, e.detail.tentativeWords[0]?.start, e.detail.committedWords));
  s.addEventListener("commit", (e) => console.log(e.detail.words.map((w) => w.word)));
  s.feed(samples);
  const soFar: { text: string; words: { word: string }[] } = s.transcript();
  const final: StreamFinal = await s.finish();
  const finalAsTranscript: Transcript = final;        // a final is usable where a Transcript is
  console.log(finalAsTranscript.tokens.length, final.audio_seconds);
  r.addEventListener("error", (e) => console.log(e.detail.code));
  try { s.feed(samples); } catch (e) { if (e instanceof PhononError) console.log(e.code); }
  const paced: Stream = r.stream({ sampleRate: 16000, pendingThreshold: 5, maxPending: 600 });
  paced.addEventListener("pending", (e) => console.log(e.detail.seconds, e.detail.over));
  paced.addEventListener("error", (e) => console.log(e.detail.code === "overrun"));
  if (paced.pending > paced.pendingThreshold) await paced.pendingBelow(1);
  const switched = await r.switchModel(new ArrayBuffer(8), "other.gguf");
  const live: Stream = r.stream({ sampleRate: 48000, ring: new SharedArrayBuffer(1 << 20) });
  const port: MessagePort = live.takePort();
  const media = await navigator.mediaDevices.getUserMedia({ audio: true });
  const mic: Stream = await r.listen(media, { context: new AudioContext(), pendingThreshold: 5, latency: "battery" });
  const transport: "shared-ring" | "transfer" | null = mic.transport;
  mic.addEventListener("capture-stopped", (e) => console.log(transport, e.detail.sent.toFixed(0)));
  const exact: Stream = r.stream({ sampleRate: 16000, latency: "balanced", pace: "live" });
  const jumps: [number, number][] = (await exact.finish()).jumps ?? [];
  const spoken: Transcript = await mic.finish();
  const c: Transcript = await r.transcribe(new AudioBuffer({ length: 10, sampleRate: 8000 }), undefined, { name: "x" });
  console.log(switched.sha256, port, spoken.text, c.text, r.heapBytes, r.kernelHeapBytes, r.details.modelSource, r.tierNote, jumps.length);
  r.close();
  return `${a.text} ${b.words.length} ${ids.length} ${final.text} ${bestTier([{ name: "scalar", probe: [] }])} ${r.threads}`;
}
export { main };
