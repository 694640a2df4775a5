"""The WebGPU tier at an older commit side by side with this checkout, per kernel, on this
machine's adapter ("side by side with 6464175 on one machine").

    python3 -m harness.webgpu_versus 6464175 [--size full|default|tiny] [--seconds 10] [--json F]
                                             [--rounds 2] [--repeats 2] [--old-tree DIR] [--no-result]

The older commit is exported (git archive) into build/versus/<commit>/ and its native library
built there (its own build.py native), once. Then each tree - the old one first, this checkout
second - runs the same child in its own Python process (the two engines are both the package
`engine`, so they cannot share one): open the adapter, load the model on the GPU executor,
encode once (the shaders compile and the positional table is made), then encode `--repeats`
times more with every pass timed by harness/webgpu_profile.py (this checkout's file, loaded by path: it uses
only GpuKernels.run, .pipeline, ._bind and .uniform, which both have). The trees alternate for `--rounds` processes each (this VM's speed drifts by
tens of percent over minutes; kernels that did not change measured 0.6-0.9x in one unalternated
run), and each kernel's least time over a tree's encodes is its figure. The table gives, per
kernel, the GPU time of each and their ratio, grouped as the issue reads them: the GEMMs'
passes (the int8 products with their epilogues) and everything else. On a CPU emulation
(lavapipe) the times are the CPU running the shaders.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from harness.webgpu_cost import GEMM_MODULES

ROOT = Path(__file__).resolve().parent.parent
VERSUS = ROOT / "build" / "versus"
# the linears' passes: the GEMMs (harness/webgpu_cost.py) and what feeds them
LINEAR_MODULES = (*GEMM_MODULES, "fv5_decode", "quantize_act")

# Run in each tree (cwd = the tree): one warm-up encode, one profiled; prints one JSON line.
CHILD = r"""
import importlib.util, json, sys, time
from pathlib import Path
spec = importlib.util.spec_from_file_location("webgpu_profile", sys.argv[1])
webgpu_profile = sys.modules["webgpu_profile"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(webgpu_profile)
import wgpu
if Path("engine/webgpu_tier.py").exists():           # before the engine's house was reorganised
    from engine.webgpu_tier import GpuKernels
else:
    from engine.executors.webgpu.device import GpuKernels
from engine.transcribe import Engine
from array import array
adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
features = ["timestamp-query"] if "timestamp-query" in adapter.features else []
device = adapter.request_device_sync(required_features=features)
gpu = GpuKernels(device)
engine = Engine.open(Path(sys.argv[2]), "scalar", gpu=gpu)
audio = array("f")
audio.frombytes(Path(sys.argv[3]).read_bytes())
started = time.perf_counter()
engine.encode(audio)
first = time.perf_counter() - started
profile = webgpu_profile.DispatchProfile(gpu)
kernels, walls = {}, []
for _ in range(int(sys.argv[4])):                    # each kernel's least total over the encodes
    profile.clear()
    started = time.perf_counter()
    enc, T = engine.encode(audio)
    walls.append(time.perf_counter() - started)
    for module, row in profile.by_module().items():
        best = kernels.setdefault(module, row)
        best["seconds"] = min(best["seconds"], row["seconds"])
print(json.dumps({"first_encode_seconds": first, "profiled_encode_seconds": min(walls), "frames": T,
                  "timestamps": profile.timestamps, "kernels": kernels}))
"""


def export_tree(commit: str) -> Path:
    """build/versus/<full commit>/: the commit's files and its native library (built once)."""
    full = subprocess.run(["git", "rev-parse", commit], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.strip()
    tree = VERSUS / full
    if not (tree / ".built").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", full], cwd=ROOT, check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        print(f"building {full[:7]}'s native library in {tree} ...", flush=True)
        subprocess.run([sys.executable, "build.py", "native"], cwd=tree, check=True)
        (tree / ".built").write_text(full + "\n")
    return tree


def profile_tree(tree: Path, model: Path, audio_file: Path, repeats: int = 1) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "harness" / "webgpu_profile.py"),
                           str(model), str(audio_file), str(repeats)], cwd=tree, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the profile in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def least(runs: list) -> dict:
    """Profiles of one tree merged: each kernel's least time, the least wall time."""
    out = dict(runs[0], kernels={m: dict(r) for m, r in runs[0]["kernels"].items()})
    for run in runs[1:]:
        out["profiled_encode_seconds"] = min(out["profiled_encode_seconds"], run["profiled_encode_seconds"])
        for m, r in run["kernels"].items():
            out["kernels"][m]["seconds"] = min(out["kernels"][m]["seconds"], r["seconds"])
    return out


def side_by_side(old: dict, new: dict, old_name: str, new_name: str) -> list:
    """Markdown lines: per kernel the old and new GPU milliseconds and old / new; then the GEMMs'
    passes and the rest as groups, and the whole encode."""
    modules = list(dict.fromkeys([*old["kernels"], *new["kernels"]]))
    ms = lambda side, m: 1e3 * side["kernels"].get(m, {}).get("seconds", 0.0)       # noqa: E731
    ratio = lambda a, b: f"{a / b:.2f}x" if a and b else "–"                         # noqa: E731
    lines = [f"| kernel | {old_name} ms | {new_name} ms | {old_name} / {new_name} |", "|---|---:|---:|---:|"]
    for m in sorted(modules, key=lambda m: -ms(old, m)):
        lines.append(f"| {m} | {ms(old, m):.1f} | {ms(new, m):.1f} | {ratio(ms(old, m), ms(new, m))} |")
    group = lambda side, inside: sum(ms(side, m) for m in modules if (m in LINEAR_MODULES) == inside)  # noqa: E731
    for name, inside in (("GEMMs (quantise, decode, int8 products, epilogues)", True),
                         ("everything else (attention, norms, conv, subsampling, residuals)", False)):
        a, b = group(old, inside), group(new, inside)
        lines.append(f"| **{name}** | {a:.1f} | {b:.1f} | {ratio(a, b)} |")
    a, b = sum(ms(old, m) for m in modules), sum(ms(new, m) for m in modules)
    lines.append(f"| **all passes** | {a:.1f} | {b:.1f} | {ratio(a, b)} |")
    lines.append(f"| encode wall s (profiled) | {old['profiled_encode_seconds']:.2f} | "
                 f"{new['profiled_encode_seconds']:.2f} | "
                 f"{ratio(old['profiled_encode_seconds'], new['profiled_encode_seconds'])} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.webgpu_versus")
    parser.add_argument("commit", help="the older commit (e.g. 6464175)")
    parser.add_argument("--size", choices=("full", "default", "tiny"), default="full")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--json", type=Path, help="write both profiles here too")
    parser.add_argument("--rounds", type=int, default=2, help="processes per tree, the trees alternating")
    parser.add_argument("--repeats", type=int, default=2, help="profiled encodes per process")
    parser.add_argument("--no-result", action="store_true",
                        help="do not write results/webgpu-versus.json (BENCHMARKS.md's table: `python3 build.py docs`)")
    parser.add_argument("--old-tree", type=Path,
                        help="an existing tree (with its native library) to run as the old side instead of "
                             "exporting the commit (the smoke test passes this checkout)")
    args = parser.parse_args(argv)
    from harness.webgpu_adapter import model_and_audio
    model, audio = model_and_audio(args.size, args.seconds)
    audio_file = VERSUS / f"audio-{args.size}-{args.seconds:g}.f32"
    audio_file.parent.mkdir(parents=True, exist_ok=True)
    audio_file.write_bytes(memoryview(audio).cast("B"))
    tree = args.old_tree or export_tree(args.commit)
    from harness.results import commit
    head = commit()                                  # "+changes": the tree is what runs, not HEAD
    old_runs, new_runs = [], []
    for r in range(args.rounds):                     # alternating, so that a slow spell hits both
        print(f"round {r + 1} of {args.rounds}: {args.commit} ...", flush=True)
        old_runs.append(profile_tree(tree, model, audio_file, args.repeats))
        print(f"round {r + 1} of {args.rounds}: this checkout ({head}) ...", flush=True)
        new_runs.append(profile_tree(ROOT, model, audio_file, args.repeats))
    old, new = least(old_runs), least(new_runs)
    print(f"{model.name}, {len(audio) / 16000:g} s; per tree {args.rounds} processes (alternating) x "
          f"{args.repeats} profiled encodes after a warm-up, each kernel's least time, every pass timed "
          f"({'timestamp queries' if new['timestamps'] else 'each pass waited for'}):")
    print("\n".join(side_by_side(old, new, args.commit[:7], head)))
    figures = {"old": old, "new": new, "old_commit": args.commit, "new_commit": head, "model": model.name,
               "audio_seconds": round(len(audio) / 16000, 2), "rounds": args.rounds, "repeats": args.repeats}
    if not args.no_result:
        from harness.results import write_result
        write_result("webgpu-versus", figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
