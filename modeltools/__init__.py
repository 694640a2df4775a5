"""Host tools: the model converter and fetcher, the release container codecs, the fv5 packer,
the synthetic-model writer and the float64 reference. They run on a developer's machine (numpy,
gguf) and never ship to the browser: the runtime (engine/) reads only what they write."""
