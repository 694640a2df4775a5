"""`python3 build.py parity` (the interim demo before the web app): show the kernels doing the same
thing everywhere - the seeded kernel sweep natively (every tier) and in Pyodide under Node
(both wasm tiers), with one combined digest per tier, and a quick fv5 GEMM speed per tier -
then transcribe the bundled sample with the tiny model natively and in Pyodide."""

from __future__ import annotations

import tempfile
from pathlib import Path

from checks import kernel_bench, parity
from engine.kernels import available_tiers

from .runtimes import inline, run_in_node

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "kitchen-lights.wav"

def transcribe_everywhere():
    from engine.audio import load_audio
    from modeltools.convert import convert, read_config
    from engine.transcribe import Engine
    data = ROOT / "tests" / "data" / "tiny"
    with tempfile.TemporaryDirectory(prefix="phonon-parity-") as tmp:
        gguf = Path(tmp) / "tiny.gguf"
        convert(data / "model.fermion", read_config(data / "config.json"), gguf, "synthetic", "tiny")
        model = gguf.read_bytes()
        engine = Engine.open(gguf)
    native = engine.transcribe(load_audio(engine.k, SAMPLE.read_bytes()))
    node = run_in_node("transcribe", model=inline(model), wav=inline(SAMPLE.read_bytes()))
    print(f"\n{SAMPLE.name} with the tiny synthetic model (random weights: the words are nonsense):")
    print(f"  native {engine.tier:13s} {native['text']!r}  RTFx {native['timing']['rtfx']}")
    print(f"  Pyodide wasm_simd128 {node[0]!r}")
    same = node == [native["text"], native["tokens"]]
    print("  identical tokens natively and in Pyodide" if same else "  MISMATCH")
    return same


def main():
    print("phonon-web kernels: the same seeded sweep (decode, quantise, fv5 and int8 GEMM)\n")
    rows = []
    for tier in available_tiers():
        speed = kernel_bench.run("native", tiers=[tier], shapes=((1024, 1024),), tokens=(64,),
                                 min_seconds=0.1, ops=("fv5_gemm",))[0]["gmacs"]
        rows.append(("native CPython", tier, parity.combined_digest(parity.digests(tier)), speed))
    for tier, (digest, speed) in run_in_node("parity_summary", tiers=["wasm_simd128", "scalar"]).items():
        rows.append(("Pyodide in Node", tier, digest, speed))
    for runtime, tier, digest, speed in rows:
        print(f"  {runtime:16s} {tier:13s} sweep sha256 {digest[:16]}...  fv5 GEMM 1024x1024 N=64: "
              f"{speed:6.1f} GMAC/s")
    same = len({r[2] for r in rows}) == 1
    print("\nall runtimes and tiers bit-identical" if same else "\nMISMATCH between runtimes")
    same = transcribe_everywhere() and same
    print("\nThe live demo (microphone -> text in the browser): python3 build.py demo")
    raise SystemExit(0 if same else 1)


if __name__ == "__main__":
    main()
