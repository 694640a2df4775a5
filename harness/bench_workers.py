"""Kernel workers in Chromium, side by side in one browser session (issue 23, browser workers):
the full-size synthetic model encoding the same audio with the engine worker alone and with 1..N
kernel workers beside it (web/kernel-pool.mjs), runs interleaved so the machine's noise hits
every count alike; median seconds, speed-up against one worker, the encoder output's digest
(the same for every count, or this exits non-zero), time by section, and the wasm memory of
the engine worker and of the kernel workers together.

    python3 build.py bench --split           (threads natively, then this; or, in build.py's env:)
    .venv/bin/python -m harness.bench_workers [--seconds 10 30] [--workers 1 2] [--repeats 3]
                                              [--tier wasm_relaxed_simd] [--model FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.bench_e2e import full_model, speechlike
from harness.bench_threads import cpu_name
from harness.runtimes import FETCH_INTO_BYTEARRAY, Chromium

CODE = FETCH_INTO_BYTEARRAY + """
import hashlib, json, statistics, time
from array import array
import js, pyodide_js
from pyodide.http import pyfetch
from engine.kernels import wasm_module_path
from engine.timing import Timer
from engine.transcribe import Engine

model = await fetch_into_bytearray("/models/{model}")
engines, pools = {{}}, {{}}
for n in {counts}:                                # n = workers in all: the engine's + n - 1 kernel workers
    pool = await js.makeKernelPool("{tier}", n - 1, wasm_module_path("{tier}")) if n > 1 else None
    engines[n] = Engine.from_buffer(model, "{tier}", workers=pool)
    if pool is not None:
        await pool.serve()
    pools[n] = pool
records = []
for seconds in {seconds}:
    audio = array("f")
    audio.frombytes(await (await pyfetch(f"/models/audio-{{seconds}}s.f32")).bytes())
    times, digests, splits = {{n: [] for n in engines}}, {{}}, {{}}
    for n, e in engines.items():
        e.encode(audio)                           # warm-up
    for _ in range({repeats}):
        for n, e in engines.items():
            busy = []
            if pools[n] is not None:
                busy, pools[n].waitedMs, pools[n].ownMs = list(pools[n].busyMs), 0, 0
            with Timer() as timer:
                start = time.perf_counter()
                enc, _ = e.encode(audio)
                times[n].append(time.perf_counter() - start)
            digests[n] = hashlib.sha256(enc.tobytes()).hexdigest()
            splits[n] = {{k: round(v, 3) for k, v in timer.seconds.items()}}
            if pools[n] is not None:            # this encode's: the engine's own part, its wait, each kernel worker's busy time
                splits[n]["own"] = round(pools[n].ownMs / 1000, 3)
                splits[n]["pool_wait"] = round(pools[n].waitedMs / 1000, 3)
                splits[n]["kernel_busy"] = [round((b - a) / 1000, 3) for a, b in zip(busy, pools[n].busyMs)]
    records.append({{"audio_seconds": seconds, "median_seconds": {{n: statistics.median(t) for n, t in times.items()}},
                     "digests": digests, "split": splits}})
heaps = {{n: (pools[n].heapBytes if pools[n] is not None else 0) for n in engines}}
json.dumps({{"records": records, "engine_heap_bytes": pyodide_js._module.HEAPU8.length, "kernel_heap_bytes": heaps}})
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_workers")
    parser.add_argument("--seconds", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tier", default="wasm_relaxed_simd")
    parser.add_argument("--model", type=Path, help="a .gguf (default: the full-size synthetic model)")
    parser.add_argument("--json", type=Path, help="write the records here")
    args = parser.parse_args(argv)
    model = args.model or full_model()
    if model.resolve().parent != Chromium.models_dir().resolve():      # served from there (no symlinks)
        import shutil
        shutil.copyfile(model, Chromium.models_dir() / model.name)
    for seconds in args.seconds:
        (Chromium.models_dir() / f"audio-{seconds}s.f32").write_bytes(speechlike(seconds).tobytes())
    code = CODE.format(model=model.name, counts=args.workers, seconds=args.seconds, repeats=args.repeats,
                       tier=args.tier)
    with Chromium(timeout_ms=3_600_000, isolate=True) as browser:
        out = json.loads(browser.run_python(code))
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
