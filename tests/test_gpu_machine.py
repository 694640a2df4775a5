"""tools/gpu_machine.sh, the one run for a machine with a GPU (docs/webgpu.md "On a real GPU"):
it parses, refuses a wrong step, and the wheels it carries are all there is to install: each
one's own needs are carried too or among what the GPU machine is assumed to hold."""

import re
import subprocess
from importlib import metadata
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "gpu_machine.sh"
ASSUMED_THERE = {"numpy", "pyyaml", "requests", "tqdm", "filelock"}     # the script's header says so


def test_the_script_parses_and_refuses_a_wrong_step():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    done = subprocess.run(["bash", str(SCRIPT), "nope"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage: bash tools/gpu_machine.sh prepare|run" in done.stderr


def test_the_carried_wheels_bring_their_needs():
    carried = set(re.search(r"^WHEELS=\((.*)\)$", SCRIPT.read_text(), re.M).group(1).split())
    assert {"wgpu", "gguf"} <= carried
    for name in carried:
        for requirement in metadata.requires(name) or []:
            if "extra ==" in requirement or "sys_platform" in requirement or "platform_system" in requirement:
                continue                             # optional, or for another system (macOS, Windows)
            need = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("_", "-")
            assert need in carried | ASSUMED_THERE, f"{name} needs {need}: neither carried nor assumed there"
