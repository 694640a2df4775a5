"""What the WebGPU tier's full-size 10 s encode would take on real GPU classes, estimated from
the cost model (harness/webgpu_cost.py) and each class's published integer throughput, beside
the relaxed-SIMD tier's encode measured in Chromium on this machine with one worker; and that
CPU encode side by side with an older commit's (the CPU must not get slower for the GPU's sake).

    python3 -m harness.webgpu_estimates [--versus 6464175] [--rounds 2] [--repeats 3]
                                        [--size full|tiny] [--seconds 10] [--json F] [--no-result]

(`--size tiny --seconds 1 --rounds 1 --repeats 1 --no-result`: the smoke run of
tests/test_bench_smoke.py, on the committed tiny model.)

Steps: (1) the cost model's integer operations for one encode of the full-size synthetic model
on 10 s (dispatches recorded on this machine's adapter without running them), counted twice:
with dot4I8Packed as one operation (GPUs with a packed int8 dot product) and as the GEMM's plain
variant (GPUs without one, which the engine gives the plain variant: kernels/webgpu/dot4_plain.wgsl,
each word unpacked once per column word); (2) in Chromium, the encoder alone on 10 s of
features (checks/jobs.py bench_encoder_features: one worker, tier wasm_relaxed_simd, the median
of `--repeats` after a warm-up), in this checkout and, with --versus, in the older commit's
tree (build/versus/<commit>/, exported and built by harness.webgpu_versus; its own wheel built
here by its build.py), alternating trees for `--rounds` browser sessions each; each tree's
least median is its figure.

The estimate per class: operations / (EFFICIENCY x peak integer operations per second) plus
DISPATCH_SECONDS per dispatch. Peak = integer lanes x boost clock (one 32-bit integer operation
per lane per clock, as the vendors publish their ALU counts). What it leaves out, stated with
the table: 32-bit integer multiplies (slower than adds on many GPUs), memory bandwidth (the
GEMMs read the model's weights once per encode) and the serial chains' latency. The figures say
what the operation count allows, not what was run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EFFICIENCY = 0.5                 # sustained fraction of peak integer throughput assumed
DISPATCH_SECONDS = 5e-6          # launch cost per dispatch assumed (1,176 per full-size encode)


@dataclass(frozen=True)
class GpuClass:
    name: str
    lanes: int                   # 32-bit integer lanes
    ghz: float                   # boost clock
    packed_dot: bool             # has a packed int8 dot product (dot4I8Packed in one instruction)
    source: str                  # where the lanes and clock come from

    @property
    def peak(self) -> float:
        return self.lanes * self.ghz * 1e9


GPU_CLASSES = (
    GpuClass("Intel Iris Xe (96 EUs, Core i7-1185G7)", 96 * 8, 1.35, True,
             "96 EUs x 8 ALU lanes, 1.35 GHz; Xe-LP has DP4A"),
    GpuClass("Apple M2 (10-core GPU)", 10 * 128, 1.398, False,
             "10 cores x 128 ALUs, 1.398 GHz; no int8 dot instruction"),
    GpuClass("NVIDIA H100 SXM", 132 * 64, 1.98, True,
             "132 SMs x 64 INT32 lanes, 1.98 GHz boost; DP4A"),
)


def estimate_seconds(ops: float, dispatches: int, gpu: GpuClass) -> float:
    return ops / (EFFICIENCY * gpu.peak) + dispatches * DISPATCH_SECONDS


def cost_totals(size: str = "full", seconds: float = 10) -> dict:
    """The cost model's totals for one encode: {"packed": ops, "plain": ops, "dispatches": n,
    "adapter": description, "model": file name, "audio_seconds": what was encoded} (recorded
    on this machine's adapter, nothing run; --size tiny encodes the committed sample, not
    `seconds`)."""
    from harness.webgpu_adapter import describe, model_and_audio, open_device
    from harness.webgpu_cost import record_encode, split_totals
    device, info = open_device()
    path, audio = model_and_audio(size, seconds)
    profile, _ = record_encode(path, audio, device)
    return {"packed": split_totals(profile.records, True)["total"],
            "plain": split_totals(profile.records, False)["total"],
            "dispatches": len(profile.records), "adapter": describe(info), "model": path.name,
            "audio_seconds": round(len(audio) / 16000, 2)}


# Run in a tree (cwd = the tree, its build.py's test environment): one Chromium session, the
# encoder on 10 s of features; prints one JSON line.
# The model is this checkout's file, linked into the tree's served folder (an older tree would
# make its own copy from its own generator's sources: minutes, and not necessarily the same bytes).
CHILD = r"""
import json, os, sys
from pathlib import Path
from harness.bench_ort_encoder import ORT_DIR, features
from harness.runtimes import Chromium
seconds, repeats, model = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
served = Chromium.models_dir() / f"estimates-{model.name}"
served.unlink(missing_ok=True)                  # linked afresh: the model may have been made again
os.link(model, served)
ORT_DIR.mkdir(parents=True, exist_ok=True)
(ORT_DIR / f"features-{100 * seconds}.f32").write_bytes(features(100 * seconds)[0].tobytes())
with Chromium(timeout_ms=3_600_000, isolate=True) as browser:
    got = browser.run_job("bench_encoder_features", model={"url": f"/models/{served.name}"},
                          counts=[1], seconds=[seconds], repeats=repeats, tier="wasm_relaxed_simd")
    print(json.dumps({"seconds": got[f"{seconds}/phonon 1"], "chromium": browser.version()}))
"""


def tree_env(tree: Path) -> dict:
    """The tree's own build.py test environment (its wheel, its Pyodide)."""
    code = "import build, json; print(json.dumps(build.test_env()))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def browser_encode(tree: Path, seconds: int, repeats: int, model: Path) -> dict:
    out = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c", CHILD, str(seconds), str(repeats), str(model)],
                         cwd=tree, env=tree_env(tree) | {"PYTHONPATH": str(tree)}, capture_output=True,
                         text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"the encode in Chromium failed in {tree}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def old_tree(commit: str) -> Path:
    """build/versus/<commit>/ with its native library (harness.webgpu_versus) and its Pyodide
    wheel, built by its own build.py (once)."""
    from harness.webgpu_versus import export_tree
    tree = export_tree(commit)
    for name in (".venv", ".cache"):             # the same pinned tools as this checkout
        if not (tree / name).exists():
            os.symlink(ROOT / name, tree / name)
    # its wheels (older build.py files call the command "wheel"; later ones also build the start snapshot)
    command = "pyodide" if "def cmd_pyodide" in (tree / "build.py").read_text() else "wheel"
    subprocess.run([sys.executable, "build.py", command], cwd=tree, check=True)
    return tree


def table(figures: dict) -> list:
    """Markdown lines: the estimates per class beside the measured CPU encode."""
    cpu = figures["new"]["seconds"]
    lines = ["| GPU class | peak integer ops/s (lanes x clock) | dot4I8Packed | G ops counted | "
             "estimated encode s | relaxed-SIMD encode here / estimate |", "|---|---:|---|---:|---:|---:|"]
    for gpu in GPU_CLASSES:
        ops = figures["ops"]["packed" if gpu.packed_dot else "plain"]
        est = estimate_seconds(ops, figures["ops"]["dispatches"], gpu)
        lines.append(f"| {gpu.name} ({gpu.source}) | {gpu.peak / 1e12:.2f} T | "
                     f"{'one instruction' if gpu.packed_dot else 'plain variant: words unpacked once, 4 multiply-adds a product'} | "
                     f"{ops / 1e9:.1f} | {est:.3f} | {cpu / est:.1f}x |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.webgpu_estimates")
    parser.add_argument("--versus", help="an older commit whose CPU encode runs beside this checkout's")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--size", choices=("full", "tiny"), default="full")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-result", action="store_true", help="do not write results/webgpu-estimates.json")
    args = parser.parse_args(argv)
    figures = {"ops": cost_totals(args.size, args.seconds), "size": args.size, "efficiency": EFFICIENCY,
               "dispatch_seconds": DISPATCH_SECONDS, "audio_seconds": args.seconds, "repeats": args.repeats}
    from harness.bench_e2e import synthetic_model
    model = synthetic_model(args.size)
    trees = {"new": ROOT}
    if args.versus:
        trees = {"old": old_tree(args.versus), **trees}
        figures["old_commit"] = args.versus
    runs = {key: [] for key in trees}
    for round_ in range(args.rounds):
        for key, tree in trees.items():
            got = browser_encode(tree, args.seconds, args.repeats, model)
            runs[key].append(got["seconds"])
            figures["chromium"] = got["chromium"]
            print(f"round {round_ + 1}: {key} {got['seconds']} s", flush=True)
    for key, times in runs.items():
        figures[key] = {"seconds": min(times), "runs": times}
    print("\n".join(table(figures)))
    if "old" in figures:
        print(f"relaxed-SIMD encode, one worker: {figures['new']['seconds']} s here, {figures['old']['seconds']} s "
              f"at {args.versus} (ratio {figures['new']['seconds'] / figures['old']['seconds']:.3f})")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    if not args.no_result:
        from harness.results import write_result
        print(f"wrote {write_result('webgpu-estimates', figures, browser=figures['chromium'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
