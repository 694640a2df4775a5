// One ONNX Runtime Web session on an encoder model, in a worker of its own: ORT reads
// env.wasm.numThreads once per JavaScript realm, so each thread count gets a fresh worker.
// Message in: {model: url, threads, lengths: [T, ...], reps}; out: {seconds: {T: median}} or {error}.
self.onmessage = async ({ data: spec }) => {
  try {
    const ort = await import("/ort/ort.wasm.min.mjs");
    ort.env.wasm.numThreads = spec.threads;
    ort.env.wasm.simd = true;
    ort.env.wasm.wasmPaths = new URL("/ort/", self.location.href).href;
    const session = await ort.InferenceSession.create(spec.model, { executionProviders: ["wasm"] });
    const seconds = {};
    for (const T of spec.lengths) {
      const features = new Float32Array(128 * T);
      let seed = 12345;
      for (let i = 0; i < features.length; i++) {           // a fixed pseudo-random input
        seed = (seed * 1103515245 + 12345) >>> 0;
        features[i] = (seed / 4294967296) * 4 - 2;
      }
      const feeds = { features: new ort.Tensor("float32", features, [1, 128, T]),
                      lengths: new ort.Tensor("int64", BigInt64Array.from([BigInt(T)]), [1]) };
      await session.run(feeds);                                // warm-up
      const times = [];
      for (let r = 0; r < spec.reps; r++) {
        const t = performance.now();
        await session.run(feeds);
        times.push((performance.now() - t) / 1000);
      }
      times.sort((a, b) => a - b);
      seconds[T] = times[Math.floor(times.length / 2)];
    }
    await session.release();
    postMessage({ seconds });
  } catch (e) {
    postMessage({ error: String(e && e.stack || e) });
  }
};
