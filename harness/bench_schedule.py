"""The full-size model streaming on a realistic schedule, in Chromium with
one and two workers: the windows the default trained model's stream decodes on the release's
long recordings (`training.release.stream_vs_batch`'s recordings: held-out sentences joined by
0.3-2 s pauses), each decoded by the full-size synthetic model (encoder + TDT greedy), the two
counts alternating window by window in one browser session. compute / audio = the time of all
decodes over the recordings' length: below 1 the stream keeps up.

    python3 build.py bench --schedule          (or, in build.py's environment:)
    .venv/bin/python -m harness.bench_schedule [--recordings 6] [--workers 1 2] [--tier wasm_relaxed_simd]
                                               [--config '{"hop_ms": 400}'] [--size full|tiny]

`--size tiny` decodes the windows with the committed tiny synthetic model instead of the
full-size one (a smoke run: `--size tiny --recordings 1`, tests/test_bench_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from harness.bench_e2e import SIZES, synthetic_model
from harness.bench_threads import cpu_name
from harness.runtimes import Chromium

DEFAULT_MODEL = "models/phonon-small.gguf"


def schedule(recordings: int, seed: int = 5, **config) -> tuple:
    """(audio [all recordings joined], [(start, length)] of every window the default model's
    stream decoded, in samples of the joined audio) - the same recordings and pauses as
    release.stream_vs_batch. config: StreamConfig fields (the defaults if none)."""
    from engine.transcribe import Engine
    from training.release import paused_recording
    engine = Engine.open(DEFAULT_MODEL)
    decode = engine.tokens
    audio, windows, offset = [], [], 0
    for r in range(recordings):
        x, _ = paused_recording(seed + r)
        session = engine.stream(16000, **config)

        def tokens(samples, *args, _at=offset, **kwargs):
            windows.append((_at + session.window.start, len(samples)))
            return decode(samples, *args, **kwargs)
        engine.tokens = tokens
        for i in range(0, x.size, 320):
            session.feed(x[i:i + 320])
            session.partial()
        session.finish()
        engine.tokens = decode
        audio.append(x)
        offset += x.size
    return np.concatenate(audio).astype(np.float32), windows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.bench_schedule")
    parser.add_argument("--recordings", type=int, default=6)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tier", default="wasm_relaxed_simd")
    parser.add_argument("--json", help="write the record here")
    parser.add_argument("--config", type=json.loads, default={},
                        help="the default model's StreamConfig fields as JSON (default: the defaults)")
    parser.add_argument("--size", choices=SIZES, default="full",
                        help="the synthetic model that decodes the windows: full (default) or tiny (a smoke run)")
    args = parser.parse_args(argv)
    audio, windows = schedule(args.recordings, **args.config)
    audio_seconds = audio.size / 16000
    window_seconds = sum(n for _, n in windows) / 16000
    models = Chromium.models_dir()
    (models / "schedule-audio.f32").write_bytes(audio.tobytes())
    (models / "schedule.json").write_text(json.dumps(windows))
    model = synthetic_model(args.size)
    with Chromium(timeout_ms=7_200_000, isolate=True) as browser:
        out = browser.run_job("bench_schedule", model={"url": f"/models/{model.name}"}, tier=args.tier,
                              counts=args.workers)
        version = browser.version()
    print(f"CPU: {cpu_name()}; Chromium {version}; tier {args.tier}; {model.name}")
    print(f"schedule: {len(windows)} decodes by the default model's stream over {args.recordings} recordings, "
          f"{window_seconds:.1f} s of windows for {audio_seconds:.1f} s of audio")
    record = {"cpu": cpu_name(), "chromium": version, "tier": args.tier, "model": model.name, "config": args.config,
              "decodes": len(windows),
              "window_seconds": round(window_seconds, 1), "audio_seconds": round(audio_seconds, 1),
              "compute_per_audio": {}}
    for n in args.workers:
        s = out["seconds"][str(n)]
        record["compute_per_audio"][n] = round(s / audio_seconds, 3)
        print(f"{n} worker{'s' if n > 1 else ''}: {s:.1f} s of compute, compute / audio {s / audio_seconds:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
