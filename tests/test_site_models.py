"""Models from elsewhere in the web app, in headless Chromium:
- `build.py site --model-url URL --model-sha256 HEX --model-bytes N`: the page downloads the
  model from a second loopback origin with CORS, checks it, caches it under its digest and
  works offline on the second visit with the model's host gone; a wrong digest is refused and
  nothing is cached; a host without CORS gets a message that says so;
- "Use a model file…": a .gguf the user opens is validated by the engine's loader; a valid one
  switches the model (the page names it; a file transcribes with it; the next visit opens it
  again; "Use this site's model" goes back); a truncated one gives the loader's error and the
  previous model keeps working."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

import pytest

import build
from conftest import build_artifact
from harness.runtimes import POLL_MS
from harness.server import StaticServer

ROOT = Path(__file__).resolve().parent.parent
SUB = "/app/"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def tiny_gguf() -> Path:
    return build.tiny_model()


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> Path:
    from harness.site_check import speech_wav
    path = tmp_path_factory.mktemp("speech") / "speech.wav"
    speech_wav(path)
    return path


@pytest.fixture(scope="module")
def browser():
    from harness.site_check import SiteBrowser
    with SiteBrowser() as b:
        yield b


def site_args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"model": None, "out": None, "model_url": None, "model_sha256": None,
                                 "model_bytes": None, "model_name": None, **kw})


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_model_url_arguments_are_checked():
    good = dict(model_url="https://models.example/x.gguf", model_sha256="ab" * 32, model_bytes=10)
    entry = build.remote_model(site_args(**good))
    assert entry["url"] == good["model_url"] and entry["name"] == "x" and entry["size"] == 10
    for bad, message in ((dict(good, model_sha256=None), "go together"),
                         (dict(good, model_url="ftp://x/y"), "absolute http"),
                         (dict(good, model_url="models/x.gguf"), "absolute http"),
                         (dict(good, model_sha256="AB" * 32), "64 lowercase hex"),
                         (dict(good, model_bytes=0), "positive size"),
                         (dict(good, model="m.gguf"), "exclude each other")):
        with pytest.raises(SystemExit, match=message):
            build.remote_model(site_args(**bad))
    assert build.remote_model(site_args()) is None


@pytest.fixture(scope="module")
def model_host(tiny_gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("model-host")
    shutil.copy(tiny_gguf, folder / "tiny.gguf")
    with StaticServer({"/m/": folder}, cors=True) as host:
        yield host, folder


def remote_site(tmp_path_factory, url: str, digest: str, size: int) -> Path:
    out = tmp_path_factory.mktemp("remote-site") / "site"
    return build.cmd_site(site_args(out=str(out), model_url=url, model_sha256=digest, model_bytes=size,
                                    model_name="tiny from elsewhere"))


def cached_keys(app) -> list:
    return app.page.evaluate("caches.open('phonon-web-model').then(c => c.keys()).then(k => k.map(r => r.url))")


def test_a_model_on_another_origin_is_fetched_checked_cached_and_works_offline(
        browser, model_host, tiny_gguf, speech, tmp_path_factory):
    from harness.site_check import native_transcribe
    host, folder = model_host
    url = host.url + "/m/tiny.gguf"
    site = remote_site(tmp_path_factory, url, sha(tiny_gguf), tiny_gguf.stat().st_size)
    manifest = json.loads((site / "manifest.json").read_text())
    assert manifest["model"]["url"] == url and "path" not in manifest["model"]
    assert not (site / "models").exists()
    with StaticServer({SUB: site}) as server:
        context = browser.context()
        app = browser.open(server.url + SUB + "?debug=1", context)
        assert app.state == "ready", app.alert()
        assert app.phonon("window.phonon.ready.modelSource") == "network"
        assert host.log.count("/m/tiny.gguf") == 1
        assert "tiny from elsewhere" in app.page.inner_text("#model-name")
        native = native_transcribe(tiny_gguf, speech)
        result = app.transcribe_file(speech)
        assert (result["text"], result["tokens"]) == (native["text"], native["tokens"])
        assert [k.rsplit("/", 1)[-1] for k in cached_keys(app)] == [sha(tiny_gguf)]
        host.log.clear()
        assert app.reload() == "ready", app.alert()                     # the second visit
        assert app.phonon("window.phonon.ready.modelSource") == "cache" and not host.log
        context.set_offline(True)
        try:
            assert app.reload() == "ready", app.alert()
            assert app.transcribe_file(speech)["tokens"] == native["tokens"]
        finally:
            context.set_offline(False)
        context.close()


def test_a_wrong_digest_from_another_origin_is_refused(browser, model_host, tiny_gguf, tmp_path_factory):
    host, _ = model_host
    site = remote_site(tmp_path_factory, host.url + "/m/tiny.gguf", "0" * 64, tiny_gguf.stat().st_size)
    with StaticServer({SUB: site}) as server:
        app = browser.open(server.url + SUB)
        assert app.state == "error"
        assert "integrity check (sha256)" in app.alert()
        assert cached_keys(app) == []


def test_a_host_without_cors_is_named(browser, tiny_gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("no-cors")
    shutil.copy(tiny_gguf, folder / "tiny.gguf")
    with StaticServer({"/m/": folder}) as host:
        site = remote_site(tmp_path_factory, host.url + "/m/tiny.gguf", sha(tiny_gguf), tiny_gguf.stat().st_size)
        with StaticServer({SUB: site}) as server:
            app = browser.open(server.url + SUB)
            assert app.state == "error"
            assert "Access-Control-Allow-Origin" in app.alert()


def test_a_model_file_switches_the_model_and_a_bad_one_changes_nothing(browser, tiny_gguf, speech, tmp_path):
    from harness.site_check import native_transcribe
    site = build_artifact("PHONON_SITE")
    manifest = json.loads((site / "manifest.json").read_text())
    shipped = site / manifest["model"]["path"]
    with StaticServer({SUB: site}) as server:
        context = browser.context()
        app = browser.open(server.url + SUB + "?debug=1", context)
        assert app.state == "ready", app.alert()
        assert app.page.evaluate("document.getElementById('model-open').disabled") is False
        # a truncated file: the loader's message, and the site's model is still the one in use
        truncated = tmp_path / "half.gguf"
        truncated.write_bytes(tiny_gguf.read_bytes()[: tiny_gguf.stat().st_size // 2])
        app.page.set_input_files("#model-file", str(truncated))
        app.page.wait_for_function("!document.getElementById('alert').hidden", polling=POLL_MS)
        message = app.alert()
        assert "half.gguf is not a model this engine can use" in message and "previous model is still in use" in message
        assert app.state == "ready"
        shipped_native = native_transcribe(shipped, speech)
        assert app.transcribe_file(speech)["tokens"] == shipped_native["tokens"]
        # the tiny model: switched, named, used, cached under its digest
        app.page.set_input_files("#model-file", str(tiny_gguf))
        app.page.wait_for_function("document.getElementById('alert-text').textContent.startsWith('Now using')", polling=POLL_MS)
        assert "tiny.gguf" in app.page.inner_text("#model-name")
        assert "Licence:" in app.page.inner_text("#model-description")
        native = native_transcribe(tiny_gguf, speech)
        assert app.transcribe_file(speech)["tokens"] == native["tokens"] != shipped_native["tokens"]
        assert any(k.endswith("/local/" + sha(tiny_gguf)) for k in cached_keys(app))
        # the next visit opens it again; "Use this site's model" goes back
        assert app.reload() == "ready", app.alert()
        assert app.phonon("window.phonon.ready.modelSource") == "local-cache"
        assert app.transcribe_file(speech)["tokens"] == native["tokens"]
        with app.page.expect_navigation():
            app.page.click("#model-reset")
        assert app.wait(("ready",)) == "ready", app.alert()
        assert app.phonon("window.phonon.ready.modelSource") == "cache"
        assert app.transcribe_file(speech)["tokens"] == shipped_native["tokens"]
        assert not [p for p in app.problems if "sw.js" not in p], app.problems
        context.close()
