"""The peer on the same encoder: ONNX Runtime running the full-size synthetic
Phonon-2 encoder, against this engine, at 1 and 2 threads/workers, on 10 s and 30 s of
features - natively (onnxruntime, CPU provider) and in Chromium (onnxruntime-web, wasm backend,
the pinned npm build), each in one process / one browser session.

The ONNX model: `training/model.py`'s torch encoder with the synthetic container's weights
(five-value levels dequantised to float, so a plain MatMul), exported with torch.onnx and
quantised with `onnxruntime.quantization.quantize_dynamic` (int8 MatMul weights, the path of
the public int8 Parakeet exports parakeet.js loads; convolutions stay float, as there). Cached
in build/bench-models/ort/. Both engines get the same random features; times are medians of 3
after a warm-up.

    python3 build.py bench --ort        (or, in build.py's environment:)
    .venv/bin/python -m harness.bench_ort_encoder [--seconds 10 30] [--runtimes native chromium]
                                                  [--size full|tiny]

A smoke run (tests/test_bench_smoke.py): `--size tiny --seconds 1 --repeats 1` - the committed
tiny synthetic model (tests/data/tiny: 2 layers, d_model 32) exported the same way into its own
file (build/bench-models/ort/encoder-tiny-int8.onnx, a few hundred KB, seconds to build; the
full model's export is never touched), the engine on the same tiny model.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from array import array
from pathlib import Path

import numpy as np

from harness.bench_e2e import SIZES, TINY_SOURCE, synthetic_model
from harness.bench_threads import cpu_name
from harness.runtimes import Chromium

ORT_DIR = Chromium.models_dir() / "ort"
INT8 = ORT_DIR / "encoder-int8.onnx"
# each size's int8 ONNX encoder, side by side in ORT_DIR (the page serves /models/ort/ and the
# features files there, which depend only on the length)
INT8_OF = {"full": INT8, "tiny": ORT_DIR / "encoder-tiny-int8.onnx"}


def export_encoder(size: str = "full") -> Path:
    """The int8 ONNX encoder of the synthetic model of this size into INT8_OF[size]: the full one
    (about 584 MiB) built once, the tiny one afresh on every call (seconds: a smoke run goes
    through the export itself). The float export goes to a folder of its own, removed after."""
    int8 = INT8_OF[size]
    if int8.exists() and size == "full":
        return int8
    import shutil
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    import training.model as tm
    from engine.parakeet_tdt.layout import PHONON2
    from modeltools.synth import TINY, make
    from training.export import load_container

    if size == "tiny":
        container, dims = TINY_SOURCE / "model.fermion", TINY
    else:
        src = Chromium.models_dir() / "full-synthetic"
        if not (src / "model.fermion").exists():
            make("full", 1, src)
        container, dims = src / "model.fermion", PHONON2
    model = tm.ParakeetTDT(dims)
    load_container(model, container)
    model.eval()
    for m in model.encoder.modules():
        if hasattr(m, "five_value"):
            m.five_value = False                 # a plain MatMul on the dequantised levels

    def rel_positions_f32(T, D, dtype, device):  # ONNX Runtime's CPU Sin/Cos take float32 only
        omega = torch.exp(torch.arange(0, D, 2, dtype=torch.float32, device=device) * -(math.log(10000.0) / D))
        p = torch.arange(T - 1, -T, -1, dtype=torch.float32, device=device)[:, None] * omega[None, :]
        return torch.stack([torch.sin(p), torch.cos(p)], -1).reshape(2 * T - 1, D).to(dtype)
    tm.rel_positions = rel_positions_f32

    class EncoderOnly(torch.nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, features, lengths):
            return self.encoder(features, lengths)[0]

    scratch = ORT_DIR / f"export-{size}"         # the float export and its external tensors
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    f32 = scratch / "encoder-f32.onnx"
    print(f"exporting the {size}-size encoder to ONNX{' (about a minute)' if size == 'full' else ''} ...", flush=True)
    try:
        with torch.no_grad():
            torch.onnx.export(EncoderOnly(model.encoder), (torch.randn(1, 128, 1000), torch.tensor([1000])), str(f32),
                              input_names=["features", "lengths"], output_names=["encoded"],
                              dynamic_axes={"features": {2: "T"}, "encoded": {1: "frames"}}, opset_version=17,
                              dynamo=False)
        partial = scratch / int8.name
        quantize_dynamic(str(f32), str(partial), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
        partial.replace(int8)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return int8


def features(T: int) -> np.ndarray:
    return np.random.default_rng(1).standard_normal((1, 128, T)).astype(np.float32)


def native(seconds_list: list, counts: list, repeats: int, size: str = "full") -> dict:
    import onnxruntime as ort
    from engine.transcribe import Engine
    sessions = {}
    for n in counts:
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = n, 1
        sessions[n] = ort.InferenceSession(str(INT8_OF[size]), options, providers=["CPUExecutionProvider"])
    engines = {n: Engine.open(synthetic_model(size), "auto", n) for n in counts}
    out = {}
    for seconds in seconds_list:
        T = 100 * seconds
        f = features(T)
        flat = array("f", f[0].tobytes())
        times = {}
        for rep in range(repeats + 1):                  # the first round warms up
            for n in counts:
                started = time.perf_counter()
                sessions[n].run(None, {"features": f, "lengths": np.array([T], np.int64)})
                ort_s = time.perf_counter() - started
                started = time.perf_counter()
                engines[n].network.encoder(flat, T)
                ours = time.perf_counter() - started
                if rep:
                    times.setdefault(f"onnxruntime {n}", []).append(ort_s)
                    times.setdefault(f"phonon {n}", []).append(ours)
        out[seconds] = {k: round(statistics.median(v), 3) for k, v in times.items()}
    return {"tier": engines[counts[0]].tier, "onnxruntime": ort.__version__, "seconds": out}




def chromium(seconds_list: list, counts: list, repeats: int, tier: str, size: str = "full") -> dict:
    for seconds in seconds_list:
        (ORT_DIR / f"features-{100 * seconds}.f32").write_bytes(features(100 * seconds)[0].tobytes())
    out = {}
    with Chromium(timeout_ms=7_200_000, isolate=True) as browser:
        ours = browser.run_job("bench_encoder_features", model={"url": f"/models/{synthetic_model(size).name}"},
                               counts=counts, seconds=seconds_list, repeats=repeats, tier=tier)
        for n in counts:
            spec = {"model": "/models/ort/" + INT8_OF[size].name, "threads": n, "lengths": [100 * s for s in seconds_list],
                    "reps": repeats}
            got = json.loads(browser.page.evaluate("(spec) => window.runOrtEncoder(spec)", spec))
            for seconds in seconds_list:
                out.setdefault(seconds, {})[f"onnxruntime-web {n}"] = round(got["seconds"][str(100 * seconds)], 3)
        for key, value in ours.items():
            seconds, name = key.split("/")
            out.setdefault(int(seconds), {})[name] = value
        version = browser.version()
    return {"chromium": version, "tier": tier, "seconds": out}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_ort_encoder")
    parser.add_argument("--seconds", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runtimes", nargs="+", default=["native", "chromium"])
    parser.add_argument("--tier", default="wasm_relaxed_simd", help="this engine's tier in Chromium")
    parser.add_argument("--json", help="write the records here")
    parser.add_argument("--size", choices=SIZES, default="full",
                        help="the synthetic model: full (default) or tiny (a smoke run)")
    args = parser.parse_args(argv)
    onnx_model = export_encoder(args.size)
    print(f"CPU: {cpu_name()}; ONNX model {onnx_model.name} ({onnx_model.stat().st_size / 2**20:.1f} MiB)")
    records = {"size": args.size}
    if "native" in args.runtimes:
        records["native"] = native(args.seconds, args.threads, args.repeats, args.size)
        print(f"native (this engine: {records['native']['tier']}; onnxruntime {records['native']['onnxruntime']})")
        report(records["native"]["seconds"], "onnxruntime", args.threads)
    if "chromium" in args.runtimes:
        records["chromium"] = chromium(args.seconds, args.threads, args.repeats, args.tier, args.size)
        print(f"Chromium {records['chromium']['chromium']} (this engine: {args.tier}; onnxruntime-web wasm)")
        report(records["chromium"]["seconds"], "onnxruntime-web", args.threads)
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": cpu_name(), **records}, indent=1) + "\n")
    return 0


def report(by_seconds: dict, peer: str, counts: list):
    for seconds, row in by_seconds.items():
        cells = []
        for n in counts:
            ours, theirs = row[f"phonon {n}"], row[f"{peer} {n}"]
            ratio = f"x{theirs / ours:.2f}" if ours else "too fast to time"     # the tiny model, rounded to ms
            cells.append(f"{n} thr: phonon {ours:.3f} s, {peer} {theirs:.3f} s (phonon {ratio})")
        print(f"  {seconds:>3} s of features  " + "  ".join(cells))


if __name__ == "__main__":
    sys.exit(main())
