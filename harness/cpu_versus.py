"""The CPU tiers in Pyodide under Node (or, with --native, in CPython with the native library),
this checkout beside an older commit's tree: the encoder, its parts and the float kernels a
layer calls, timed in each tree with the same inputs, to find where a CPU difference comes from
(Chromium's figure for the whole encoder: harness.webgpu_estimates).

    python3 -m harness.cpu_versus 6464175 [--size full|tiny] [--tier T] [--native]
                                          [--rounds 2] [--repeats 3] [--old-tree DIR] [--json F]

--tier: default wasm_relaxed_simd under Node, "auto" (the best this CPU runs) with --native.

Each tree runs the same child in its own Node process (its own Pyodide and its own wheel, built
by its build.py: harness.webgpu_estimates.old_tree), trees alternating for `--rounds` processes
each; every figure is the least over a tree's processes of the least of `--repeats` calls (after
a warm-up call), in milliseconds:
  encoder      the encoder alone on 10 s of features (harness.bench_ort_encoder.features)
  subsampling  its subsampling part
  layer        one conformer layer (the middle one) on the subsampled frames
  layernorm, attention_heads, silu, glu   the tier's kernels at the layer's shapes (T frames,
               D, the heads, 4 D for the feed-forward), Gaussian inputs from random.Random(1)
The child uses only what both trees have (Engine.from_buffer, network.encoder and its parts,
Kernels' layernorm, attention_heads, silu, glu). Node 20 runs relaxed SIMD behind
--experimental-wasm-relaxed-simd, which is passed. Pyodide under Node is V8, as Chromium is, but
the figures are Node's: the ratios are what to read.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ("encoder", "subsampling", "layer", "layernorm", "attention_heads", "silu", "glu")

# The child, in Pyodide or CPython (standard library only); TIER, REPEATS, MODEL and DATA (the
# features' folder) are prepended. In Pyodide the model's folder is mounted at /model, the
# features' at /data.
CHILD = r"""
import inspect, json, random, time
from array import array
from engine.transcribe import Engine

def least_ms(call, n):
    call()
    times = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return round(min(times) * 1e3, 3)

engine = Engine.from_buffer(open(MODEL, "rb").read(), TIER, 1)
feats = array("f")
feats.frombytes(open(DATA + "/features.f32", "rb").read())
frames = len(feats) // 128
enc = engine.network.encoder
out = {"encoder": least_ms(lambda: enc(feats, frames), REPEATS)}
out["subsampling"] = least_ms(lambda: enc.subsampling(feats, 128, frames), REPEATS)
x, T = enc.subsampling(feats, 128, frames)
pe = enc.positional(T)
layer = enc.layers[len(enc.layers) // 2]
extra = (False,) if "float_acts" in inspect.signature(layer.__call__).parameters else ()
out["layer"] = least_ms(lambda: layer(x, T, pe, *extra), 2 * REPEATS)
attn = layer.self_attn
D, H = attn.D, attn.H
dk = D // H
rng = random.Random(1)
def gauss(n):
    return array("f", [rng.gauss(0, 1) for _ in range(n)])
k = engine.k
rows, g, b = gauss(T * D), gauss(D), gauss(D)
q, kk, v, p, u, vb = gauss(T * D), gauss(T * D), gauss(T * D), gauss((2 * T - 1) * D), gauss(D), gauss(D)
o = array("f", bytes(4 * T * D))
ff = gauss(T * 4 * D)
ff_out = array("f", bytes(4 * T * 4 * D))
out["layernorm"] = least_ms(lambda: k.layernorm(rows, T, D, g, b, 1e-5), 4 * REPEATS)
out["attention_heads"] = least_ms(lambda: k.attention_heads(T, D, dk, 0, H, q, kk, v, p, u, vb, dk ** 0.5, o), REPEATS)
out["silu"] = least_ms(lambda: k.silu(ff, T * 4 * D, out=ff_out), 4 * REPEATS)
out["glu"] = least_ms(lambda: k.glu(ff, T, D), 4 * REPEATS)                    # [T][2D] -> [T][D]
out["frames"] = T
json.dumps(out)
"""


def tree_runtime(tree: Path) -> tuple:
    """(Pyodide folder, engine wheel) of a tree's own build."""
    from harness.webgpu_estimates import tree_env
    env = tree_env(tree)
    return Path(env["PHONON_PYODIDE_DIR"]), Path(env["PHONON_WHEEL"])


def time_tree(tree: Path, model: Path, data: Path, tier: str, repeats: int) -> dict:
    """The child's figures in `tree`'s own Pyodide with its own wheel (harness/pyodide_node.mjs,
    this checkout's: it only loads what it is given)."""
    pyodide, wheel = tree_runtime(tree)
    if not wheel.exists():
        raise SystemExit(f"{tree} has no Pyodide wheel ({wheel}): run its build.py pyodide (or wheel)")
    code = (f"TIER = {tier!r}\nREPEATS = {int(repeats)}\nMODEL = {'/model/' + model.name!r}\n"
            f"DATA = '/data'\n" + CHILD)
    request = {"code": code, "mounts": {"/model": str(model.parent), "/data": str(data)}}
    done = subprocess.run(["node", "--experimental-wasm-relaxed-simd", str(ROOT / "harness" / "pyodide_node.mjs"),
                           str(pyodide), str(wheel)], input=json.dumps(request), capture_output=True, text=True,
                          timeout=3600)
    return child_result(done, f"the child in {tree}")


def child_result(done: subprocess.CompletedProcess, who: str) -> dict:
    """The figures a child printed on its `@@result ` line; SystemExit with its stderr if none."""
    for line in done.stdout.splitlines():
        if line.startswith("@@result "):
            return json.loads(line[len("@@result "):])
    raise SystemExit(f"{who} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")


def time_tree_native(tree: Path, model: Path, data: Path, tier: str, repeats: int) -> dict:
    """The child's figures in CPython with `tree`'s own native library (its build.py native)."""
    code = (f"TIER = {tier!r}\nREPEATS = {int(repeats)}\nMODEL = {str(model)!r}\nDATA = {str(data)!r}\n"
            + CHILD + "\nprint('@@result ' + json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                          capture_output=True, text=True, timeout=3600)
    return child_result(done, f"the native child in {tree}")


def table(old: dict, new: dict, old_name: str) -> list:
    lines = [f"| ms | {old_name} | this checkout | this / {old_name} |", "|---|---:|---:|---:|"]
    for name in FIGURES:
        lines.append(f"| {name} | {old[name]:.3f} | {new[name]:.3f} | {new[name] / old[name]:.3f} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.cpu_versus", description=__doc__.split("\n\n")[0])
    parser.add_argument("commit", help="the older commit")
    parser.add_argument("--size", choices=("full", "tiny"), default="full")
    parser.add_argument("--seconds", type=int, default=10, help="features for the encoder (10 ms frames)")
    parser.add_argument("--tier", help="the CPU tier (default wasm_relaxed_simd, or auto with --native)")
    parser.add_argument("--native", action="store_true", help="CPython and the native library, not Pyodide")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--old-tree", type=Path, help="use this built tree as the older side")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from harness.bench_e2e import synthetic_model
    from harness.bench_ort_encoder import features
    from harness.webgpu_estimates import old_tree
    old = args.old_tree.resolve() if args.old_tree else old_tree(args.commit)
    tier = args.tier or ("auto" if args.native else "wasm_relaxed_simd")
    timed = time_tree_native if args.native else time_tree
    model = synthetic_model(args.size).resolve()
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        features(100 * args.seconds)[0].tofile(data / "features.f32")
        runs = {"old": [], "new": []}
        for round_ in range(args.rounds):
            for side, tree in (("old", old), ("new", ROOT)):
                runs[side].append(timed(tree, model, data, tier, args.repeats))
                print(f"round {round_ + 1}: {side} " + json.dumps(runs[side][-1]), flush=True)
    best = {side: {name: min(r[name] for r in rs) for name in FIGURES} | {"frames": rs[0]["frames"]}
            for side, rs in runs.items()}
    print("\n".join(table(best["old"], best["new"], args.commit[:7])))
    if args.json:
        args.json.write_text(json.dumps({"commit": args.commit, "tier": tier, "native": args.native, "size": args.size,
                                         "seconds": args.seconds, "best": best, "runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
