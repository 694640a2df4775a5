"""Every command output shown in README.md is what the command prints: each indented
`$ .venv/bin/python -m engine ...` line followed by output is run here and its output compared
line by line, exactly except for the figures that vary by machine and run (compute seconds,
RTFx, the kernel tier). A `--json` example is shown abridged: the first words and tokens, then
"..."; the same abridgement of the real output is compared."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VARYING = [(re.compile(r"compute [\d.]+ s = [\d.]+ x audio"), "compute * s = * x audio"),
           (re.compile(r'"compute_seconds": [\d.]+'), '"compute_seconds": *'),
           (re.compile(r'"rtfx": [\d.]+'), '"rtfx": *'),
           (re.compile(r'"tier": "\w+"'), '"tier": *')]


def examples() -> list:
    """(command, shown output lines) for every README command shown with its output."""
    out, current = [], None
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("    $ "):
            current = (line[6:].split("    #")[0].strip(), [])
            out.append(current)
        elif current and line.startswith("    ") and line.strip():
            current[1].append(line[4:])
        else:
            current = None
    return [(cmd, shown) for cmd, shown in out if shown]


def masked(lines: list) -> list:
    result = []
    for line in lines:
        for pattern, replacement in VARYING:
            line = pattern.sub(replacement, line)
        result.append(line.rstrip())
    return result


def abridged(result: dict) -> list:
    """The README's shape of `transcribe --json`: text, two words, one token, four timing keys."""
    timing = {k: result["timing"][k] for k in ("audio_seconds", "compute_seconds", "rtfx", "tier")}
    return ['{"text": ' + json.dumps(result["text"]) + ",",
            ' "words": [' + ", ".join(json.dumps(w) for w in result["words"][:2]) + ", ...],",
            ' "tokens": [' + json.dumps(result["tokens"][0]) + ", ...],",
            ' "timing": ' + json.dumps(timing)[:-1] + ", ...}}"]


def run(command: str) -> list:
    assert command.startswith(".venv/bin/python -m engine "), command
    args = command.split()[1:]
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert proc.returncode == 0, proc.stderr
    if "--json" in args:
        return abridged(json.loads(proc.stdout))
    return proc.stdout.splitlines() + proc.stderr.splitlines()


def test_the_readme_shows_outputs():
    commands = [cmd for cmd, _ in examples()]
    assert any(" stream " in c for c in commands) and any("--json" in c for c in commands), commands


@pytest.mark.parametrize("command,shown", examples(), ids=[cmd.split(" -m ")[1] for cmd, _ in examples()])
def test_a_readme_example_prints_what_the_readme_shows(command, shown):
    assert masked(run(command)) == masked(shown)


def test_a_changed_output_fails_the_comparison():
    command, shown = next((c, s) for c, s in examples() if " stream " in c)
    changed = [line.replace("some pop", "some rock") for line in shown]
    assert masked(run(command)) != masked(changed)


def test_no_reference_points_outside_the_repository():
    """A clone is all a user has: no file cites the team's folder beside the checkout."""
    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.mjs", "*.c", "*.h", "*.j2", "*.json", "*.ts"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert len(files) > 100
    marker = "shared" + "/"                     # spelt in two so this file does not cite it
    citing = [f for f in files if marker in (ROOT / f).read_text(errors="replace")]
    assert citing == [], citing


def test_the_model_card_is_what_its_results_give(tmp_path):
    """models/MODEL_CARD.md is generated from models/phonon-small.json (training.release's card):
    regenerated, it is the shipped card; a figure edited in the results by hand changes it."""
    import json
    from training.release import rewrite_card
    results = json.loads((ROOT / "models" / "phonon-small.json").read_text())
    tune = ROOT / "docs" / "runs" / "small-v18a" / "config.json"
    rewrite_card(tmp_path, results, tune)
    assert (tmp_path / "MODEL_CARD.md").read_text() == (ROOT / "models" / "MODEL_CARD.md").read_text()
    results["untouched_test"]["wer"]["clean"] += 0.01
    rewrite_card(tmp_path, results, tune)
    assert (tmp_path / "MODEL_CARD.md").read_text() != (ROOT / "models" / "MODEL_CARD.md").read_text()


def test_generated_tables_are_what_their_results_give(tmp_path):
    """`python3 build.py docs --check` passes on the tree; a result edited by hand (or a table
    edited by hand) makes it fail, naming the part."""
    import shutil
    from harness.documents import render_documents
    from harness.results import RESULTS
    proc = subprocess.run([sys.executable, "build.py", "docs", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import re
    marked = [doc for doc in (ROOT / "BENCHMARKS.md", ROOT / "README.md", ROOT / "tests" / "README.md")
              if re.search(r"^<!-- generated: [\w-]+ -->$", doc.read_text(), re.M)]
    assert len(marked) >= 2 and render_documents(check=True) == []
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    record = json.loads((results / "behind.json").read_text())
    record["figures"]["rows"][1]["max_pending_seconds"] = 3.0              # a figure edited by hand
    (results / "behind.json").write_text(json.dumps(record))
    assert render_documents(check=True, folder=results) == [(ROOT / "BENCHMARKS.md", "behind")]
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text((ROOT / "BENCHMARKS.md").read_text().replace("| yes (", "| NO (", 1))   # a table edited by hand
    assert render_documents(check=True, documents=[doc]) == [(doc, "behind")]
    render_documents(documents=[doc])                                       # rewriting restores it
    assert doc.read_text() == (ROOT / "BENCHMARKS.md").read_text()


def test_the_bundled_models_notice_is_its_own():
    """The page and the API show the loaded model's parakeet.notice: the bundled model's says
    what NOTICE says of it (trained here, no third-party weights), not Phonon-2's."""
    from engine.family import load
    from training.release import SMALL_MODEL_NOTICE
    model = load(ROOT / "models" / "phonon-small.gguf")
    try:
        notice = model.notice
    finally:
        model.close()
    assert notice == SMALL_MODEL_NOTICE and "no third-party weights" in notice
    assert "NVIDIA" not in notice and "CHiME" not in notice
    assert "contains no third-party weights" in " ".join((ROOT / "NOTICE").read_text().split())


def test_architecture_is_short_and_names_every_runtime_module():
    """ARCHITECTURE.md is read first: under 1,000 words of prose (its pictures, drawn from the
    code by tools/architecture.py, aside), and every engine module (the runtime a newcomer must
    find) is named in it, so a new module cannot go unmapped."""
    from tools.architecture import BEGIN, END
    text = (ROOT / "ARCHITECTURE.md").read_text()
    prose = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), "", text, flags=re.S)
    assert BEGIN in text and len(prose.split()) < 1000
    for path in sorted((ROOT / "engine").rglob("*.py")):
        name = path.relative_to(ROOT / "engine").as_posix()
        if name.endswith("__init__.py") or name == "__main__.py":
            continue
        assert name.rsplit("/", 1)[-1] in text, name
