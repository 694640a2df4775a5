"""phonon-web in a web developer's Vite app and webpack app (issue 40), built by README's recipe:
the package installed from its `npm pack` tarball (the API bundled from node_modules), its folder
served as static assets beside the bundle (Vite: copied to public/phonon-web/; webpack:
copy-webpack-plugin), `base` naming it. In a production build (served statically) and under the
bundler's dev server, a WAV through the API gives the native tokens; without the runtime files
the error names the fix (a 404 in production, the dev server's HTML fallback in dev). The apps and
their pinned tools are tests/data/vite-app and tests/data/webpack-app (build.py setup runs
`npm ci` on their committed lock files)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import build_artifact
from harness.server import free_port, stop_process, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent
WAV = ROOT / "samples" / "two-commands.wav"
MODEL = ROOT / "models" / "phonon-small.gguf"

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BUNDLERS = {
    # name: (the app folder's variable, the production build, the dev server; scripts under node_modules)
    "vite": ("PHONON_VITE_APP", ["vite/bin/vite.js", "build"],
             ["vite/bin/vite.js", "--strictPort", "--host", "127.0.0.1"]),
    "webpack": ("PHONON_WEBPACK_APP", ["webpack-cli/bin/cli.js"],
                ["webpack-cli/bin/cli.js", "serve", "--mode", "development"]),
}


@pytest.fixture(scope="module")
def native_tokens():
    from engine.audio import load_audio
    from engine.transcribe import Engine
    engine = Engine.open(MODEL, "scalar", 1)
    return json.loads(json.dumps(engine.transcribe(load_audio(engine.k, WAV.read_bytes()))["tokens"]))


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("pack")
    subprocess.run(["npm", "pack", str(build_artifact("PHONON_PACKAGE")), "--pack-destination", str(tmp), "--silent"],
                   check=True, capture_output=True)
    return next(tmp.glob("phonon-web-*.tgz"))


@pytest.fixture(scope="module")
def browser():
    from harness.site_check import SiteBrowser
    with SiteBrowser() as browser:
        yield browser


def app_copy(bundler: str, tarball: Path, tmp: Path, with_runtime: bool) -> Path:
    """A copy of the bundler's app with the package installed from its tarball; with_runtime: the
    recipe's static copy of the runtime (Vite: public/phonon-web/; webpack's config copies it)."""
    app = tmp / f"{bundler}-{'recipe' if with_runtime else 'no-runtime'}"
    shutil.copytree(build_artifact(BUNDLERS[bundler][0]), app, symlinks=True)
    subprocess.run(["npm", "install", "--no-save", "--offline", "--ignore-scripts", "--no-audit", "--no-fund",
                    str(tarball)], cwd=app, check=True, capture_output=True)
    assert (app / "node_modules" / "phonon-web" / "phonon.mjs").is_file()
    if with_runtime and bundler == "vite":
        shutil.copytree(app / "node_modules" / "phonon-web", app / "public" / "phonon-web")
    return app


def bundler_env(with_runtime: bool) -> dict:
    return dict(os.environ, NO_RUNTIME="0" if with_runtime else "1")       # webpack.config.js reads it


def build_for_production(bundler: str, app: Path, with_runtime: bool) -> Path:
    script, *args = BUNDLERS[bundler][1]
    built = subprocess.run(["node", str(app / "node_modules" / script), *args], cwd=app, capture_output=True,
                           text=True, timeout=300, env=bundler_env(with_runtime))
    assert built.returncode == 0, built.stdout + built.stderr
    assert (app / "dist" / "phonon-web" / "manifest.json").is_file() == with_runtime
    return app / "dist"


class DevServer:
    """The bundler's dev server on a free loopback port, until the block ends."""

    def __init__(self, bundler: str, app: Path, with_runtime: bool):
        self.bundler, self.app, self.port, self.with_runtime = bundler, app, free_port(), with_runtime

    def __enter__(self):
        script, *args = BUNDLERS[self.bundler][2]
        self.log = open(self.app / "dev-server.log", "w+")           # not a pipe: nobody would drain it
        self.proc = subprocess.Popen(["node", str(self.app / "node_modules" / script), *args, "--port", str(self.port)],
                                     cwd=self.app, stdout=self.log, stderr=subprocess.STDOUT, text=True,
                                     env=bundler_env(self.with_runtime))
        wait_until_serving(self.url, self.proc, 120, f"{self.bundler}'s dev server", self._output)
        return self

    def _output(self) -> str:
        self.log.seek(0)
        return self.log.read()[-3000:]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def __exit__(self, *exc):
        stop_process(self.proc)
        self.log.close()


def check(browser, url: str) -> dict:
    """The app's page: wait for it, then window.check(the WAV) -> {tokens, text} or {error}."""
    page = browser.browser.new_context().new_page()
    page.set_default_timeout(180_000)
    try:
        page.goto(url)
        page.wait_for_function("document.getElementById('status').textContent === 'ready'")
        return page.evaluate("""async (wav) => window.check(Uint8Array.from(atob(wav), (c) => c.charCodeAt(0)))""",
                             base64.b64encode(WAV.read_bytes()).decode())
    finally:
        page.context.close()


def run_app(browser, bundler: str, app: Path, how: str, with_runtime: bool) -> dict:
    from harness.server import StaticServer
    if how == "production":
        with StaticServer({"/": build_for_production(bundler, app, with_runtime)}, isolate=True) as server:
            return check(browser, server.url + "/")
    with DevServer(bundler, app, with_runtime) as dev:
        return check(browser, dev.url)


@pytest.mark.parametrize("bundler", BUNDLERS)
@pytest.mark.parametrize("how", ["production", "dev"])
def test_an_app_by_the_recipe_transcribes_with_the_native_tokens(tarball, tmp_path, browser, native_tokens,
                                                                 bundler, how):
    got = run_app(browser, bundler, app_copy(bundler, tarball, tmp_path, True), how, True)
    assert "error" not in got, got
    assert got["tokens"] == native_tokens and got["text"].startswith("turn on the kitchen lights")


@pytest.mark.parametrize("bundler", BUNDLERS)
@pytest.mark.parametrize("how", ["production", "dev"])
def test_without_the_runtime_files_the_error_names_the_fix(tarball, tmp_path, browser, bundler, how):
    got = run_app(browser, bundler, app_copy(bundler, tarball, tmp_path, False), how, False)
    error = got.get("error")
    assert error and error["code"] == "boot", got
    # Vite's dev server answers a missing file with the app's page; webpack's (historyApiFallback
    # only for navigations) and a static server with 404
    sign = "an HTML page" if (bundler, how) == ("vite", "dev") else "HTTP 404"
    assert sign in error["message"] and "public/phonon-web/" in error["message"] and "base" in error["message"]
