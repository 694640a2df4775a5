"""Command line: python3 -m engine <command>.

The runtime's commands; they use engine/ alone. The host tools (convert, fetch, synth) are
python3 -m modeltools, the kernel sweep python3 -m checks.parity: they sit above the runtime.

    tiers                                         kernel tiers (instruction sets) this machine can run
    backends                                      the backends that can run the encoder, best first
    transcribe FILE [--model M.gguf] [--json] [--tier T] [--backend B] [--threads N] [--raw-rate HZ] [--float-acts]
                                                  WAV (any rate/channels) or raw float32 -> text
    stream FILE [--model M.gguf] [--json] [--chunk-ms 20] [--realtime] [--tier T] [--backend B] [--threads N] [--raw-rate HZ]
           [--right-context-ms N] [--hop-ms N] [--max-window-ms N]
                                                  feed FILE as a microphone would: partial and
                                                  committed text as they change, then the final
"""

from __future__ import annotations

import argparse
import json
import os
import sys


# Commands of the tools above the runtime: named, so that asking the engine for one says where it is.
ELSEWHERE = {"convert": "python3 -m modeltools convert", "fetch": "python3 -m modeltools fetch",
             "synth": "python3 -m modeltools synth", "parity": "python3 -m checks.parity"}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ELSEWHERE:
        print(f"error: {argv[0]} is a host tool, not the runtime's: run `{ELSEWHERE[argv[0]]} ...` "
              f"(with the same arguments)", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="python3 -m engine")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("tiers", help="list the kernel tiers (instruction sets) this machine can run")
    sub.add_parser("backends", help="list the backends that can run the encoder, best first")
    from .executors.registry import registered
    # What a command line can offer a backend: threads (no kernel pool, no GPU device here).
    native = ["auto"] + [b.name for b in registered() if set(b.needs) <= {"threads"}]
    tr = sub.add_parser("transcribe", help="transcribe a WAV file (or raw float32 samples)")
    tr.add_argument("file")
    tr.add_argument("--model", default=None, help="a model GGUF or phonon-2 (fetched: python3 -m modeltools fetch) (default: the bundled models/phonon-small.gguf)")
    tr.add_argument("--json", action="store_true", help="print text, words, tokens and timing as JSON")
    tr.add_argument("--tier", default="auto", help="the kernels' instruction set (default: the best this CPU runs)")
    tr.add_argument("--backend", choices=native, default="auto", help="what runs the encoder (default: the best available)")
    tr.add_argument("--threads", type=int, default=None, help="encoder threads (default: all cores; any count gives the same bits)")
    tr.add_argument("--raw-rate", type=int, help="FILE is raw little-endian float32 mono at this rate")
    tr.add_argument("--float-acts", action="store_true", help="float32 activations in the linears (debug)")
    st = sub.add_parser("stream", help="stream a WAV file through a live session")
    st.add_argument("file")
    st.add_argument("--model", default=None, help="a model GGUF or phonon-2 (fetched: python3 -m modeltools fetch) (default: the bundled models/phonon-small.gguf)")
    st.add_argument("--json", action="store_true", help="print events, final transcript and metrics as JSON")
    st.add_argument("--chunk-ms", type=float, default=20.0, help="feed size (default 20 ms)")
    st.add_argument("--realtime", action="store_true", help="feed no faster than the audio plays")
    st.add_argument("--tier", default="auto", help="the kernels' instruction set (default: the best this CPU runs)")
    st.add_argument("--backend", choices=native, default="auto", help="what runs the encoder (default: the best available)")
    st.add_argument("--threads", type=int, default=None, help="encoder threads (default: all cores; any count gives the same bits)")
    st.add_argument("--raw-rate", type=int, help="FILE is raw little-endian float32 mono at this rate")
    from .stream.session import StreamConfig
    from .transcribe import FETCHED_MODELS, cache_dir, cached_model
    from .stream.session import LATENCY
    st.add_argument("--latency", choices=list(LATENCY), default="fast",
                    help="a named setting: the gaps between decodes and rule 9 (docs/streaming.md; default fast)")
    st.add_argument("--pace", choices=["exact", "live"], default="exact",
                    help="live: a feed that falls behind decodes at the newest audio (default exact)")
    st.add_argument("--replay", default=None, metavar="JUMPS",
                    help="a live stream's result jumps as JSON ([[exact, used], ...]): decode where it decoded")
    for name in STREAM_TUNABLES:
        default = getattr(StreamConfig, name)
        st.add_argument("--" + name.replace("_", "-"), type=int, default=None, help=f"over the setting (default {default})")
    args = parser.parse_args(argv)
    if args.command in ("transcribe", "stream") and args.model is None:
        args.model = str(default_model())
    if args.command in ("transcribe", "stream") and args.model in FETCHED_MODELS:
        cached = cached_model(args.model)
        if cached is None:
            print(f"error: {args.model} is not in the cache ({cache_dir()}): "
                  f"run `python3 -m modeltools fetch {args.model}`", file=sys.stderr)
            return 2
        args.model = str(cached)
    if args.command == "transcribe":
        return transcribe_command(args)
    if args.command == "stream":
        return stream_command(args)
    if args.command == "backends":
        for b in registered():
            print(f"{b.name:<18} {b.summary}" + ("  (by name only)" if b.by_name_only else ""))
        return 0
    from . import kernels
    print(" ".join(kernels.available_tiers()))
    return 0


def default_model():
    """The bundled trained model (models/phonon-small.gguf beside engine/ in a checkout)."""
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "models" / "phonon-small.gguf"
    if not path.exists():
        print(f"no --model given and the bundled model {path} is missing", file=sys.stderr)
        raise SystemExit(2)
    return path


def transcribe_command(args) -> int:
    from pathlib import Path
    from .audio import load_audio
    from .transcribe import Engine
    try:
        # --float-acts: the graph check's executor (float32 linears, one thread)
        engine = Engine.open(args.model, args.tier, None if args.float_acts else args.threads,
                             float_activations=args.float_acts, backend=args.backend)
        if args.raw_rate is None:
            result = transcribe_wav_file(engine, Path(args.file))
        else:
            samples = load_audio(engine.k, Path(args.file).read_bytes(), args.raw_rate)
            result = engine.transcribe(samples)
    except (OSError, ValueError) as e:          # bad audio, model file, kernel call or backend: ValueErrors
        print(f"transcribe: error: {e}", file=sys.stderr)
        return 1
    if not print_json(result, args.json):
        print(result["text"])
    return 0


def transcribe_wav_file(engine, path) -> dict:
    """A WAV file of any length, read a few seconds at a time and transcribed in windows cut at
    pauses (engine/longform.py): memory stays flat. Progress on stderr when it takes windows."""
    from .audio import wav_pieces
    from .longform import transcribe_pieces

    with open(path, "rb") as f:
        _, seconds, pieces = wav_pieces(engine.k, f)

        def progress(index, start, end, text):
            print(f"transcribe: {end:8.1f} / {seconds:.1f} s ({100 * end / max(seconds, 1e-9):3.0f}%)",
                  file=sys.stderr, flush=True)
        return transcribe_pieces(engine, pieces, on_window=progress if seconds > 30 else None)


STREAM_TUNABLES = ("right_context_ms", "agree_context_ms", "hop_ms", "interval_ms", "confirm_ms", "max_interval_ms",
                   "max_window_ms", "min_pause_ms", "final_pause_ms")


def stream_command(args) -> int:
    from pathlib import Path
    from .audio import load_pcm
    from .stream.session import StreamError, stream_samples
    from .transcribe import Engine
    try:
        engine = Engine.open(args.model, args.tier, args.threads, backend=args.backend)
        samples, rate = load_pcm(engine.k, Path(args.file).read_bytes(), args.raw_rate)
        tuned = {name: getattr(args, name) for name in STREAM_TUNABLES if getattr(args, name) is not None}
        try:
            replay = json.loads(args.replay) if args.replay else None
        except ValueError:
            raise StreamError(f"--replay: expected a stream result's jumps as JSON, [[exact, used], ...], "
                              f"got {args.replay[:40]!r}") from None
        session = engine.stream(rate, args.latency, replay, pace=args.pace, **tuned)
        chunk = max(1, round(args.chunk_ms * rate / 1000))

        def show(event):                 # the text just committed | the tentative tail
            print(f"[{event['audio_seconds']:7.2f} s] {event['added_text'].strip()} | {event['tentative']}", flush=True)
        out = stream_samples(session, samples, chunk, args.realtime, None if args.json else show)
    except (OSError, ValueError) as e:          # ... and StreamError: ValueErrors all
        print(f"stream: error: {e}", file=sys.stderr)
        return 1
    if not print_json(out, args.json):
        m = out["metrics"]
        print(f"final: {out['final']['text']}")
        print(f"{m['decodes']} decodes ({m['skipped_quiet']} skipped as quiet), compute {m['compute_seconds']} s "
              f"= {m['compute_per_audio']} x audio, commit lag p50 {m['commit_lag_p50_seconds']} s "
              f"p95 {m['commit_lag_p95_seconds']} s", file=sys.stderr)
    return 0


def print_json(value, wanted: bool) -> bool:
    """`value` as JSON on stdout if `wanted` (--json); whether it was printed."""
    if wanted:
        json.dump(value, sys.stdout, ensure_ascii=False, indent=1)
        print()
    return wanted


def run_cli() -> int:
    """main(), quiet when the reader of stdout goes away (`... --json | head`): a closed pipe
    is the reader's choice, not an error worth a traceback."""
    try:
        return main()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no second error at exit
        return 141                                                        # 128 + SIGPIPE, as a shell reports it


if __name__ == "__main__":
    sys.exit(run_cli())
