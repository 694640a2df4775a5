"""The encoder on a WebGPU device: the GPU executor (engine/executors/webgpu/executor.py)
natively through PyPI wgpu on whatever adapter this machine has, named (vendor, architecture,
device, backend), against the best native CPU tier with one thread in the same process.

Per model and encode: the encode's wall time on the GPU (the shaders compiled before, timed
apart) and on the CPU tier - the first encode (which also uploads the positional table, kept
after) and the median of `--repeats` more - the executor's counters for the last encode (submissions, dispatches,
bytes uploaded and read back), the bytes of the GPU buffers created (at load, and after the
encodes: weights, scratch and uniforms; engine/executors/webgpu/device.py buffer_bytes) beside the model
file's size, and whether the encoder output (sha256 of its float32 bytes) and the tokens equal
the native scalar tier's. Then one more encode with every pass timed (timestamp queries;
harness/webgpu_profile.py) beside the cost model's operations per kernel (harness/webgpu_cost.py). On lavapipe/llvmpipe/SwiftShader the "GPU" is a CPU emulation: the
output says so, and its times are those of the CPU running the shaders, not of a GPU.

    python3 build.py bench --webgpu          (or, in build.py's environment:)
    .venv/bin/python -m harness.bench_webgpu [--size default|full|tiny] [--seconds 10]
                                             [--repeats 3] [--browser] [--json F] [--no-result]

Models: the default one (models/phonon-small.gguf) on samples/two-commands.wav always; with
`--size full` also the full-size synthetic model (harness/bench_e2e.py full_model(), 195 MiB)
on `--seconds` of harness.bench_e2e.speechlike audio, encoded once on each side; `--size tiny`
(the smoke run, tests/test_bench_smoke.py) the tiny synthetic model in the default one's place.
`--browser`: also the default (or tiny) model through the GPU executor in headless Chromium with
WebGPU on SwiftShader (checks/jobs.py gpu_digest; a CPU emulation as well).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from engine.audio import load_audio
from engine.executors.webgpu.adapter import cpu_emulation
from engine.executors.webgpu.self_test import encoder_digest
from engine.kernels import Kernels, available_tiers
from engine.transcribe import Engine
from harness import webgpu_cost
from harness.webgpu_adapter import ADAPTER_KEYS, SIZES, WAV, NoAdapter, describe, model_and_audio, open_device
from harness.webgpu_profile import DispatchProfile

def encodes(engine, audio, repeats: int) -> dict:
    """The first encode (it also computes the positional keys, cached for later encodes of no
    more frames), then `repeats` more: {"first_seconds", "seconds" (the median of the repeats,
    or the first's without any), "counters" of the last encode (a GPU engine), "enc", "T"}."""
    times, counters = [], None
    for _ in range(1 + repeats):
        before = engine.executor.counters() if hasattr(engine.executor, "counters") else None
        started = time.perf_counter()
        enc, T = engine.encode(audio)
        times.append(time.perf_counter() - started)
        if before is not None:
            after = engine.executor.counters()
            counters = {key: after[key] - before[key] for key in PER_ENCODE}
    return {"first_seconds": round(times[0], 3), "seconds": round(statistics.median(times[1:] or times), 3),
            "counters": counters, "enc": enc, "T": T}


PER_ENCODE = ("submissions", "dispatches", "uploaded_bytes", "read_bytes")


def profile_kernels(engine, gpu, audio) -> dict:
    """One more encode with every pass timed (harness/webgpu_profile.py: timestamp queries where
    the device has them) and counted (harness/webgpu_cost.py): {"kernels": {module: {dispatches,
    ops, seconds}}, "cost": the GEMM products / epilogues / other split of the operations,
    "profiled_encode_seconds", "timestamps"}."""
    profile = DispatchProfile(gpu)
    started = time.perf_counter()
    engine.encode(audio)
    wall = time.perf_counter() - started
    profile.recording = False
    return {"kernels": webgpu_cost.by_module(profile.records, gpu.packed_dot),
            "cost": webgpu_cost.split_totals(profile.records, gpu.packed_dot),
            "profiled_encode_seconds": round(wall, 3), "timestamps": profile.timestamps}


def measure(name: str, path: Path, audio, device, repeats: int, cpu_tier: str) -> dict:
    """One model natively: the GPU executor against `cpu_tier` (1 thread) and native scalar."""
    from engine.executors.webgpu.device import MODULES, GpuKernels
    scalar = Engine.open(path, "scalar", 1)
    want_enc, want_T = scalar.encode(audio)
    want_tokens = scalar.network.decode(want_enc, want_T) if want_T else []
    cpu = encodes(Engine.open(path, cpu_tier, 1), audio, repeats)

    gpu = GpuKernels(device)
    started = time.perf_counter()
    for module in MODULES:                       # compiled once per device (not the test modules)
        if not module.endswith("_check"):
            gpu.pipeline(module)
    compile_seconds = time.perf_counter() - started
    started = time.perf_counter()
    engine = Engine.open(path, "scalar", gpu=gpu)
    load_seconds = time.perf_counter() - started
    at_load = engine.executor.counters()
    on_gpu = encodes(engine, audio, repeats)
    enc, T = on_gpu["enc"], on_gpu["T"]
    tokens = engine.network.decode(enc, T) if T else []
    kernels = profile_kernels(engine, gpu, audio)
    row = {"runtime": "native (wgpu-py)", "model": name, "model_file": path.name,
           "model_bytes": path.stat().st_size, "audio_seconds": round(len(audio) / 16000, 2),
           "encoder_frames": T, "repeats": repeats, "packed_dot": gpu.packed_dot,
           "compile_seconds": round(compile_seconds, 2), "load_seconds": round(load_seconds, 2),
           "gpu_first_encode_seconds": on_gpu["first_seconds"], "gpu_encode_seconds": on_gpu["seconds"],
           "cpu_tier": cpu_tier, "cpu_first_encode_seconds": cpu["first_seconds"],
           "cpu_encode_seconds": cpu["seconds"], **on_gpu["counters"],
           "weights_uploaded_bytes": at_load["uploaded_bytes"],
           "buffer_bytes_at_load": at_load["buffer_bytes"],
           "buffer_bytes": engine.executor.counters()["buffer_bytes"],
           "device_lost": engine.executor.lost,
           "native_digest": encoder_digest(enc) == encoder_digest(want_enc) and T == want_T,
           "native_tokens": tokens == want_tokens, "tokens": len(want_tokens), **kernels}
    print(f"  {row}", flush=True)
    print("\n".join(webgpu_cost.table(kernels["kernels"])), flush=True)
    return row


def browser_rows(models: dict, wav: bytes) -> tuple:
    """The models (name -> path) through checks/jobs.py gpu_digest in Chromium with WebGPU on
    SwiftShader: (rows, adapter info, Chromium's version) or ([], None, reason)."""
    from checks.jobs import digest
    from harness.runtimes import Chromium, inline
    with Chromium(webgpu=True, timeout_ms=3_600_000) as browser:
        got = browser.run_job("gpu_digest", models={n: inline(p.read_bytes()) for n, p in models.items()},
                              wav=inline(wav))
        version = browser.version()
    if got.get("adapter") is None:
        return [], None, f"no WebGPU device in Chromium {version}: {got.get('reason')}"
    rows = []
    for name, path in models.items():
        native = Engine.open(path, "scalar", 1)
        audio = load_audio(Kernels("scalar"), wav)
        enc, T = native.encode(audio)
        result = got["models"][name]
        want_tokens = [{"id": t.id, "frame": t.frame, "duration": t.duration} for t in native.network.decode(enc, T)]
        rows.append({"runtime": f"Chromium {version} (Pyodide)", "model": name, "model_file": path.name,
                     "model_bytes": path.stat().st_size, "audio_seconds": round(len(audio) / 16000, 2),
                     "encoder_frames": result["frames"], "packed_dot": got["packed_dot"],
                     "first_encode_seconds": result["seconds"]["first_encode"],
                     "gpu_encode_seconds": result["seconds"]["encode"],
                     **{key: result["gpu"][key] for key in ("submissions", "dispatches", "uploaded_bytes",
                                                             "read_bytes")},
                     "device_lost": result["device_lost"],
                     "native_digest": result["encoder_sha256"] == digest(enc) and result["frames"] == T,
                     "native_tokens": result["tokens"] == want_tokens, "tokens": len(want_tokens)})
        print(f"  {rows[-1]}", flush=True)
    return rows, {key: str(got["adapter"].get(key, "")) for key in ADAPTER_KEYS}, version


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_webgpu")
    parser.add_argument("--size", choices=SIZES, default="default",
                        help="default: the default model; full: it and the full-size synthetic one; "
                             "tiny: the tiny synthetic model in the default one's place (a smoke run)")
    parser.add_argument("--seconds", type=float, default=10, help="speech-like audio for the full-size model")
    parser.add_argument("--repeats", type=int, default=3,
                        help="encodes of the default model after the first (their median is the figure)")
    parser.add_argument("--browser", action="store_true",
                        help="also the default model in Chromium with WebGPU on SwiftShader")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--no-result", action="store_true",
                        help="do not write results/webgpu.json (BENCHMARKS.md's table: `python3 build.py docs`)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        device, info = open_device()
    except NoAdapter as e:
        print(f"no measurement: {e}")
        return 2
    print(f"adapter: {describe(info)}", flush=True)
    cpu_tier = available_tiers()[0]
    small = "tiny" if args.size == "tiny" else "default"
    small_model, audio = model_and_audio(small)
    print(f"{small} model on {WAV.name}: GPU vs {cpu_tier} (1 thread) ...", flush=True)
    rows = [measure(small, small_model, audio, device, args.repeats, cpu_tier)]
    if args.size == "full":
        print(f"full-size model on {args.seconds:g} s of speech-like audio (one encode each) ...", flush=True)
        rows.append(measure("full-size synthetic", *model_and_audio("full", args.seconds), device, 0, cpu_tier))
    figures = {"adapter": info, "adapter_text": describe(info), "emulation": cpu_emulation(info),
               "cpu_tier": cpu_tier, "rows": rows}
    browser = None
    if args.browser:
        print("Chromium, WebGPU on SwiftShader ...", flush=True)
        b_rows, b_info, browser = browser_rows({small: small_model}, WAV.read_bytes())
        figures["browser"] = {"adapter": b_info, "adapter_text": describe(b_info) if b_info else browser,
                              "rows": b_rows}
    figures["wall_seconds"] = round(time.perf_counter() - started, 1)
    if not args.no_result:
        from harness.results import write_result
        write_result("webgpu", figures, browser=browser)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    from harness.documents import webgpu_rows
    print("\n".join(webgpu_rows(figures)))
    every = rows + figures.get("browser", {}).get("rows", [])
    return 0 if all(r["native_digest"] and r["native_tokens"] and not r.get("device_lost") for r in every) else 1


if __name__ == "__main__":
    sys.exit(main())
