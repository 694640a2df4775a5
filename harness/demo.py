"""`python3 build.py demo` until the web app lands (issue 6): show the kernels doing the same
thing everywhere - the seeded kernel sweep natively (every tier) and in Pyodide under Node
(both wasm tiers), with one combined digest per tier, and a quick fv5 GEMM speed per tier."""

from __future__ import annotations

import json

from engine import kernel_bench, parity
from engine.__main__ import sweep_digest
from engine.kernels import available_tiers

from .runtimes import run_in_node

NODE_CODE = """
import json
from engine import parity, kernel_bench
from engine.__main__ import sweep_digest
out = {}
for tier in ("wasm_simd128", "scalar"):
    speed = kernel_bench.run("node", tiers=[tier], shapes=((1024, 1024),), tokens=(64,),
                             min_seconds=0.1, ops=("fv5_gemm",))[0]["gmacs"]
    out[tier] = [sweep_digest(parity.digests(tier)), speed]
json.dumps(out)
"""


def main():
    print("phonon-web kernels: the same seeded sweep (decode, quantise, fv5 and int8 GEMM)\n")
    rows = []
    for tier in available_tiers():
        speed = kernel_bench.run("native", tiers=[tier], shapes=((1024, 1024),), tokens=(64,),
                                 min_seconds=0.1, ops=("fv5_gemm",))[0]["gmacs"]
        rows.append(("native CPython", tier, sweep_digest(parity.digests(tier)), speed))
    for tier, (digest, speed) in json.loads(run_in_node(NODE_CODE)).items():
        rows.append(("Pyodide in Node", tier, digest, speed))
    for runtime, tier, digest, speed in rows:
        print(f"  {runtime:16s} {tier:13s} sweep sha256 {digest[:16]}...  fv5 GEMM 1024x1024 N=64: "
              f"{speed:6.1f} GMAC/s")
    same = len({r[2] for r in rows}) == 1
    print("\nall runtimes and tiers bit-identical" if same else "\nMISMATCH between runtimes")
    print("The speech demo (microphone -> live text in the browser) arrives with the web app.")
    raise SystemExit(0 if same else 1)


if __name__ == "__main__":
    main()
