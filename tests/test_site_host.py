"""The site on a real static host: Debian's nginx serving dist/site from a sub-path
with README's settings (MIME types, precompressed files, the isolation headers; harness/nginx.py).
In Chromium the page is ready with kernel workers, sends fewer bytes than the files' sizes (the
figures are printed), transcribes a file with the native tokens, and the second visit works
offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import build_artifact

ROOT = Path(__file__).resolve().parent.parent
WAV = ROOT / "samples" / "two-commands.wav"

pytestmark = pytest.mark.browser


def test_the_site_on_nginx_from_a_sub_path(capsys):
    from harness.nginx import Nginx
    from harness.site_check import SiteBrowser, native_transcribe
    site = build_artifact("PHONON_SITE")
    manifest = json.loads((site / "manifest.json").read_text())
    with Nginx(site, "/apps/phonon/") as host, SiteBrowser() as browser:
        context = browser.context()
        app = browser.open(host.url + "?debug=1&threads=2", context=context)
        assert app.state == "ready", app.alert()
        assert app.page.evaluate("crossOriginIsolated")                 # the host's headers, no reload
        assert app.phonon("window.phonon.ready.threads") == 2, app.phonon("window.phonon.threadsNote")
        served = host.served()
        assert all(status in (200, 304) for status, _, _ in served), served
        sent = sum(n for _, n, _ in served)
        files = {f"/apps/phonon/{rel}": entry["size"] for rel, entry in manifest["files"].items()}
        files["/apps/phonon/"] = manifest["files"]["index.html"]["size"]
        plain = sum(files.get(path, n) for _, n, path in served)
        with capsys.disabled():
            print(f"\nnginx, first visit: {len(served)} requests, {sent / 1e6:.1f} MB sent "
                  f"({plain / 1e6:.1f} MB uncompressed)")
        assert sent < 0.6 * plain and sent < 12e6
        # the big files went as their brotli copies (the zips' copies have their entries stored)
        copies = {(entry["of"], entry["encoding"]): entry["size"] for entry in manifest["compressed"].values()}
        sent_for = {path: n for status, n, path in served if status == 200}
        for rel in ("pyodide/pyodide.asm.wasm", "pyodide/python_stdlib.zip", manifest["wheel"]):
            assert sent_for[f"/apps/phonon/{rel}"] == copies[(rel, "br")], (rel, sent_for)
        result = app.transcribe_file(WAV)
        assert result["tokens"] == native_transcribe(site / manifest["model"]["path"], WAV)["tokens"]
        context.set_offline(True)                                       # the second visit, offline
        assert app.reload() == "ready", app.alert()
        assert app.transcribe_file(WAV)["text"] == result["text"]
