"""`python3 -m modeltools fetch phonon-2` against a loopback server standing in
for Hugging Face: download, Range resume, pins, conversion into the cache, idempotence, and
the failures (wrong digest or size, 404, a stalled or dropped connection) leaving nothing
half-written behind. The archive is the tiny synthetic model packed the way the release is."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from modeltools.fetch import FetchError, Release, cache_dir, cached_model, fetch
from engine.family import load
from modeltools.synth import write_release_archive
from harness.release_host import ReleaseHost

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "tiny"
ARCHIVE = "phonon-2.bps.tar.zst"


@pytest.fixture(scope="module")
def host_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("release-host")
    write_release_archive(folder / ARCHIVE, DATA / "config.json", DATA / "model.fermion")
    return folder


@pytest.fixture
def host(host_dir):
    with ReleaseHost(host_dir) as server:
        yield server


@pytest.fixture
def rel(host_dir) -> Release:
    data = (host_dir / ARCHIVE).read_bytes()
    return Release(name="phonon-2", repo="FermionResearch/Phonon-2", revision="test", file=ARCHIVE,
                   size=len(data), sha256=hashlib.sha256(data).hexdigest(), base_url="http://unused")


def files_in(cache: Path) -> list:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()) if cache.exists() else []


def quiet(*_):
    pass


def test_fetch_converts_into_the_cache_and_is_idempotent(host, rel, tmp_path):
    lines = []
    gguf = fetch("phonon-2", mirror=host.url, cache=tmp_path, rel=rel, log=lines.append)
    assert gguf == tmp_path / "models" / "phonon-2.gguf"
    assert files_in(tmp_path) == ["downloads/phonon-2.bps.tar.zst", "models/phonon-2.gguf", "models/phonon-2.json"]
    record = json.loads((tmp_path / "models" / "phonon-2.json").read_text())
    assert record["archive_sha256"] == rel.sha256 and record["archive_sha256_pinned"]
    assert record["gguf_bytes"] == gguf.stat().st_size
    assert "bit-identical" in record["verify"]
    model = load(gguf)
    try:
        assert model.name == "phonon-web/synthetic-phonon-2-tiny-seed0"     # config.json's model_id
        assert "CC-BY-4.0" in model.notice
    finally:
        model.close()
    assert any("matches pins.json" in line for line in lines)
    requests = len(host.log)
    again = []
    assert fetch("phonon-2", mirror=host.url, cache=tmp_path, rel=rel, log=again.append) == gguf
    assert len(host.log) == requests and "already in the cache" in again[0]
    assert cached_model("phonon-2", tmp_path, rel.sha256) == gguf
    assert cached_model("phonon-2", tmp_path, "0" * 64) is None          # pinned to another archive


def test_an_interrupted_download_resumes_with_a_range_request(host, rel, tmp_path):
    host.faults.drop_after = rel.size // 2
    with pytest.raises(FetchError, match="run the same command again to resume") as err:
        fetch("phonon-2", mirror=host.url, cache=tmp_path, rel=rel, retries=0, log=quiet)
    assert err.value.resumable
    held = (tmp_path / "downloads" / (ARCHIVE + ".part")).stat().st_size
    assert 0 < held < rel.size
    assert files_in(tmp_path) == ["downloads/phonon-2.bps.tar.zst.part"]
    gguf = fetch("phonon-2", mirror=host.url, cache=tmp_path, rel=rel, log=quiet)
    assert host.log[-1] == (f"/{ARCHIVE}", f"bytes={held}-")
    clean = fetch("phonon-2", mirror=host.url, cache=tmp_path / "clean", rel=rel, log=quiet)
    assert gguf.read_bytes() == clean.read_bytes()


def test_a_dropped_connection_is_retried_by_resuming(host, rel, tmp_path):
    host.faults.drop_after = rel.size // 3
    lines = []
    fetch("phonon-2", mirror=host.url, cache=tmp_path, rel=rel, retries=1, log=lines.append)
    assert len(host.log) == 2 and host.log[0][1] is None            # one drop, one resumed retry
    resumed_at = int(host.log[1][1].removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_at < rel.size and any("retrying (1 of 1)" in line for line in lines)


def test_a_stalled_server_times_out_with_a_clear_message(host, rel, tmp_path):
    host.faults.stall_after, host.faults.stall_seconds = rel.size // 2, 5.0
    start = time.monotonic()
    with pytest.raises(FetchError, match="the download stalled: no data for 0.5 s") as err:
        fetch("phonon-2", mirror=host.url, cache=tmp_path, rel=rel, timeout=0.5, retries=0, log=quiet)
    assert time.monotonic() - start < 4
    assert "bytes are kept: run the same command again to resume" in str(err.value)
    assert files_in(tmp_path) == ["downloads/phonon-2.bps.tar.zst.part"]


def test_a_wrong_digest_is_refused_and_nothing_is_left(host, rel, tmp_path):
    with pytest.raises(FetchError, match="it is not the pinned file and was deleted"):
        fetch("phonon-2", mirror=host.url, cache=tmp_path, rel=replace(rel, sha256="0" * 64), log=quiet)
    assert files_in(tmp_path) == []


def test_a_wrong_size_is_refused_before_the_download_and_nothing_is_left(host, rel, tmp_path):
    with pytest.raises(FetchError, match="pins.json says"):
        fetch("phonon-2", mirror=host.url, cache=tmp_path, rel=replace(rel, size=rel.size + 1), log=quiet)
    assert files_in(tmp_path) == []


def test_a_missing_file_is_a_404_message(host, rel, tmp_path):
    with pytest.raises(FetchError, match=r"not found \(HTTP 404\)"):
        fetch("phonon-2", mirror=host.url + "/elsewhere", cache=tmp_path, rel=rel, log=quiet)
    assert files_in(tmp_path) == []


def test_an_unreachable_host_is_named(rel, tmp_path):
    with pytest.raises(FetchError, match="cannot reach 127.0.0.1:9"):
        fetch("phonon-2", mirror="http://127.0.0.1:9", cache=tmp_path, rel=rel, log=quiet)


def test_a_server_that_ignores_range_starts_over(host, rel, tmp_path):
    part = tmp_path / "downloads" / (ARCHIVE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"garbage that a resume would keep")
    host.faults.ignore_range = True
    fetch("phonon-2", mirror=host.url, cache=tmp_path, rel=rel, log=quiet)
    assert host.log[-1][1] is not None                      # it asked to resume, got the whole file


def test_an_unpinned_digest_is_recorded_and_said_loudly(host, rel, tmp_path):
    lines = []
    fetch("phonon-2", mirror=host.url, cache=tmp_path, rel=replace(rel, sha256=None, size=None), log=lines.append)
    warning = "\n".join(line for line in lines if "WARNING" in line)
    assert "pins no sha256" in warning and rel.sha256 in warning
    record = json.loads((tmp_path / "models" / "phonon-2.json").read_text())
    assert record["archive_sha256"] == rel.sha256 and not record["archive_sha256_pinned"]


def test_a_failed_conversion_leaves_no_model(tmp_path, rel):
    from modeltools.convert import ConversionError
    from modeltools.synth import write_tar_zst
    folder = tmp_path / "host"
    folder.mkdir()
    write_tar_zst(folder / ARCHIVE, [("config.json", (DATA / "config.json").read_bytes()),
                                     ("model.fermion", (DATA / "model.fermion").read_bytes()[:-10])])
    data = (folder / ARCHIVE).read_bytes()
    broken = replace(rel, size=len(data), sha256=hashlib.sha256(data).hexdigest())
    cache = tmp_path / "cache"
    with ReleaseHost(folder) as server, pytest.raises((ConversionError, ValueError)):
        fetch("phonon-2", mirror=server.url, cache=cache, rel=broken, log=quiet)
    assert files_in(cache) == ["downloads/phonon-2.bps.tar.zst"]     # the verified download only
    assert not any(p.name.startswith(".") for p in cache.iterdir())


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PHONON_WEB_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    monkeypatch.delenv("PHONON_WEB_CACHE")
    assert cache_dir() == Path.home() / ".cache" / "phonon-web"


def run_module(module, *args, env=None):
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=300)


def test_cli_fetch_then_transcribe_with_the_fetched_model(host, rel, tmp_path):
    env = {"PHONON_WEB_CACHE": str(tmp_path)}
    missing = run_module("engine", "transcribe", "samples/kitchen-lights.wav", "--model", "phonon-2", env=env)
    assert missing.returncode == 2 and "run `python3 -m modeltools fetch phonon-2`" in missing.stderr
    status = tmp_path / "status.json"
    done = run_module("modeltools", "fetch", "phonon-2", "--from", host.url, "--sha256", rel.sha256, "--bytes", str(rel.size),
                      "--status-json", str(status), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("models/phonon-2.gguf")
    assert "not by pins.json" in done.stderr
    assert json.loads(status.read_text())["ok"]
    text = run_module("engine", "transcribe", "samples/kitchen-lights.wav", "--model", "phonon-2", "--json", env=env)
    assert text.returncode == 0, text.stderr
    assert "tokens" in json.loads(text.stdout)


def test_cli_refuses_the_real_pins_for_a_different_archive_and_says_why(host, tmp_path):
    status = tmp_path / "status.json"
    done = run_module("modeltools", "fetch", "phonon-2", "--from", host.url, "--cache", str(tmp_path / "c"),
                      "--status-json", str(status))
    assert done.returncode == 1
    error = json.loads(status.read_text())["error"]
    assert "pins.json says 163,515,201" in error and error in done.stderr
    assert files_in(tmp_path / "c") == []


def test_cli_argument_misuse(host, tmp_path):
    done = run_module("modeltools", "fetch", "phonon-2", "--sha256", "ab" * 32, "--bytes", "5", "--cache", str(tmp_path))
    assert done.returncode == 1 and "need --from URL" in done.stderr
    done = run_module("modeltools", "fetch", "phonon-2", "--from", host.url, "--sha256", "XY", "--bytes", "5", "--cache", str(tmp_path))
    assert done.returncode == 1 and "64 lowercase hex" in done.stderr


def test_the_runtime_knows_every_model_a_fetch_can_leave():
    """`--model NAME` on the engine's command line finds what `modeltools fetch NAME` leaves:
    the runtime's list of fetched names is the fetcher's."""
    from engine.transcribe import FETCHED_MODELS
    from modeltools.fetch import RELEASE_KEYS
    assert set(FETCHED_MODELS) == set(RELEASE_KEYS)


def test_the_engine_points_to_the_host_tools_it_does_not_run():
    """`python3 -m engine fetch ...` (the runtime has no fetch): exit 2 with the command to run."""
    done = run_module("engine", "fetch", "phonon-2")
    assert done.returncode == 2 and "python3 -m modeltools fetch" in done.stderr, done.stderr
