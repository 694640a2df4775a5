import { Recognizer } from "phonon-web";

async function misuse(r: Recognizer, samples: Float32Array) {
  await r.transcribe(samples, "16000");               // error: a number
  r.stream({ rate: 16000 });                          // error: sampleRate
  await Recognizer.load({ model: 42 });               // error: not a model
  const s = r.stream({ sampleRate: 16000 });
  s.feed([0.1, 0.2]);                                 // error: a Float32Array
  const code: number = (await s.finish()).text;       // error: a string
  const direct = new Recognizer();                    // error: the constructor is private (load())
  await r.listen(samples);                            // error: a MediaStream
  r.stream({ sampleRate: 16000, latency: "instant" }); // error: not a setting
}
export { misuse };
