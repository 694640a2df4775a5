"""Size and speed of the model families: synthetic weights of the real shapes,
converted the way users convert the real ones, then the GGUF's bytes, the engine worker's wasm
heap and Chromium's RTFx on 10 s of speech-like audio (the better of two runs), one worker, a
fresh browser per model.

    .venv/bin/python -m harness.bench_families [--seconds 10] [--tier wasm_relaxed_simd] [--json OUT]

- Phonon-2, fv5: the full-size synthetic Phonon-2 (harness/bench_e2e.py full_model);
- Parakeet-TDT 0.6B v2, int8: a random transformers ParakeetForTDT with v2's dimensions (as
  the model's public description and NeMo config give them: FastConformer d_model 1024, 24
  layers, 8 heads, ff 4096, 128 mels, prediction/joint 640, 1024 tokens + blank), saved and
  converted with `convert parakeet --weights int8`;
- Parakeet-TDT-CTC 110M, int8: the same with d_model 512, 17 layers, ff 2048, 80 mels, 1024
  tokens (its TDT head; whether transformers loads that hybrid as ParakeetForTDT is not
  checked here: its checkpoint cannot be downloaded on this machine).
Models are cached in build/bench-models/ (the 0.6B one's safetensors are deleted after
conversion).

A smoke run (tests/test_bench_smoke.py): `--size tiny --seconds 1` - the committed tiny synthetic
Phonon-2 and each family's converter path at a tiny shape (TINY_FAMILIES, one layer of d_model
64; the families' mel counts kept), built afresh on every run under their own names.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

FAMILIES = {
    "parakeet-tdt-0.6b-v2-int8": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=8,
                                      intermediate_size=4096, num_mel_bins=128, vocab=1024, decoder=640),
    "parakeet-tdt_ctc-110m-int8": dict(hidden_size=512, num_hidden_layers=17, num_attention_heads=8,
                                       intermediate_size=2048, num_mel_bins=80, vocab=1024, decoder=640),
}
# --size tiny: the same families' code paths at a few hundred KB each
TINY_FAMILIES = {
    f"{name}-tiny": dict(spec, hidden_size=64, num_hidden_layers=1, num_attention_heads=2, intermediate_size=128,
                         vocab=32, decoder=32, sub_channels=16)
    for name, spec in FAMILIES.items()
}


def synthetic_hf(name: str, spec: dict, models: Path, fresh: bool = False) -> Path:
    """The GGUF of a random ParakeetForTDT with these dimensions (built once; `fresh`: again)."""
    out = models / f"{name}.gguf"
    if out.exists() and not fresh:
        return out
    import torch
    from transformers import ParakeetEncoderConfig, ParakeetForTDT, ParakeetTDTConfig
    from modeltools.parakeet_hf import convert_hf
    spec = dict(spec)
    vocab, decoder, channels = spec.pop("vocab"), spec.pop("decoder"), spec.pop("sub_channels", 256)
    enc = ParakeetEncoderConfig(conv_kernel_size=9, subsampling_conv_channels=channels, attention_bias=False,
                                convolution_bias=False, scale_input=False, **spec)
    config = ParakeetTDTConfig(encoder_config=enc.to_dict(), vocab_size=vocab + 1, decoder_hidden_size=decoder,
                               num_decoder_layers=2, blank_token_id=vocab, pad_token_id=vocab)
    torch.manual_seed(3)
    print(f"building a random {name} ...", flush=True)
    model = ParakeetForTDT(config).eval().half()
    folder = models / f"{name}-hf"
    model.save_pretrained(folder)
    pieces = ["<unk>"] + [f"\u2581w{i}" for i in range(vocab - 1)]
    (folder / "tokenizer.json").write_text(json.dumps({"model": {"type": "Unigram", "vocab": [[p, 0.0] for p in pieces]}}))
    del model
    convert_hf(folder, out, "int8", notice="synthetic", name=name)
    shutil.rmtree(folder)
    return out


def main(argv=None) -> int:
    from harness.bench_e2e import SIZES, speechlike, synthetic_model
    from harness.bench_threads import cpu_name
    from harness.runtimes import Chromium
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_families")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--tier", default="wasm_relaxed_simd")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--size", choices=SIZES, default="full",
                        help="full: the real shapes (default); tiny: a smoke run at tiny shapes")
    args = parser.parse_args(argv)
    models = Chromium.models_dir()
    ggufs = {f"phonon-2-fv5 (synthetic{', tiny' if args.size == 'tiny' else ''})": synthetic_model(args.size)}
    families = TINY_FAMILIES if args.size == "tiny" else FAMILIES
    # the tiny ones are built afresh (seconds), so a smoke run goes through today's converters
    ggufs.update({name: synthetic_hf(name, spec, models, fresh=args.size == "tiny") for name, spec in families.items()})
    (models / f"audio-{args.seconds}s.f32").write_bytes(speechlike(args.seconds).tobytes())
    rows = []
    for label, gguf in ggufs.items():              # a fresh browser each: a wasm heap never shrinks
        with Chromium(timeout_ms=3_600_000) as browser:
            got = browser.run_job("bench_transcribe", model={"url": f"/models/{gguf.name}"},
                                  seconds=[args.seconds, args.seconds], tiers=[args.tier])
            version = browser.version()
        best = max(r["result"]["timing"]["rtfx"] for r in got)   # the second run is warm
        rows.append({"model": label, "gguf_bytes": gguf.stat().st_size, "wasm_heap_bytes": got[-1]["wasm_heap_bytes"],
                     "rtfx": best, "tier": args.tier, "audio_seconds": args.seconds})
        print(f"{label:32s} GGUF {rows[-1]['gguf_bytes'] / 2**20:7.1f} MiB  heap {rows[-1]['wasm_heap_bytes'] / 2**20:7.1f} MiB"
              f"  RTFx {rows[-1]['rtfx']}", flush=True)
    print(f"CPU: {cpu_name()}; Chromium {version}; tier {args.tier}; {args.seconds} s of audio, one worker")
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu_name(), "chromium": version, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
