"""Kernel workers in Chromium, side by side in one browser session:
the full-size synthetic model encoding the same audio with the engine worker alone and with 1..N
kernel workers beside it (web/kernel-pool.mjs), runs interleaved so the machine's noise hits
every count alike; median seconds, speed-up against one worker, the encoder output's digest
(the same for every count, or this exits non-zero), time by section, and the wasm memory of
the engine worker and of the kernel workers together.

    python3 build.py bench --split           (threads natively, then this; or, in build.py's env:)
    .venv/bin/python -m harness.bench_workers [--seconds 10 30] [--workers 1 2] [--repeats 3]
                                              [--tier wasm_relaxed_simd] [--model FILE] [--size full|tiny]

A smoke run: `--size tiny --seconds 1 --repeats 1` (tests/test_bench_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.bench_e2e import SIZES, speechlike, synthetic_model
from harness.bench_threads import cpu_name
from harness.runtimes import Chromium



def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_workers")
    parser.add_argument("--seconds", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tier", default="wasm_relaxed_simd")
    parser.add_argument("--model", type=Path, help="a .gguf (default: the synthetic model of --size)")
    parser.add_argument("--size", choices=SIZES, default="full",
                        help="without --model, the synthetic model: full (default) or tiny (a smoke run)")
    parser.add_argument("--json", type=Path, help="write the records here")
    args = parser.parse_args(argv)
    model = args.model or synthetic_model(args.size)
    if model.resolve().parent != Chromium.models_dir().resolve():      # served from there (no symlinks)
        import shutil
        shutil.copyfile(model, Chromium.models_dir() / model.name)
    for seconds in args.seconds:
        (Chromium.models_dir() / f"audio-{seconds}s.f32").write_bytes(speechlike(seconds).tobytes())
    with Chromium(timeout_ms=3_600_000, isolate=True) as browser:
        out = browser.run_job("bench_workers", model={"url": f"/models/{model.name}"}, tier=args.tier,
                              counts=args.workers, seconds=args.seconds, repeats=args.repeats)
        version = browser.version()
    print(f"CPU: {cpu_name()}; Chromium {version}; tier {args.tier}; model {model.name} "
          f"({model.stat().st_size / 2**20:.0f} MiB)")
    identical = True
    for r in out["records"]:
        base = r["median_seconds"][str(args.workers[0])]
        cells = "  ".join(f"{n} workers {r['median_seconds'][str(n)]:.3f} s (x{base / r['median_seconds'][str(n)]:.2f})"
                          for n in args.workers)
        same = len(set(r["digests"].values())) == 1
        identical &= same
        print(f"{r['audio_seconds']:4d} s audio  {cells}  {'identical' if same else 'DIFFERENT OUTPUTS'}")
        for n in args.workers:
            print(f"      {n} workers by section (last run): {r['split'][str(n)]}")
    for n in args.workers:
        print(f"wasm memory with {n} workers: engine worker {out['engine_heap_bytes'] / 2**20:.0f} MiB "
              f"+ kernel workers {out['kernel_heap_bytes'][str(n)] / 2**20:.0f} MiB")
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu_name(), "chromium": version, "tier": args.tier,
                                         "model": model.name, **out}, indent=1) + "\n")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
