"""Host-side training tooling (PyTorch, numpy, scipy): never shipped in the wheel, never run in
Pyodide. `corpus` (the TTS speech corpus), `data` (engine features, tokenizer, batches),
`model` (the graph in torch, five-value linears), `tdt` (loss and greedy decoding), `train`
(the training run), `export` (to the release's container and the engine's GGUF)."""
