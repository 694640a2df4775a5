"""phonon-web in a web developer's Vite, webpack and esbuild apps, built by the
recipes of README and the package's README: the package installed from the tarball `build.py
package --pack` writes (the API bundled from node_modules), its folder served as static assets
beside the bundle (Vite: copied to public/phonon-web/; webpack: copy-webpack-plugin; esbuild:
build.mjs copies it), `base` naming it. In a production build (served statically) and under the
bundler's dev server, a WAV through the API gives the native tokens; without the runtime files
the error names the fix (a 404 in production, the dev server's HTML fallback in dev). The apps and
their pinned tools are tests/data/{vite,webpack,esbuild}-app (build.py setup runs `npm ci` on
their committed lock files). The tarball passes `npm publish --dry-run`."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import build_artifact
from harness.runtimes import POLL_MS
from harness.server import free_port, stop_process, wait_until_serving

ROOT = Path(__file__).resolve().parent.parent
WAV = ROOT / "samples" / "two-commands.wav"
MODEL = ROOT / "models" / "phonon-small.gguf"

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BUNDLERS = {
    # name: (the app folder's variable, the production build, the dev server; scripts relative to the app)
    "vite": ("PHONON_VITE_APP", ["node_modules/vite/bin/vite.js", "build"],
             ["node_modules/vite/bin/vite.js", "--strictPort", "--host", "127.0.0.1"]),
    "webpack": ("PHONON_WEBPACK_APP", ["node_modules/webpack-cli/bin/cli.js"],
                ["node_modules/webpack-cli/bin/cli.js", "serve", "--mode", "development"]),
    "esbuild": ("PHONON_ESBUILD_APP", ["build.mjs"], ["build.mjs", "--serve"]),
}


@pytest.fixture(scope="module")
def native_tokens():
    from engine.audio import load_audio
    from engine.transcribe import Engine
    engine = Engine.open(MODEL, "scalar", 1)
    return json.loads(json.dumps(engine.transcribe(load_audio(engine.k, WAV.read_bytes()))["tokens"]))


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    """The package's tarball, as `build.py package --pack` writes it."""
    import build
    return build.pack_package(build_artifact("PHONON_PACKAGE"), tmp_path_factory.mktemp("pack"))


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


def bundler_env(with_runtime: bool, **more) -> dict:
    # webpack.config.js and esbuild-app/build.mjs read NO_RUNTIME (Vite's copy is app_copy's)
    return dict(os.environ, NO_RUNTIME="0" if with_runtime else "1", **more)


def build_for_production(bundler: str, app: Path, with_runtime: bool, **env) -> Path:
    script, *args = BUNDLERS[bundler][1]
    built = subprocess.run(["node", str(app / script), *args], cwd=app, capture_output=True,
                           text=True, timeout=300, env=bundler_env(with_runtime, **env))
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
        self.proc = subprocess.Popen(["node", str(self.app / script), *args, "--port", str(self.port)],
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
        page.wait_for_function("document.getElementById('status').textContent === 'ready'", polling=POLL_MS)
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
    # only for navigations), esbuild's and a static server with 404
    sign = "an HTML page" if (bundler, how) == ("vite", "dev") else "HTTP 404"
    assert sign in error["message"] and "public/phonon-web/" in error["message"] and "base" in error["message"]


def test_a_script_bundle_without_base_is_told_to_bundle_as_a_module(tarball, tmp_path, browser):
    """esbuild's default output (iife) leaves import.meta empty: with no `base`, load() rejects at
    once naming --format=esm and `base`, instead of failing inside `new URL`."""
    from harness.server import StaticServer
    app = app_copy("esbuild", tarball, tmp_path, True)
    with StaticServer({"/": build_for_production("esbuild", app, True, FORMAT="iife", NO_BASE="1")}) as server:
        got = check(browser, server.url + "/")
    error = got.get("error")
    assert error and error["code"] == "boot", got
    assert "--format=esm" in error["message"] and "base" in error["message"], error


def test_the_packed_tarball_is_publish_ready(tmp_path):
    """`build.py package --pack` writes the tarball; its package.json names what a registry
    wants; the tarball holds every file the manifest lists (and their compressed copies); `npm
    publish --dry-run` accepts it (offline, against a closed loopback port: nothing is sent)."""
    import tarfile
    out = tmp_path / "phonon-web"
    done = subprocess.run(["python3", str(ROOT / "build.py"), "package", "--pack", "--out", str(out),
                           "--repository", "https://example.org/phonon-web.git"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    meta = json.loads((out / "package.json").read_text())
    version = meta["version"]
    tarball = tmp_path / f"phonon-web-{version}.tgz"
    assert tarball.is_file(), done.stdout
    assert meta["name"] == "phonon-web" and meta["license"].startswith("Apache-2.0 AND CC-BY-4.0")
    assert meta["repository"] == {"type": "git", "url": "https://example.org/phonon-web.git"}
    assert meta["types"] == "./phonon.d.ts" and meta["engines"]["node"] and meta["files"]
    with tarfile.open(tarball) as packed:
        names = {n.removeprefix("package/") for n in packed.getnames()}
    manifest = json.loads((out / "manifest.json").read_text())
    assert names == set(manifest["files"]) | set(manifest["compressed"]) | {"manifest.json"}
    assert {"README.md", "capture-worklet.mjs", "example.html"} <= names
    published = subprocess.run(["npm", "publish", "--dry-run", "--offline", "--registry", "http://127.0.0.1:9/",
                                str(tarball)], capture_output=True, text=True, timeout=300)
    assert published.returncode == 0, published.stderr[-3000:]
    assert f"+ phonon-web@{version}" in published.stdout, published.stdout[-2000:]
