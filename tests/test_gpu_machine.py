"""tools/gpu_machine.sh, the one run for a machine with a GPU (docs/webgpu.md "On a real GPU"):
it parses, refuses a wrong step, and the wheels it carries are the versions this checkout's
tests run with (a version that drifts would carry an API the engine was not tested against)."""

import re
import subprocess
from importlib import metadata
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "gpu_machine.sh"


def test_the_script_parses_and_refuses_a_wrong_step():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    done = subprocess.run(["bash", str(SCRIPT), "nope"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage: bash tools/gpu_machine.sh prepare|run" in done.stderr


def test_carried_wheels_match_the_installed_versions():
    wheels = re.search(r"^WHEELS=\((.*)\)$", SCRIPT.read_text(), re.M).group(1).split()
    pinned = dict(w.split("==") for w in wheels)
    assert {"wgpu", "gguf", "cffi"} <= set(pinned)
    for name, version in pinned.items():
        assert metadata.version(name) == version, f"{name}: carried {version}, installed {metadata.version(name)}"
