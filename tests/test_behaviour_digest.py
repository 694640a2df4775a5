"""tools/behaviour_digest.py, the digests a refactor is held to: on the tiny model, every native
tier and thread count gives one encoder digest and one token digest (the bits do not depend on
how the work is split or vectorised), and --compare names a digest that differs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_tier_and_thread_count_digests_alike_and_compare_names_a_difference(tmp_path):
    run = subprocess.run([sys.executable, "-m", "tools.behaviour_digest", "--models", "tiny", "--no-stream"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    digests = json.loads(run.stdout)
    assert {k.split("/")[2] for k in digests} == {"1", "2"} and "tiny/scalar/1" in digests
    assert len({json.dumps(v) for v in digests.values()}) == 1, digests
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(digests))
    changed = dict(digests, **{"tiny/scalar/2": ["0" * 16, *digests["tiny/scalar/2"][1:]]})
    after.write_text(json.dumps(changed))
    same = subprocess.run([sys.executable, "-m", "tools.behaviour_digest", "--compare", str(before), str(before)],
                          cwd=ROOT, capture_output=True, text=True)
    differ = subprocess.run([sys.executable, "-m", "tools.behaviour_digest", "--compare", str(before), str(after)],
                            cwd=ROOT, capture_output=True, text=True)
    assert same.returncode == 0 and f"{len(digests)} of {len(digests)} digests equal" in same.stdout
    assert differ.returncode == 1 and "differ: tiny/scalar/2" in differ.stdout
