"""Kernel benchmarks in every runtime, run by `python3 build.py bench [--json FILE]`.

native   checks.kernel_bench in this process (ctypes on the host library: avx512vnni, avx2,
         scalar)
node     the same code in Pyodide under Node (wasm_simd128, wasm scalar)
chromium the same code in Pyodide in headless Chromium (wasm_relaxed_simd too), and in the
         same browser session
         ONNX Runtime Web (wasm backend, one thread) on an int8 MatMulInteger model of the
         same shapes: op "ort_int8_gemm", the peer to beat.
Prints a table and the headline ratios; --json writes the list of records.

--shapes OxK,... and --tokens N,... measure other shapes than Phonon-2's (a smoke run:
`--quick --shapes 64x64 --tokens 8`, tests/test_bench_smoke.py).
"""

from __future__ import annotations

import json
import platform
import sys
import time

from checks import kernel_bench
from engine.tiers import TIERS

from .ort_models import matmul_integer_model
from .runtimes import Chromium, bench_parser, run_in_node


def bench_ort(browser: Chromium, shapes, tokens, min_seconds: float) -> list:
    records = []
    for O, K in shapes:
        model = matmul_integer_model(O, K, Chromium.models_dir())
        for N in tokens:
            spec = {"model": f"/models/{model.name}", "N": N, "K": K, "O": O,
                    "seconds": min_seconds}
            result = browser.run_ort(spec)
            records.append({"runtime": "chromium", "tier": "ort-web-wasm-1t", "op": "ort_int8_gemm",
                            "O": O, "K": K, "N": N,
                            "gmacs": round(O * K * N / result["seconds_per_run"] / 1e9, 3)})
    return records


def summary(records: list) -> str:
    """Markdown table: one row per (runtime, tier, op), one column per shape and N."""
    keys = sorted({(r["O"], r["K"], r["N"]) for r in records if r["N"] is not None})
    rows = {}
    for r in records:
        if r["op"] == "decode_ns_per_block":
            continue
        rows.setdefault((r["runtime"], r["tier"], r["op"]), {})[(r["O"], r["K"], r["N"])] = r["gmacs"]
    head = "| runtime | tier | op | " + " | ".join(f"{O}x{K} N={N}" for O, K, N in keys) + " |"
    lines = [head, "|" + "---|" * (3 + len(keys))]
    for (runtime, tier, op), cells in rows.items():
        lines.append(f"| {runtime} | {tier} | {op} | " +
                     " | ".join(f"{cells[k]:.1f}" if k in cells else "-" for k in keys) + " |")
    decode = [r for r in records if r["op"] == "decode_ns_per_block"]
    lines.append("")
    lines.append("Decode alone, ns per 8-row block at K=1024: " +
                 ", ".join(f"{r['runtime']}/{r['tier']} {r['ns_per_block']:.0f}" for r in decode))
    return "\n".join(lines)


def ratios(records: list) -> str:
    """The kernel targets as ratios of records measured in the same runtime."""
    def gm(runtime, tier, op):
        return {(r["O"], r["K"], r["N"]): r["gmacs"] for r in records
                if r["runtime"] == runtime and r["tier"] == tier and r["op"] == op}
    out = []
    # every SIMD tier of engine/tiers.py against its runtime's scalar and, in Chromium, against
    # ORT Web's int8 GEMM and its own peak int8 tile
    pairs = []
    for t in TIERS:
        if t.name == "scalar":
            continue
        runtimes = ("chromium", "node") if t.runtime == "wasm" else ("native",)
        pairs += [(r, (t.name, "fv5_gemm"), ("scalar", "fv5_gemm"), f"{t.name} / {r} scalar") for r in runtimes]
        if t.runtime == "wasm":
            pairs += [("chromium", (t.name, "fv5_gemm"), ("ort-web-wasm-1t", "ort_int8_gemm"), f"{t.name} fv5 / ORT Web int8"),
                      ("chromium", (t.name, "fv5_gemm"), (t.name, "peak_int8_gemm"), f"{t.name} fv5 / its int8 peak (chromium)")]
    for runtime, (ta, oa), (tb, ob), label in pairs:
        a, b = gm(runtime, ta, oa), gm(runtime, tb, ob)
        common = sorted(set(a) & set(b))
        if not common:
            continue
        cells = ", ".join(f"{O}x{K} N={N}: {a[(O, K, N)] / b[(O, K, N)]:.2f}" for O, K, N in common)
        out.append(f"- {label}: {cells}")
    return "\n".join(out)


def shape_list(value: str) -> tuple:
    """"4096x1024,1024x4096" -> ((4096, 1024), (1024, 4096)); O a multiple of 8 (fv5 blocks)."""
    import argparse
    shapes = []
    for item in value.split(","):
        try:
            O, K = (int(v) for v in item.lower().split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r}: not OxK") from None
        if O <= 0 or K <= 0 or O % 8:
            raise argparse.ArgumentTypeError(f"{item!r}: O and K positive, O a multiple of 8")
        shapes.append((O, K))
    return tuple(shapes)


def main(argv=None):
    parser = bench_parser("python3 -m harness.bench", "native,node,chromium")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--shapes", type=shape_list, default=kernel_bench.SHAPES,
                        help="comma list of OxK (default: Phonon-2's linears)")
    parser.add_argument("--tokens", type=lambda v: tuple(int(n) for n in v.split(",")), default=kernel_bench.TOKENS,
                        help="comma list of token counts N (default: %(default)s)")
    args = parser.parse_args(argv)
    shapes, tokens = args.shapes, args.tokens
    min_seconds = 0.1 if args.quick else 0.4
    runtimes = args.runtimes.split(",")
    records = []
    started = time.time()
    if "native" in runtimes:
        print("native ...", flush=True)
        records += kernel_bench.run("native", shapes=shapes, tokens=tokens, min_seconds=min_seconds)
    if "node" in runtimes:
        print("node ...", flush=True)
        records += run_in_node("kernel_throughput", timeout=3600, runtime="node", shapes=shapes, tokens=tokens,
                               min_seconds=min_seconds)
    if "chromium" in runtimes:
        print("chromium ...", flush=True)
        with Chromium(timeout_ms=3_600_000) as browser:
            records += browser.run_job("kernel_throughput", runtime="chromium", shapes=shapes, tokens=tokens,
                                       min_seconds=min_seconds)
            records += bench_ort(browser, shapes, tokens, min_seconds)
            print(f"chromium {browser.version()}")
    print(f"\n{platform.processor() or platform.machine()}, {time.time() - started:.0f} s\n")
    print(summary(records))
    print("\nRatios (same runtime, same run):\n" + ratios(records))
    if args.json:
        args.json.write_text(json.dumps(records, indent=1) + "\n")
        print(f"\nwrote {len(records)} records to {args.json}")


if __name__ == "__main__":
    sys.exit(main())
