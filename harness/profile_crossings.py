"""Where the default model's time goes, by C entry point, natively and in Chromium:
every ctypes call of one engine counted and timed from Python (so each
includes its crossing), on samples/two-commands.wav, the last of three runs.

    .venv/bin/python -m harness.profile_crossings [--model models/phonon-small.gguf] [--top 12]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    from checks.jobs import profile_crossings
    from engine.audio import load_audio
    from engine.kernels import Kernels
    from harness.bench_threads import cpu_name
    from harness.runtimes import Chromium, inline
    parser = argparse.ArgumentParser(prog="python3 -m harness.profile_crossings")
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "phonon-small.gguf")
    parser.add_argument("--wav", type=Path, default=ROOT / "samples" / "two-commands.wav")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--composed", action="store_true")
    args = parser.parse_args(argv)
    audio = load_audio(Kernels("scalar"), args.wav.read_bytes())
    model, clip = inline(args.model.read_bytes()), inline(audio.tobytes())
    out = {"native": asyncio.run(profile_crossings(model, clip, "auto", composed=args.composed))}
    with Chromium(isolate=True) as browser:     # isolated: performance.now() to 5 us, not 100 us
        out["chromium"] = browser.run_job("profile_crossings", model=model, audio=clip, tier="wasm_relaxed_simd", composed=args.composed)
        out["chromium_version"] = browser.version()
    print(f"CPU: {cpu_name()}; Chromium {out['chromium_version']}; {args.model.name}, {args.wav.name}")
    for where in ("native", "chromium"):
        r = out[where]
        calls = sum(c for c, _ in r["calls"].values())
        inside = sum(s for _, s in r["calls"].values())
        print(f"\n{where} [{r['tier']}]: {r['total_seconds'] * 1000:.1f} ms for {r['audio_seconds']} s "
              f"(RTFx {r['audio_seconds'] / r['total_seconds']:.0f}); {calls} C calls, {inside * 1000:.1f} ms inside them, "
              f"{(r['total_seconds'] - inside) * 1000:.1f} ms of Python between them")
        for name, (count, seconds) in list(r["calls"].items())[:args.top]:
            print(f"  {name:28s} {count:6d} calls {seconds * 1000:8.2f} ms  {seconds / count * 1e6:8.1f} us/call")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
