"""The default model's batch speed against a baseline commit, side by side on this machine
(the aim: "default model >= 4x today's, natively and in Chromium, both measured in one run").

    git worktree add /tmp/base 5d05e65 && (cd /tmp/base && ln -s $PWD/.venv $PWD/.cache . ;
        python3 build.py native wheel)                 # once: the baseline, built
    python3 build.py bench --overhead /tmp/base

Natively each checkout's engine runs in its own process (checks/timing.py's job, the checkout
on PYTHONPATH); in Chromium each engine wheel gets its own harness session (the baseline's
with checks/timing.py as its checks.jobs: it needs only Engine.from_buffer and transcribe).
Rounds alternate between the two, so both see the same machine load; the ratio is of medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "two-commands.wav"
MODEL = ROOT / "models" / "phonon-small.gguf"


def native_median(tree: Path, model: Path, wav: Path, repeats: int) -> dict:
    """checks/timing.py's time_transcribe natively with `tree`'s engine (a process of its own)."""
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--native-job", str(model), str(wav),
                          "--repeats", str(repeats)], env=dict(os.environ, PYTHONPATH=f"{tree}:{ROOT}"),
                         cwd=tree, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def native_job(model: Path, wav: Path, repeats: int) -> dict:
    """In the checkout's process: its engine (first on sys.path), this checkout's timing job."""
    import base64
    from checks.timing import time_transcribe

    def inline(data: bytes) -> dict:
        return {"base64": base64.b64encode(data).decode()}
    return asyncio.run(time_transcribe(inline(model.read_bytes()), inline(wav_floats(wav)), "auto", 3, repeats))


def wav_floats(wav: Path) -> bytes:
    """16 kHz mono 16-bit WAV -> float32 bytes, with the standard library only (the same
    samples for both engines, whatever their audio loaders)."""
    import wave
    from array import array
    with wave.open(str(wav)) as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (16000, 1, 2):
            raise SystemExit(f"{wav}: need 16 kHz mono 16-bit PCM")
        pcm = array("h", w.readframes(w.getnframes()))
    return array("f", [v / 32768.0 for v in pcm]).tobytes()


def chromium_median(engine_wheel: Path, checks_wheel: Path, model: Path, wav: Path, repeats: int) -> dict:
    from harness.runtimes import Chromium, inline
    saved = {k: os.environ.get(k) for k in ("PHONON_WHEEL", "PHONON_CHECKS_WHEEL")}
    os.environ.update(PHONON_WHEEL=str(engine_wheel), PHONON_CHECKS_WHEEL=str(checks_wheel))
    try:
        # The model travels by URL from the harness's /models/ folder, not inline: a full-size model
        # (205 MB) passed through playwright's driver as base64 exhausts the driver's memory.
        served = Chromium.models_dir() / model.name
        if served.resolve() != model.resolve():
            shutil.copyfile(model, served)
        with Chromium(isolate=True) as browser:           # isolated: performance.now() to 5 us
            return browser.run_job("time_transcribe", model={"url": f"/models/{model.name}"},
                                   audio=inline(wav_floats(wav)), tier="auto", warmup=3, repeats=repeats)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def baseline_wheels(base: Path, into: Path) -> tuple:
    """The baseline's engine wheel, and a checks wheel holding checks/timing.py as checks.jobs,
    side by side in `into` (the harness serves one directory of wheels)."""
    sys.path.insert(0, str(ROOT))
    import build
    name = build.wheel_path().name
    engine = into / name
    engine.write_bytes((base / "build" / "wheel" / name).read_bytes())
    checks = into / build.checks_wheel_path().name
    build.write_wheel(checks, "phonon-web-checks", "baseline timing job",
                      {"checks/__init__.py": ROOT / "checks" / "__init__.py", "checks/jobs.py": ROOT / "checks" / "timing.py"})
    return engine, checks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_overhead")
    parser.add_argument("--base", type=Path, help="a built checkout of the baseline commit")
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--wav", type=Path, default=SAMPLE)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--native-job", nargs=2, type=Path, metavar=("MODEL", "WAV"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.model, args.wav = args.model.resolve(), args.wav.resolve()   # the baseline runs in its own tree
    if args.native_job:
        print(json.dumps(native_job(*args.native_job, args.repeats)))
        return 0
    if args.base is None or not (args.base / "engine").is_dir():
        parser.error("--base: a checkout of the baseline commit, built (python3 build.py native wheel there)")
    from harness.bench_threads import cpu_name
    from harness.runtimes import env_path
    trees = {"this": ROOT, "base": args.base.resolve()}
    rows = {(where, tree): [] for where in ("native", "chromium") for tree in trees}
    with tempfile.TemporaryDirectory() as tmp:
        wheels = {"this": (env_path("PHONON_WHEEL"), env_path("PHONON_CHECKS_WHEEL")),
                  "base": baseline_wheels(args.base, Path(tmp))}
        for r in range(args.rounds):
            for tree, path in trees.items():
                got = native_median(path, args.model, args.wav, args.repeats)
                rows["native", tree].append(got)
                got = chromium_median(*wheels[tree], args.model, args.wav, args.repeats)
                rows["chromium", tree].append(got)
                print(f"round {r + 1} {tree}: native {rows['native', tree][-1]['median_seconds'] * 1000:.1f} ms "
                      f"[{rows['native', tree][-1]['tier']}], chromium {got['median_seconds'] * 1000:.1f} ms "
                      f"[{got['tier']}]", flush=True)
    print(f"\nCPU: {cpu_name()}; {args.model.name} on {args.wav.name}; medians of {args.repeats} runs, "
          f"{args.rounds} alternating rounds")
    for where in ("native", "chromium"):
        this = statistics.median(r["median_seconds"] for r in rows[where, "this"])
        base = statistics.median(r["median_seconds"] for r in rows[where, "base"])
        audio = rows[where, "this"][0]["audio_seconds"]
        texts = {r["text"] for tree in trees for r in rows[where, tree]}
        print(f"{where:9s} this {this * 1000:6.1f} ms (RTFx {audio / this:5.0f})  base {base * 1000:6.1f} ms "
              f"(RTFx {audio / base:5.0f})  speed-up {base / this:.2f}x  same text: {len(texts) == 1}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
