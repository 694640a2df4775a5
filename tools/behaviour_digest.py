"""What this checkout computes, in digests, to hold a refactor to "behaviour unchanged": for every
model and native kernel tier (one thread and two), the encoder output's sha256 and frame count
and the tokens' sha256 on samples/two-commands.wav (the full-size synthetic model on 4 s of
speech-like audio); and for `engine stream` (scalar tier, settings fast and balanced) on two
generated recordings and the sample, the sha256 of the events and of the final tokens.

    python3 -m tools.behaviour_digest > after.json          (in build.py's .venv; then, in a
    git worktree of the older commit: ... > before.json)
    python3 -m tools.behaviour_digest --compare before.json after.json

--models picks some of small, tiny, full (default all); --no-stream leaves the streams out (a
commit before the named settings has no --latency). Every figure is computed, nothing stored.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("small", "tiny", "full")
RECORDING_SEEDS = (41, 43)
LATENCIES = ("fast", "balanced")


def digest(value) -> str:
    data = value if isinstance(value, (bytes, memoryview)) else json.dumps(value).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def model_path(name: str) -> Path:
    """The model's file (the synthetic ones made on first use; what that says goes to stderr,
    stdout being the digests)."""
    import contextlib
    from harness.bench_e2e import full_model, tiny_model
    with contextlib.redirect_stdout(sys.stderr):
        return {"small": lambda: ROOT / "models" / "phonon-small.gguf", "tiny": tiny_model, "full": full_model}[name]()


def encoder_digests(models) -> dict:
    """{"model/tier/threads": [encoder sha256, frames, tokens sha256]}."""
    from engine.audio import load_audio
    from engine.kernels import Kernels, available_tiers
    from engine.transcribe import Engine
    from harness.bench_e2e import speechlike
    sample = load_audio(Kernels("scalar"), (ROOT / "samples" / "two-commands.wav").read_bytes())
    out = {}
    for name in models:
        path, audio = model_path(name), speechlike(4) if name == "full" else sample
        for tier in available_tiers():
            for threads in (1, 2):
                engine = Engine.open(path, tier, threads)
                enc, frames = engine.encode(audio)
                tokens = [(t.id, t.frame, t.duration) for t in engine.tokens(audio)]
                out[f"{name}/{tier}/{threads}"] = [digest(memoryview(enc).cast("B")), frames, digest(tokens)]
    return out


def stream_digests(folder: Path) -> dict:
    """{"stream/recording/latency": [events sha256, final tokens sha256, events]}."""
    from harness.long_speech import long_speech
    recordings = {"two-commands": (ROOT / "samples" / "two-commands.wav", [])}
    for seed in RECORDING_SEEDS:
        samples, _ = long_speech(1, seed=seed)
        path = folder / f"speech-{seed}.f32"
        samples.astype("<f4").tofile(path)
        recordings[str(seed)] = (path, ["--raw-rate", "16000"])
    out = {}
    for name, (path, extra) in recordings.items():
        for latency in LATENCIES:
            run = subprocess.run([sys.executable, "-m", "engine", "stream", str(path), "--json", "--tier", "scalar",
                                  "--latency", latency, *extra], cwd=ROOT, capture_output=True, text=True, check=True)
            result = json.loads(run.stdout)
            events = [(e["audio_seconds"], e["added_text"], e["tentative"]) for e in result["events"]]
            out[f"stream/{name}/{latency}"] = [digest(events), digest(result["final"]["tokens"]), len(events)]
    return out


def compare(before: dict, after: dict) -> list:
    """The keys both have whose digests differ (and, as differences, keys only one has)."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.behaviour_digest")
    parser.add_argument("--models", default=",".join(MODELS), help="some of small, tiny, full")
    parser.add_argument("--no-stream", action="store_true", help="the encoder and tokens only")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), type=Path, help="two digests' files")
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        differ = compare(before, after)
        print(f"{len(before.keys() & after.keys()) - len([k for k in differ if k in before and k in after])} of "
              f"{len(before.keys() | after.keys())} digests equal" + (f"; differ: {', '.join(differ)}" if differ else ""))
        return 1 if differ else 0
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}: use some of {', '.join(MODELS)}")
    out = encoder_digests(models)
    if not args.no_stream:
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            out.update(stream_digests(Path(folder)))
    print(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
