"""`python3 build.py demo` picks its model: with the network cut it serves the
bundled model and says why, in the terminal and on the page; after `build.py fetch phonon-2
--from URL` (a loopback server standing in for the release host) `build.py demo --model
phonon-2` serves the converted model and the page names it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from modeltools.synth import write_release_archive
from harness.release_host import ReleaseHost
from harness.site_check import SiteBrowser

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "tiny"
UNREACHABLE = "http://127.0.0.1:9"          # nothing listens there: the fetch fails at once


@contextlib.contextmanager
def ctrl_c_handled():
    """SIGINT handled (not ignored) in this process while a child starts, so the child's Python
    turns Ctrl-C into KeyboardInterrupt as at a terminal. A shell's background job (`cmd &`
    without job control, as CI scripts and nohup run things) ignores SIGINT, an ignored signal
    stays ignored across fork and exec, and a Python started so installs no SIGINT handler: the
    demo would never see stop()'s Ctrl-C. A handled signal is reset to the default at exec."""
    try:
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:              # not the main thread: leave it as it is
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Demo:
    """`build.py demo ...` in the background until the test ends; `.url` once it serves."""

    def __init__(self, *args, env: dict):
        with ctrl_c_handled():
            self.process = subprocess.Popen([sys.executable, "build.py", "demo", *args], cwd=ROOT,
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                            env=dict(os.environ, **env), start_new_session=True)
        self.output = []
        for line in self.process.stdout:
            self.output.append(line)
            if "phonon-web is served at " in line:
                self.url = line.split("served at ")[1].split()[0].rstrip("/")
                return
        raise AssertionError("the demo stopped before serving:\n" + "".join(self.output[-30:]))

    def manifest(self) -> dict:
        with urllib.request.urlopen(self.url + "/manifest.json", timeout=10) as r:
            return json.loads(r.read())

    def stop(self):
        """Ctrl-C, as a user stops it; killed (and the test failed) if it does not stop."""
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise AssertionError("build.py demo did not stop within 30 s of Ctrl-C") from None


def page_text(url: str) -> str:
    with SiteBrowser() as browser:
        app = browser.open(url + "/")
        assert app.state == "ready", app.alert()
        return app.page.inner_text("body")


def test_demo_without_the_network_serves_the_bundled_model_and_says_why(tmp_path):
    demo = Demo("--from", UNREACHABLE, "--out", str(tmp_path / "site"),
                env={"PHONON_WEB_CACHE": str(tmp_path / "cache")})
    try:
        terminal = "".join(demo.output)
        assert "could not be downloaded (cannot reach 127.0.0.1:9" in terminal
        assert "python3 build.py fetch phonon-2" in terminal
        model = demo.manifest()["model"]
        assert model["path"] == "models/phonon-small.gguf"
        assert "could not be downloaded" in model["note"]
        text = page_text(demo.url)
        assert "could not be downloaded" in text and "python3 build.py fetch phonon-2" in text
    finally:
        demo.stop()


@pytest.fixture
def release_host(tmp_path):
    folder = tmp_path / "host"
    folder.mkdir()
    write_release_archive(folder / "phonon-2.bps.tar.zst", DATA / "config.json", DATA / "model.fermion")
    with ReleaseHost(folder) as host:
        yield host, folder / "phonon-2.bps.tar.zst"


def test_fetch_then_demo_serves_the_converted_model(tmp_path, release_host):
    host, archive = release_host
    env = {"PHONON_WEB_CACHE": str(tmp_path / "cache")}
    data = archive.read_bytes()
    fetched = subprocess.run([sys.executable, "build.py", "fetch", "phonon-2", "--from", host.url,
                              "--sha256", hashlib.sha256(data).hexdigest(), "--bytes", str(len(data))],
                             cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, **env), timeout=600)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    gguf = tmp_path / "cache" / "models" / "phonon-2.gguf"
    assert gguf.exists()
    demo = Demo("--model", "phonon-2", "--out", str(tmp_path / "site"), env=env)
    try:
        model = demo.manifest()["model"]
        assert model["path"] == "models/phonon-2.gguf" and model["size"] == gguf.stat().st_size
        assert "Phonon-2" in model["description"] and not model.get("note")
        assert "Phonon-2" in page_text(demo.url)
    finally:
        demo.stop()


def test_demo_model_phonon2_that_cannot_be_fetched_is_an_error(tmp_path):
    done = subprocess.run([sys.executable, "build.py", "demo", "--model", "phonon-2", "--from", UNREACHABLE,
                           "--out", str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PHONON_WEB_CACHE=str(tmp_path / "cache")), timeout=600)
    assert done.returncode != 0
    assert "--model phonon-2: it is not cached and could not be fetched: cannot reach 127.0.0.1:9" in done.stderr
