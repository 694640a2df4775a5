#!/usr/bin/env python3
"""phonon-web build driver: one function per subcommand, every subprocess command echoed.

    python3 build.py setup     install what a fresh Debian machine lacks (apt, npm, .venv)
    python3 build.py native    host shared library with every native tier
    python3 build.py wasm      wasm side modules for Pyodide (one per wasm tier of engine/tiers.py)
    python3 build.py wheel     the wheels Pyodide installs offline (runtime: engine/ + wasm; checks/)
    python3 build.py test      all of the above as needed, then pytest (native, Node, Chromium)
    python3 build.py bench     GMAC/s of every tier in every runtime, then end-to-end RTFx on
                               the full-size synthetic model (--json FILE, --no-e2e, --e2e-only)
    python3 build.py site      the static web app in dist/site/ (wheel, Pyodide, model, manifest)
    python3 build.py package   the runtime alone with its JavaScript API in dist/phonon-web/
                               (phonon.mjs, phonon.d.ts, package.json with exports)
    python3 build.py serve     serve dist/site on localhost (--port N, --coop-coep)
    python3 build.py demo      set up, build everything, serve the web app and print its URL
                               (--model FILE|phonon-2|bundled; default: Phonon-2 when cached or
                               fetchable, else the bundled model, saying why)
    python3 build.py fetch phonon-2   download the pinned release (resumable), check it and
                               convert it into ~/.cache/phonon-web ($PHONON_WEB_CACHE; --from URL)
    python3 build.py parity    kernel sweep and tiny-model transcription, native vs Pyodide/Node
    python3 build.py clean     remove build outputs

Standard library only: it must run on a fresh machine before anything is installed.
Versions and digests come from pins.json; a mismatch stops with "need X, found Y".
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine.tiers import cpu_tiers_header, page_tiers, tier, tiers_of   # noqa: E402  (stdlib only)
from modeltools.digest import sha256_file                                # noqa: E402  (stdlib only)

ROOT = Path(__file__).resolve().parent
PINS = json.loads((ROOT / "pins.json").read_text())
KERNELS = ROOT / "kernels"
LIB_DIR = ROOT / "engine" / "_lib"
BUILD = ROOT / "build"
CACHE = ROOT / ".cache"
VENV = ROOT / ".venv"
VENV_PY = VENV / "bin" / "python"
NATIVE_LIB = LIB_DIR / f"phonon_kernels.{platform.machine()}-linux.so"
WASM_MODULES = {t.name: LIB_DIR / t.module for t in tiers_of("wasm")}      # engine/tiers.py
# The family's one-call C lives with the family (kernels/parakeet_tdt/), built into every module.
KERNEL_FOLDERS = ("", "parakeet_tdt")
COMMON_SOURCES = ["fv5_grid.c", "linear_call.c", "parakeet_tdt/layer.c", "parakeet_tdt/subsampling.c",
                  "parakeet_tdt/decoder_step.c"]
# -fno-math-errno: sqrtf need not set errno, so compilers vectorise it (the frontend's
# magnitudes); it is correctly rounded either way, so no bit changes (IEEE 754 sqrt).
CFLAGS = ["-O3", "-fPIC", "-std=c11", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno",
          "-Wall", "-Wextra", "-fvisibility=hidden", "-I", str(ROOT / "kernels")]     # family folders include the shared headers
WEB = ROOT / "web"
SITE = ROOT / "dist" / "site"
SITE_TINY = ROOT / "dist" / "site-tiny"
TRAINED_MODEL = ROOT / "models" / "phonon-small.gguf"
TINY_MODEL = BUILD / "tiny.gguf"
TINY_SOURCE = ROOT / "tests" / "data" / "tiny"
# the site's own files (web/), copied as they are; index.html and sw.js are rendered
# the runtime: the JavaScript API (phonon.mjs + types), its engine worker and kernel workers
RUNTIME_STATIC = ["phonon.mjs", "phonon.d.ts", "worker.mjs", "pyodide-boot.mjs", "start-snapshot.mjs",
                  "kernel-pool.mjs", "kernel-worker.mjs", "kernel-protocol.mjs", "capture-worklet.mjs", "messages.mjs",
                  *(f"worker/{part}.mjs" for part in ("common", "runtime", "model-cache", "kernel-workers", "gpu",
                                                      "stream", "file-job"))]
# the demo app on top of it
APP_STATIC = ["app.mjs", "formats.mjs", "session-store.mjs", "style.css", "icon.svg"]
SITE_STATIC = RUNTIME_STATIC + APP_STATIC
# what loadPyodide() fetches from its indexURL (pyodide.mjs imports pyodide.asm.mjs)
PYODIDE_RUNTIME = ["pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
                   "pyodide-lock.json"]
APT_PACKAGES = {"emcc": "emscripten", "chromium": "chromium", "chromedriver": "chromium-driver",
                "espeak-ng": "espeak-ng", "flite": "flite", "node": "nodejs", "npm": "npm", "nginx": "nginx",
                # the other two engines of the browser tests (harness/engines.py): Firefox ESR, and
                # WebKitGTK's MiniBrowser (libwebkit2gtk-4.1-0) driven by WebKitWebDriver on Xvfb
                "firefox-esr": "firefox-esr", "WebKitWebDriver": "webkit2gtk-driver",
                "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser": "libwebkit2gtk-4.1-0",
                "Xvfb": "xvfb"}


class BuildError(SystemExit):
    def __init__(self, message: str):
        super().__init__(f"build.py: error: {message}")


def run(cmd, **kwargs):
    """Echo and run a command; fail loudly with its exit code."""
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    result = subprocess.run([str(c) for c in cmd], **kwargs)
    if result.returncode != 0:
        raise BuildError(f"command failed with exit code {result.returncode}: {cmd[0]}")
    return result


def run_all(cmds) -> None:
    """Run independent commands (compiles) side by side, one per core; echo each as it starts
    and fail loudly with the first failure's exit code."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(run, cmds))             # raises the first failure (the others finish)


def output_of(cmd) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout


def newer(target: Path, sources) -> bool:
    """True when target is missing or older than any source."""
    if not target.exists():
        return True
    t = target.stat().st_mtime
    return any(Path(s).stat().st_mtime > t for s in sources)


# --------------------------------------------------------------------------------------------
# setup

# Debian packages with no program to look for, by a file they install: natively, WebGPU through
# PyPI wgpu needs the Vulkan loader and Mesa's lavapipe adapter (tests/test_webgpu_kernels.py);
# the nginx the site's host test runs sends the .br copies with Debian's brotli_static module
APT_FILES = {"/usr/lib/x86_64-linux-gnu/libvulkan.so.1": "libvulkan1",
             "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json": "mesa-vulkan-drivers",
             "/usr/lib/nginx/modules/ngx_http_brotli_static_module.so": "libnginx-mod-http-brotli-static"}


def setup_apt():
    missing = [pkg for tool, pkg in APT_PACKAGES.items() if shutil.which(tool) is None]
    missing += [pkg for path, pkg in APT_FILES.items() if not Path(path).exists()]
    if not missing:
        return
    if os.geteuid() != 0:
        raise BuildError(f"missing Debian packages {missing}; run as root or `apt-get install {' '.join(missing)}`")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-qq"], env=env)
    run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env)


def sri_digest(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def npm_package_dir(key: str) -> Path:
    """Fetch a pinned npm package with `npm pack` into .cache, check its integrity, unpack it."""
    pin = PINS[key]
    name, version = pin["npm"], pin["version"]
    target = CACHE / f"{name}-{version}"
    stamp = target / ".integrity"
    if stamp.exists() and stamp.read_text() == pin["integrity"]:
        return target / "package"
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / f"{name}-{version}.tgz"
    if not tarball.exists():
        run(["npm", "pack", f"{name}@{version}", "--silent", "--pack-destination", CACHE])
    found = sri_digest(tarball)
    if found != pin["integrity"]:
        tarball.unlink()
        raise BuildError(f"{name}@{version}: need integrity {pin['integrity']}, found {found}")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(target, filter="data")
    stamp.write_text(pin["integrity"])
    return target / "package"


def npm_app(folder: str) -> Path:
    """A folder of the repository holding a package.json pinned by its committed
    package-lock.json (tests/data/<a web developer's app>, harness/puppeteer) with its
    node_modules installed by `npm ci` into .cache/<its name>, redone when the lock changes."""
    source = ROOT / folder
    name = source.name
    lock = (source / "package-lock.json").read_bytes()
    target = CACHE / name
    stamp = target / ".lock-sha256"
    want = hashlib.sha256(lock).hexdigest()
    if stamp.exists() and stamp.read_text() == want:
        return target
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--silent"], cwd=target)
    stamp.write_text(want)
    return target


def setup_venv():
    """.venv with the project and its test extras; redone when pyproject.toml changes."""
    pyproject = ROOT / "pyproject.toml"
    stamp = VENV / ".phonon-stamp"
    want = hashlib.sha256(pyproject.read_bytes()).hexdigest()
    if VENV_PY.exists() and stamp.exists() and stamp.read_text() == want:
        return
    if not VENV_PY.exists():
        run([sys.executable, "-m", "venv", VENV])
    run([VENV_PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-e", f"{ROOT}[test]"])
    stamp.write_text(want)


def check_versions():
    """The pinned toolchain versions (emcc, chromium, node) or a loud mismatch."""
    found = emcc_version()
    want = PINS["emscripten"]["version"]
    if found != want and not (PINS["emscripten"].get("accept_emsdk") and emcc_is_emsdk()):
        raise BuildError(f"need emcc {want}, found {found}")
    node = output_of(["node", "--version"]).strip().lstrip("v").split(".")[0]
    if node != str(PINS["node"]["major"]):
        raise BuildError(f"need node {PINS['node']['major']}, found {node or 'none'}")
    for name, want, found in (("chromium", PINS["chromium"]["major"], chromium_major()),
                              ("firefox-esr", PINS["firefox_esr"]["major"], firefox_major()),
                              ("webkitgtk", PINS["webkitgtk"]["minor"], webkitgtk_minor())):
        if found != want:
            raise BuildError(f"need {name} {want}, found {found} "
                             "(update pins.json after checking the browser tests on it)")


def emcc_version() -> str:
    m = re.search(r"\) (\d+\.\d+\.\d+)", output_of(["emcc", "--version"]))
    return m.group(1) if m else "none"


def emcc_is_emsdk() -> bool:
    path = shutil.which("emcc") or ""
    return "emsdk" in path


def chromium_major() -> int | None:
    m = re.search(r"Chromium (\d+)\.", output_of(["chromium", "--version"]))
    return int(m.group(1)) if m else None


def firefox_major() -> int | None:
    m = re.search(r"Firefox (\d+)\.", output_of(["firefox-esr", "--version"]))
    return int(m.group(1)) if m else None


def webkitgtk_minor() -> str | None:
    m = re.match(r"(\d+\.\d+)\.", output_of(["dpkg-query", "-W", "-f=${Version}", "libwebkit2gtk-4.1-0"]))
    return m.group(1) if m else None


def cmd_setup(args=None):
    setup_apt()
    check_versions()
    npm_package_dir("pyodide")
    npm_package_dir("onnxruntime_web")
    npm_package_dir("typescript")
    npm_app("tests/data/vite-app")
    npm_app("tests/data/webpack-app")
    npm_app("tests/data/esbuild-app")
    npm_app("harness/puppeteer")
    setup_venv()
    print(f"setup: emcc {emcc_version()}, chromium {chromium_major()}, firefox-esr {firefox_major()}, "
          f"webkitgtk {webkitgtk_minor()}, pyodide "
          f"{PINS['pyodide']['version']}, venv {VENV}")


# --------------------------------------------------------------------------------------------
# native and wasm kernels

def sources(*patterns):
    """The kernel sources matching each pattern in kernels/ and its family folders."""
    out = []
    for p in patterns:
        for folder in KERNEL_FOLDERS:
            out.extend(sorted((KERNELS / folder).glob(p)))
    return out


def write_if_changed(path: Path, text: str) -> Path:
    """Write a generated file only when its text changes (so make-style checks stay quiet)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def cmd_native(args=None):
    """Host library: scalar + common + cpu_features, and each SIMD tier of engine/tiers.py with
    its flags on its own files only (the library runs anywhere; engine/kernels.py picks tiers at
    run time, from pk_cpu_features(), whose tests cpu_tiers.h generates from the same table)."""
    obj_dir = BUILD / "native"
    header = write_if_changed(obj_dir / "cpu_tiers.h", cpu_tiers_header())
    plain = [KERNELS / s for s in COMMON_SOURCES] + sources("*__scalar.c") + [KERNELS / "cpu_features.c"]
    isa = {src: list(t.cflags) for t in tiers_of("native") if t.cflags for src in sources(f"*__{t.name}.c")}
    deps = plain + list(isa) + sources("*.h") + [header]
    if not newer(NATIVE_LIB, deps):
        print(f"native: {NATIVE_LIB.relative_to(ROOT)} is up to date")
        return NATIVE_LIB
    objects = [obj_dir / (src.stem + ".o") for src in plain + list(isa)]
    run_all([["cc", *CFLAGS, *isa.get(src, []), "-I", obj_dir, "-c", src, "-o", obj]
             for src, obj in zip(plain + list(isa), objects)])
    LIB_DIR.mkdir(parents=True, exist_ok=True)
    run(["cc", "-shared", "-o", NATIVE_LIB, *objects, "-lm"])
    return NATIVE_LIB


def zig() -> list:
    """zig's clang 22 (PyPI ziglang, pinned; installed into .venv by setup): Debian's emcc 3.1.6
    (LLVM 14) has no relaxed-SIMD builtins, and its binaryen predates the final opcodes."""
    setup_venv()
    found = output_of([VENV_PY, "-m", "ziglang", "version"]).strip()
    want = PINS["ziglang"]["version"]
    if found != want:
        raise BuildError(f"need ziglang {want}, found {found or 'none'}")
    return [VENV_PY, "-m", "ziglang"]


def compile_module(out: Path, srcs: list, isa_of, compile_cmd: list, link_cmd: list, tag: str):
    """Compile each source (ISA flags per file) and link one side module, unless up to date."""
    if not newer(out, srcs + sources("*.h")):
        print(f"wasm: {out.relative_to(ROOT)} is up to date")
        return
    obj_dir = BUILD / "wasm"
    obj_dir.mkdir(parents=True, exist_ok=True)
    objects = [obj_dir / f"{src.stem}.{tag}.o" for src in srcs]
    run_all([[*compile_cmd, *CFLAGS, *isa_of(src), "-c", src, "-o", obj] for src, obj in zip(srcs, objects)])
    LIB_DIR.mkdir(parents=True, exist_ok=True)
    run([*link_cmd, "-o", out, *objects])


def cmd_wasm(args=None):
    """A side module per wasm tier of engine/tiers.py: scalar (common + scalar sources, no
    SIMD); each SIMD tier adds its own sources and those of the tiers it builds on (relaxed
    SIMD holds the SIMD128 ones), built with Debian's emcc or, for relaxed SIMD, zig's clang and
    wasm-ld. In a SIMD module the shared sources are built with -msimd128 too, so the compiler
    may vectorise their independent-lane loops (the float ops, the frontend); without fast-math
    it cannot reorder a sum, so the bits stay the same, which the parity tests check. The scalar
    module stays SIMD-free for browsers without it."""
    setup_apt()
    found, want = emcc_version(), PINS["emscripten"]["version"]
    if found != want and not emcc_is_emsdk():
        raise BuildError(f"need emcc {want}, found {found}")
    common = [KERNELS / s for s in COMMON_SOURCES] + sources("*__scalar.c")
    for t in tiers_of("wasm"):
        own = {tier_name: sources(f"*__{tier_name}.c") for tier_name in (*t.builds_on, t.name) if tier_name != "scalar"}
        flags = {src: list(tier("wasm", tier_name).cflags) for tier_name, srcs in own.items() for src in srcs}
        base = ["-msimd128"] if "-msimd128" in t.cflags else []      # the shared sources in a SIMD module
        srcs = common + [src for srcs in own.values() for src in srcs]
        if t.compiler == "zig":
            z = zig()
            compile_cmd = [*z, "cc", "--target=wasm32-wasi"]
            link_cmd = [*z, "wasm-ld", "--experimental-pic", "-shared", "--export-dynamic", "-O2"]
        else:
            compile_cmd, link_cmd = ["emcc"], ["emcc", "-O3", "-fPIC", "-sSIDE_MODULE=1", "-sWASM_BIGINT"]
        compile_module(WASM_MODULES[t.name], srcs, lambda src, flags=flags, base=base: flags.get(src, base),
                       compile_cmd, link_cmd, t.name)
    (BUILD / "wasm").mkdir(parents=True, exist_ok=True)
    (BUILD / "wasm" / "toolchain.json").write_text(json.dumps(
        {"emcc": found, "emsdk": emcc_is_emsdk(), "ziglang": PINS["ziglang"]["version"]}, indent=1) + "\n")


# --------------------------------------------------------------------------------------------
# wheel

def project_version() -> str:
    m = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    return m.group(1)


def wheel_path(name: str = "phonon_web") -> Path:
    tag = f"py3-none-{PINS['pyodide']['wheel_platform']}"
    return BUILD / "wheel" / f"{name}-{project_version()}-{tag}.whl"


def checks_wheel_path() -> Path:
    return wheel_path("phonon_web_checks")


def runtime_wheel_files() -> dict:
    """What the browser runs: engine/**/*.py (the runtime package, its family packages too), the kernel side modules
    (named .wasm so Pyodide does not load them eagerly: the engine picks one with ctypes) and
    the WebGPU shaders kernels/webgpu/*.wgsl as engine/_wgsl/.
    Archive name -> source file. tests/test_build.py checks this list."""
    files = {str(p.relative_to(ROOT)): p for p in sorted((ROOT / "engine").rglob("*.py"))
             if p.relative_to(ROOT).as_posix() != "engine/__main__.py"}       # the command line is a checkout's, not the browser's
    files.update({str(p.relative_to(ROOT)): p for p in WASM_MODULES.values()})
    # the WebGPU tier's shaders, read from the installed package (engine/executors/webgpu/device.py SHADER_DIR)
    files.update({f"engine/_wgsl/{p.name}": p for p in sorted((ROOT / "kernels" / "webgpu").glob("*.wgsl"))})
    return files


def cmd_wheel(args=None):
    """The wheels pyodide.loadPackage installs offline: the runtime (phonon_web: what the site
    ships) and, for the tests and benchmarks only, the checks (phonon_web_checks: checks/*.py,
    the kernel sweep, the kernel benchmark and the jobs the harness runs in Pyodide)."""
    cmd_wasm()
    summary = "In-browser speech recognition kernels and engine (Pyodide build)"
    files = runtime_wheel_files()
    source = write_wheel(BUILD / "wheel-source" / wheel_path().name, "phonon-web", summary, files)
    write_wheel(wheel_path(), "phonon-web", summary, {**files, **start_bytecode(source)})
    checks = {str(p.relative_to(ROOT)): p for p in sorted((ROOT / "checks").glob("*.py"))}
    write_wheel(checks_wheel_path(), "phonon-web-checks",
                "phonon-web's in-runtime checks: kernel sweep, kernel benchmark, harness jobs", checks)
    return wheel_path()


# the bytecode script, and the list of the engine worker's start imports it compiles
START_BYTECODE_SOURCES = [ROOT / "harness" / "start_bytecode.mjs", WEB / "pyodide-boot.mjs"]


def start_bytecode(source_wheel: Path) -> dict:
    """Bytecode for the engine modules a start imports, for the runtime wheel: archive name ->
    file, engine/**/__pycache__/*.cpython-3XX.pyc (unchecked-hash .pyc compiled by the pinned
    Pyodide under Node from `source_wheel`, harness/start_bytecode.mjs), so Python in a page
    loads them without compiling the sources, which stay in the wheel beside them."""
    out = BUILD / "wheel-bytecode"
    script = ROOT / "harness" / "start_bytecode.mjs"
    pycs = sorted(out.rglob("*.pyc"))
    if not pycs or any(newer(p, [source_wheel, *START_BYTECODE_SOURCES]) for p in pycs):
        run(["node", script, "wheel", npm_package_dir("pyodide"), source_wheel, out])
        pycs = sorted(out.rglob("*.pyc"))
    return {p.relative_to(out).as_posix(): p for p in pycs}


def write_wheel(out: Path, project: str, summary: str, files: dict) -> Path:
    """A wheel of `files` (archive name -> source). Deterministic: sorted entries, fixed
    timestamps; rewritten only when a source is newer."""
    if not newer(out, list(files.values()) + [ROOT / "pyproject.toml", ROOT / "pins.json"]):
        print(f"wheel: {out} is up to date")
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    version = project_version()
    dist_info = f"{project.replace('-', '_')}-{version}.dist-info"
    tag = f"py3-none-{PINS['pyodide']['wheel_platform']}"
    entries = [(name, src.read_bytes()) for name, src in sorted(files.items())]
    top_level = sorted({name.split("/")[0] for name in files if name.endswith(".py")})
    entries.append((f"{dist_info}/METADATA",
                    f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n"
                    f"Summary: {summary}\nLicense: Apache-2.0\n".encode()))
    entries.append((f"{dist_info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: phonon-web build.py\n"
                                          f"Root-Is-Purelib: false\nTag: {tag}\n".encode()))
    entries.append((f"{dist_info}/top_level.txt", "".join(f"{t}\n" for t in top_level).encode()))
    record = []
    for name, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    print(f"+ write {out} ({len(entries)} entries)")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return out


# --------------------------------------------------------------------------------------------
# the web app

BUNDLED_DESCRIPTION = ("A small demo model trained only on generated (text-to-speech) voices saying smart-home "
                       "commands and short sentences: it shows the pipeline, it does not recognise real voices "
                       "well. For real speech: python3 build.py fetch phonon-2")
TINY_DESCRIPTION = "Random weights, for tests only: it runs the whole pipeline, but its words are nonsense."


def gpu_self_test(path: Path) -> dict:
    """What the page's WebGPU known-answer check expects of this model: the native
    scalar tier's encoder outputs of engine/executors/webgpu/self_test.py's fixed features, as a sha256
    (cpu_digest), and how many feature frames each encode has."""
    cmd_native()
    sys.path.insert(0, str(ROOT))
    from engine.family import load
    from engine.executors.webgpu.self_test import SELF_TEST_SHAPES, cpu_digest
    model = load(str(path))
    try:
        return {"digest": cpu_digest(model), "frames": list(SELF_TEST_SHAPES), "tier": "scalar"}
    finally:
        model.close()


def model_file_name(path: Path) -> str:
    """A GGUF's general.name (the engine's reader: standard library only)."""
    sys.path.insert(0, str(ROOT))
    from engine.family import load
    model = load(path)
    try:
        return model.name
    finally:
        model.close()


def default_model() -> tuple:
    """The model the site ships: (path, description). The trained small model when it is in
    the repo (models/phonon-small.gguf), else the random tiny test model."""
    if TRAINED_MODEL.exists():          # its name as the model file says it (what the API's r.model.name reads)
        return TRAINED_MODEL, {"name": model_file_name(TRAINED_MODEL), "test_model": False,
                               "description": BUNDLED_DESCRIPTION}
    return tiny_model(), {"name": "tiny test model (random weights)", "test_model": True,
                          "description": TINY_DESCRIPTION}


def tiny_model() -> Path:
    """build/tiny.gguf, converted from the committed container the README's way if missing."""
    sources = [TINY_SOURCE / "model.fermion", TINY_SOURCE / "config.json"]
    if newer(TINY_MODEL, sources):
        setup_venv()
        BUILD.mkdir(parents=True, exist_ok=True)
        run([VENV_PY, "-m", "modeltools", "convert", "phonon2", "--container", sources[0],
             "--config", sources[1], "--out", TINY_MODEL], cwd=ROOT)
    return TINY_MODEL


sha256_of = sha256_file               # modeltools/digest.py: standard library, a file read in 1 MiB blocks


def render(template: Path, out: Path, context: dict):
    """jinja2 (in the .venv: this script stays standard library only)."""
    run([VENV_PY, WEB / "render.py", template, out], input=json.dumps(context), text=True)


def site_model(path) -> tuple:
    """--model for `build.py site`: (path, description)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise BuildError(f"--model {path}: no such file")
    tiny = TINY_MODEL.exists() and path == TINY_MODEL.resolve()
    if tiny:
        return path, {"name": "tiny test model (random weights)", "test_model": True, "description": TINY_DESCRIPTION}
    if path == TRAINED_MODEL.resolve():
        return default_model()
    return path, {"name": path.stem, "test_model": False, "description": ""}


def remote_model(args) -> dict | None:
    """`site --model-url URL --model-sha256 HEX --model-bytes N [--model-name NAME]`: a model
    on another origin, fetched by the page with CORS and checked against this digest."""
    url, digest, size = (getattr(args, k, None) for k in ("model_url", "model_sha256", "model_bytes"))
    if url is None and digest is None and size is None:
        return None
    if None in (url, digest, size):
        raise BuildError("--model-url, --model-sha256 and --model-bytes go together")
    if getattr(args, "model", None):
        raise BuildError("--model (a file in the site) and --model-url (a model elsewhere) exclude each other")
    if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", url):
        raise BuildError(f"--model-url {url!r}: need an absolute http(s) URL")
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise BuildError("--model-sha256: need 64 lowercase hex digits")
    if not isinstance(size, int) or size <= 0:
        raise BuildError("--model-bytes: need a positive size in bytes")
    name = getattr(args, "model_name", None) or url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".gguf")
    return {"url": url, "sha256": digest, "size": size, "name": name, "test_model": False, "description": ""}


PACKAGE = ROOT / "dist" / "phonon-web"


def cmd_package(args=None) -> Path:
    """dist/phonon-web/ (or --out DIR): the runtime alone, for developers' own pages - the
    JavaScript API (phonon.mjs, phonon.d.ts), the engine and kernel workers, the microphone's
    worklet, Pyodide, the wheel, the model, manifest.json, a README for npm and a publish-ready
    package.json (`exports`: a bundler or a plain <script type="module"> can use it). No demo
    app, no service worker. With --pack, `npm pack` writes phonon-web-<version>.tgz beside the
    folder (or into --pack-destination)."""
    args = args or argparse.Namespace()
    if not getattr(args, "out", None):
        args.out = str(PACKAGE)
    package = cmd_site(args, package=True)
    if getattr(args, "pack", False):
        pack_package(package, Path(getattr(args, "pack_destination", None) or package.parent))
    return package


def pack_package(package: Path, destination: Path) -> Path:
    """`npm pack` of the package folder into destination (offline: it needs no registry)."""
    destination.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["npm", "pack", str(package), "--pack-destination", str(destination), "--offline",
                           "--silent"], capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise BuildError(f"npm pack {package} failed:\n{done.stderr[-3000:]}")
    tarball = destination / done.stdout.strip().splitlines()[-1]
    print(f"package: {tarball} ({tarball.stat().st_size / 2**20:.1f} MiB); "
          f"install it with `npm install {tarball}`")
    return tarball


def package_repository(args) -> str | None:
    """The repository package.json names: --repository, else this checkout's git remote."""
    given = getattr(args, "repository", None)
    if given:
        return given
    done = subprocess.run(["git", "config", "--get", "remote.origin.url"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or None


# The package's licence: the code's, the bundled model's (CC-BY-4.0: the default model and
# Phonon-2 both), Pyodide's and the CPython it carries (NOTICE.txt names each).
PACKAGE_LICENSE = "Apache-2.0 AND CC-BY-4.0 AND MPL-2.0 AND PSF-2.0"


def package_json(repository: str | None = None) -> dict:
    top = RUNTIME_STATIC + ["example.html", "manifest.json", "NOTICE.txt", "LICENSE.txt", "README.md", "package.json"]
    meta = {"name": "phonon-web", "version": project_version(), "type": "module", "license": PACKAGE_LICENSE,
            "description": "Private, offline speech recognition in the browser (Parakeet-TDT on WebAssembly in a worker)",
            "keywords": ["speech-recognition", "asr", "transcription", "webassembly", "offline", "parakeet"],
            # every file is exported: a bundler can resolve the runtime's files (`phonon-web/worker.mjs?url`,
            # `phonon-web/manifest.json`) as well as the API
            "exports": {".": {"types": "./phonon.d.ts", "import": "./phonon.mjs", "default": "./phonon.mjs"},
                        "./manifest.json": "./manifest.json", "./*": "./*"},
            "types": "./phonon.d.ts", "sideEffects": False,
            # what npm packs: the runtime and the precompressed copies beside its files
            "files": sorted(f"{name}{suffix}" for name in top for suffix in ("", ".br", ".gz"))
                     + ["pyodide/", "wheel/", "models/"],
            # the tools that install and bundle it; the package itself runs in browsers
            "engines": {"node": ">=18"}}
    if repository:
        meta["repository"] = {"type": "git", "url": repository}
    return meta


def worker_csp(model_entry: dict) -> str:
    """The engine and kernel workers' Content-Security-Policy (web/sw.js.j2 adds it to their
    scripts' responses): own files, WebAssembly, no eval; connections to the site and, for a
    model on another origin, that origin."""
    connect = "'self'"
    if model_entry.get("url"):
        from urllib.parse import urlsplit
        parts = urlsplit(model_entry["url"])
        connect += f" {parts.scheme}://{parts.netloc}"
    return (f"default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; connect-src {connect}; "
            "object-src 'none'; base-uri 'self'")


PYODIDE_BUILD = BUILD / "pyodide"


def cmd_pyodide(args=None) -> Path:
    """build/pyodide/: the Pyodide runtime files the site, the package and the tests serve
    (PYODIDE_RUNTIME, from the pinned npm package), python_stdlib.zip cut to the modules the
    engine (and the tests' checks) can import, the ones a start imports as bytecode, so a start
    in a page or under Node compiles none of them (harness/start_bytecode.mjs)."""
    pyodide = npm_package_dir("pyodide")
    wheel = cmd_wheel()
    script = ROOT / "harness" / "start_bytecode.mjs"
    stdlib = PYODIDE_BUILD / "python_stdlib.zip"
    PYODIDE_BUILD.mkdir(parents=True, exist_ok=True)
    for name in PYODIDE_RUNTIME:
        if name != "python_stdlib.zip" and newer(PYODIDE_BUILD / name, [pyodide / name]):
            shutil.copyfile(pyodide / name, PYODIDE_BUILD / name)
    if newer(stdlib, [pyodide / "python_stdlib.zip", wheel, checks_wheel_path(), *START_BYTECODE_SOURCES]):
        partial = stdlib.with_name(stdlib.name + ".partial")
        run(["node", script, "stdlib", pyodide, wheel, partial, checks_wheel_path()])
        partial.replace(stdlib)
    else:
        print(f"pyodide: {stdlib.relative_to(ROOT)} is up to date")
    return PYODIDE_BUILD


def cmd_site(args=None, package: bool = False) -> Path:
    """dist/site/ (or --out DIR): the app (web/), the Pyodide runtime files (cmd_pyodide: the
    pinned npm package's, the stdlib with start-up bytecode), the engine wheel, the model (default_model(), or --model F), NOTICE and LICENSE,
    and manifest.json with every file's sha256 and size. Relative URLs only, so it works from
    any sub-path of any static host. Built in a staging folder and swapped in whole. With
    `package`, the runtime alone (cmd_package)."""
    setup_venv()
    wheel = cmd_wheel()
    pyodide = cmd_pyodide()
    remote = remote_model(args)
    if remote:
        model, model_info = None, remote
    else:
        model, model_info = site_model(args.model) if getattr(args, "model", None) else default_model()
    if getattr(args, "model_description", None):
        model_info = dict(model_info, description=args.model_description)
    model_info = dict(model_info, note=getattr(args, "model_note", None) or "")
    site = Path(args.out).resolve() if getattr(args, "out", None) else SITE
    stage = site.with_name(site.name + ".partial")
    if stage.exists():
        shutil.rmtree(stage)
    print(f"+ assemble {stage}")
    copies = {name: WEB / name for name in (RUNTIME_STATIC + ["example.html"] if package else SITE_STATIC)}
    copies.update({f"pyodide/{name}": pyodide / name for name in PYODIDE_RUNTIME})
    copies.update({f"wheel/{wheel.name}": wheel, "NOTICE.txt": ROOT / "NOTICE", "LICENSE.txt": ROOT / "LICENSE"})
    if model is not None:
        copies[f"models/{model.name}"] = model
    for rel, src in copies.items():
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, stage / rel)
    files = {}

    def add(rel):
        files[rel] = {"sha256": sha256_of(stage / rel), "size": (stage / rel).stat().st_size}
    for rel in copies:
        add(rel)
    if model is not None:
        model_rel = f"models/{model.name}"
        model_entry = dict(path=model_rel, **files[model_rel], **model_info)
        if not getattr(args, "no_gpu_digest", False):
            model_entry["gpu_self_test"] = gpu_self_test(model)
    else:
        model_rel, model_entry = None, model_info            # on another origin: not a site file
    context = {"version": project_version(), "pyodide_version": PINS["pyodide"]["version"],
               "model": model_entry, "wheel": f"wheel/{wheel.name}"}
    if package:
        (stage / "package.json").write_text(json.dumps(package_json(package_repository(args)), indent=1) + "\n")
        shutil.copyfile(WEB / "package-README.md", stage / "README.md")
        add("package.json")
        add("README.md")
    else:
        render(WEB / "index.html.j2", stage / "index.html", context)
        add("index.html")
    # the build id names the service worker's cache: any change to any file makes a new one
    listing = "".join(f"{rel} {files[rel]['sha256']}\n" for rel in sorted(files))
    listing += f"sw.js.j2 {sha256_of(WEB / 'sw.js.j2')}\n"
    build_id = hashlib.sha256(listing.encode()).hexdigest()[:16]
    if not package:
        shell = sorted((rel for rel in files if rel != model_rel), key=lambda r: (-files[r]["size"], r))
        shell_bytes = sum(files[r]["size"] for r in shell)
        shell.append("manifest.json")                   # written last (it lists sw.js's digest)
        render(WEB / "sw.js.j2", stage / "sw.js", dict(context, build=build_id, shell=shell, shell_bytes=shell_bytes,
                                                    worker_csp=worker_csp(model_entry)))
        add("sw.js")
    manifest = {"name": "phonon-web", "version": project_version(), "build": build_id,
                "pyodide": {"version": PINS["pyodide"]["version"], "path": "pyodide/"},
                "wheel": f"wheel/{wheel.name}", "model": model_entry,
                "tiers": page_tiers(),                       # best first: the page probes each
                "files": {rel: files[rel] for rel in sorted(files)}}
    manifest["compressed"] = precompress(stage, files)
    (stage / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    if site.exists():
        shutil.rmtree(site)
    stage.rename(site)
    total = sum(f["size"] for f in files.values())
    where = model.name if model is not None else model_entry["url"]
    print(f"{'package' if package else 'site'}: {site} ({len(files) + 1} files, {total / 2**20:.1f} MiB; "
          f"model {where} {model_entry['size']:,} bytes; build {build_id})")
    return site


# Files worth sending compressed: text and WebAssembly, the zips (Pyodide's stdlib, the engine
# wheel), whose copies are of the archive with its entries stored (tools/precompress.py), and a
# small model (the bundled one shrinks 16%: its embeddings and norms are floats). Files over
# PRECOMPRESS_MAX are sent as they are: a full-size model's packed five-value weights barely
# shrink and brotli at quality 11 would take many minutes on them. A static host that serves
# `<file>.br` / `<file>.gz` to browsers that accept them (nginx `brotli_static` / `gzip_static`,
# Caddy `precompressed br gzip`, most CDNs) sends these.
PRECOMPRESS = (".wasm", ".mjs", ".js", ".json", ".html", ".css", ".svg", ".txt", ".ts", ".zip", ".whl", ".gguf")
PRECOMPRESS_MAX = 32 * 2**20
PRECOMPRESSED_CACHE = BUILD / "precompressed"


def precompress(stage: Path, files: dict) -> dict:
    """<file>.br and <file>.gz beside each site file of a PRECOMPRESS type from 1 KiB to
    PRECOMPRESS_MAX (tools/precompress.py, in the .venv for brotli: this script stays standard library only);
    -> {copy: {sha256, size, of, encoding, same}}."""
    rels = [rel for rel in sorted(files)
            if Path(rel).suffix in PRECOMPRESS and 1024 < files[rel]["size"] <= PRECOMPRESS_MAX]
    done = subprocess.run([VENV_PY, "-m", "tools.precompress", stage, PRECOMPRESSED_CACHE], cwd=ROOT,
                          input=json.dumps(rels), capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildError(f"precompressing the site's files failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def cmd_serve(args=None):
    """Serve dist/site on 127.0.0.1 (correct MIME types; --coop-coep adds the headers that make
    the page cross-origin isolated, so the capture uses a SharedArrayBuffer ring) until Ctrl-C."""
    sys.path.insert(0, str(ROOT))
    from harness.server import StaticServer
    site = Path(getattr(args, "site", None) or SITE)
    if not (site / "index.html").exists():
        raise BuildError(f"{site} is not built: run `python3 build.py site`")
    port = getattr(args, "port", None) or 8000
    isolate = bool(getattr(args, "coop_coep", False))
    def serve(port):                    # a host's advised caching: keep and revalidate
        return StaticServer({"/": site}, port=port, isolate=isolate, cache="no-cache")
    try:
        server = serve(port=port)
    except OSError as e:
        if getattr(args, "port", None):
            raise BuildError(f"cannot listen on port {port}: {e.strerror}")
        server = serve(port=0)                                  # 8000 taken: any free port
    print(f"\nphonon-web is served at {server.url}/  (open it in Chromium, Firefox or Safari; "
          f"{'cross-origin isolated, ' if isolate else ''}Ctrl-C stops)", flush=True)
    server.serve_forever()


def cmd_parity(args):
    """The kernels' seeded sweep in every native tier and in Pyodide under Node, and the tiny
    model's transcript natively and in Pyodide (the interim demo before the web app)."""
    build_all()
    run([VENV_PY, "-m", "harness.parity_demo"], cwd=ROOT, env=test_env())


# --------------------------------------------------------------------------------------------
# test, bench, demo, clean

def build_all(site: bool = False):
    cmd_setup()
    cmd_native()
    cmd_wheel()
    cmd_pyodide()
    if site:
        cmd_site()


def build_test_sites():
    """dist/site as shipped, dist/site-tiny with the tiny test model (whose random weights
    always emit tokens, so the browser tests can check live text whatever the default model),
    and dist/phonon-web, the runtime package the API tests load."""
    build_all(site=True)
    cmd_site(argparse.Namespace(model=str(tiny_model()), out=str(SITE_TINY)))
    cmd_package()


def test_env() -> dict:
    return dict(os.environ,
                PHONON_PYODIDE_DIR=str(PYODIDE_BUILD),     # build_all's cmd_pyodide
                PHONON_ORT_DIR=str(npm_package_dir("onnxruntime_web")),
                PHONON_TYPESCRIPT_DIR=str(npm_package_dir("typescript")),
                PHONON_VITE_APP=str(npm_app("tests/data/vite-app")),
                PHONON_WEBPACK_APP=str(npm_app("tests/data/webpack-app")),
                PHONON_ESBUILD_APP=str(npm_app("tests/data/esbuild-app")),
                PHONON_PUPPETEER=str(npm_app("harness/puppeteer")),
                PHONON_WHEEL=str(wheel_path()), PHONON_CHECKS_WHEEL=str(checks_wheel_path()),
                PHONON_SITE=str(SITE), PHONON_SITE_TINY=str(SITE_TINY), PHONON_PACKAGE=str(PACKAGE))


# `build.py test --quick`: the development tier (tests/README.md "The quick tier"): native,
# Chromium and the parity sweep on the default tier; no Firefox, WebKit, WebGPU, benchmark smoke
# runs or the long streams. CI and README's command run everything.
QUICK_MARKERS = "not (firefox or webkit or webgpu or bench_smoke or slow)"


TEST_REPORT = BUILD / "test-report.xml"     # the last run's JUnit XML
TEST_RUN = BUILD / "test-run.json"          # its wall time, CPU time, workers, selection


def default_test_workers() -> int:
    """pytest-xdist workers: one per core and one more, to fill the waits (browsers starting,
    pages loading, audio played in real time). Measured on the 2-core VM (tests/README.md): 2
    workers left the cores idle 13% of the run, 4 spent 12% more CPU time on the same tests
    (contention) for the same wall time."""
    return (os.cpu_count() or 1) + 1


def machine_busy_seconds() -> float:
    """CPU seconds every core of this machine has spent busy since boot (/proc/stat: all but
    idle and iowait), so a run's CPU time includes browsers and other grandchildren."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(v) for v in fields]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def cmd_test(args):
    build_test_sites()
    extra = list(args.pytest_args or [])
    if extra[:1] == ["--"]:
        extra = extra[1:]                   # `build.py test -- -k NAME`: argparse needs the --
    workers = args.workers if args.workers is not None else default_test_workers()
    # tests/ unless the arguments name test files or folders themselves
    named = any(a.startswith("tests") and not a.startswith("-") for a in extra)
    cmd = [VENV_PY, "-m", "pytest", *([] if named else ["tests"]), "--durations=25", "--durations-min=1"]
    if workers > 1:
        # a module's tests stay on one worker: its browsers, servers and models are set up once
        cmd += ["-n", str(workers), "--dist", "loadscope"]
    if args.quick:
        cmd += ["-m", QUICK_MARKERS]
    # the JUnit XML and the run's record: harness/suite_report.py makes results/suite.json of them
    cmd += [f"--junitxml={TEST_REPORT}"]
    from harness.results import commit
    started, busy, at = time.monotonic(), machine_busy_seconds(), commit()
    try:
        run([*cmd, *extra], cwd=ROOT, env=test_env())
    finally:
        wall, cpu, cores = time.monotonic() - started, machine_busy_seconds() - busy, os.cpu_count() or 1
        print(f"test: pytest took {wall / 60:.1f} min wall ({wall:.0f} s) with {workers} worker(s); the machine's "
              f"{cores} core(s) were busy {cpu:.0f} s of {wall * cores:.0f} s ({100 * cpu / max(wall * cores, 1e-9):.0f}%); "
              f"the slowest tests are above, each module's cost: python3 -m harness.suite_report")
        selection = (["--quick"] if args.quick else []) + extra
        TEST_RUN.write_text(json.dumps({"wall_seconds": round(wall, 1), "busy_cpu_seconds": round(cpu, 1),
                                        "cores": cores, "workers": workers, "selection": selection, "commit": at,
                                        "command": "python3 build.py test" + "".join(f" {a}" for a in selection)},
                                       indent=1) + "\n")


def cmd_bench(args):
    build_all()
    if args.ort:                            # the peer on the same encoder
        run([VENV_PY, "-m", "harness.bench_ort_encoder"], cwd=ROOT, env=test_env())
        return
    if args.schedule:                       # full-size streaming, realistic schedule
        run([VENV_PY, "-m", "harness.bench_schedule"], cwd=ROOT, env=test_env())
        return
    if args.behind:                         # a stream slower than real time loses nothing
        build_test_sites()
        run([VENV_PY, "-m", "harness.bench_behind"], cwd=ROOT, env=test_env())
        return
    if args.live:                           # the full-size model fed at real time, today's schedule and the live one
        build_test_sites()
        run([VENV_PY, "-m", "harness.bench_live"], cwd=ROOT, env=test_env())
        return
    if args.soak:                           # a long session's poll cost, messages and memory
        minutes = ["--minutes", str(args.minutes)] if args.minutes else []
        if args.engine:                     # in a browser engine, through the package's API
            build_test_sites()
            run([VENV_PY, "-m", "harness.bench_soak_browser", "--engine", args.engine, *minutes]
                + (["--pace", str(args.pace)] if args.pace else []), cwd=ROOT, env=test_env())
        else:
            run([VENV_PY, "-m", "harness.bench_soak", *minutes], cwd=ROOT, env=test_env())
        return
    if args.engines:                        # the browser engines side by side
        build_test_sites()
        run([VENV_PY, "-m", "harness.bench_engines"], cwd=ROOT, env=test_env())
        return
    if args.webgpu:                         # the encoder on this machine's WebGPU adapter
        run([VENV_PY, "-m", "harness.bench_webgpu"], cwd=ROOT, env=test_env())
        return
    if args.overhead:                       # per-call overhead against a baseline
        run([VENV_PY, "-m", "harness.bench_overhead", "--base", Path(args.overhead).resolve()], cwd=ROOT, env=test_env())
        return
    if args.split:                          # the encoder split across threads / workers
        run([VENV_PY, "-m", "harness.bench_threads"], cwd=ROOT, env=test_env())
        run([VENV_PY, "-m", "harness.bench_workers"], cwd=ROOT, env=test_env())
        return
    cmd = [VENV_PY, "-m", "harness.bench"]
    if args.json:
        cmd += ["--json", Path(args.json).resolve()]
    if args.quick:
        cmd += ["--quick"]
    if args.runtimes:
        cmd += ["--runtimes", args.runtimes]
    if not args.e2e_only:
        run(cmd, cwd=ROOT, env=test_env())
    if args.no_e2e:
        return
    e2e = [VENV_PY, "-m", "harness.bench_e2e"]
    if args.json:
        e2e += ["--json", Path(str(Path(args.json).resolve()) + ".e2e.json")]
    if args.quick:
        e2e += ["--seconds", "10", "--browser-tiers", "wasm_simd128"]
    run(e2e, cwd=ROOT, env=test_env())


def cmd_demo(args):
    """The README's first command: set up what is missing, build, and serve the web app with
    the best model this machine has or can get (demo_model)."""
    build_all()
    model, description, note = demo_model(args)
    print(f"\ndemo model: {model.name}" + (f"\n  {note}" if note else ""), flush=True)
    site = cmd_site(argparse.Namespace(model=str(model), out=args.out, model_description=description,
                                       model_note=note))
    cmd_serve(argparse.Namespace(port=args.port, coop_coep=args.coop_coep, site=site))


PHONON2_DESCRIPTION = ("Phonon-2 (FermionResearch, CC-BY-4.0): NVIDIA Parakeet-TDT-0.6B-v3 with five-value "
                       "encoder weights. English speech from real voices.")


def demo_model(args) -> tuple:
    """(GGUF path, description or None, note or None) for `build.py demo --model M`:
    M = FILE, `phonon-2` (fetched if it is not cached; an error if that fails) or `bundled`.
    Without --model: Phonon-2 when it is cached or can be fetched, else the bundled model, with
    a note (terminal and page) saying why."""
    from modeltools.fetch import cached_model
    choice = args.model or "auto"
    if choice == "bundled":
        return default_model()[0], None, "The bundled demo model, as asked (--model bundled)."
    if choice not in ("auto", "phonon-2"):
        return site_model(choice)[0], None, None
    cached = cached_model("phonon-2")
    if cached:
        return cached, PHONON2_DESCRIPTION, None
    ok, detail = fetch_phonon2(getattr(args, "mirror", None))
    if ok:
        return Path(detail), PHONON2_DESCRIPTION, None
    if choice == "phonon-2":
        raise BuildError(f"--model phonon-2: it is not cached and could not be fetched: {detail}")
    bundled = default_model()[0]
    note = (f"Phonon-2 is not on this machine and could not be downloaded ({detail}), so the demo "
            f"runs the bundled model. Run `python3 build.py fetch phonon-2` when online, then "
            f"`python3 build.py demo` again.")
    print(f"\nwarning: {note}", file=sys.stderr, flush=True)
    return bundled, None, note


def fetch_phonon2(mirror: str | None) -> tuple:
    """Run the engine's fetch (in the .venv: conversion needs numpy): (True, gguf path) or
    (False, the reason it failed)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="phonon-fetch-") as tmp:
        status = Path(tmp) / "status.json"
        cmd = [VENV_PY, "-m", "modeltools", "fetch", "phonon-2", "--status-json", status]
        if mirror:
            cmd += ["--from", mirror]
        print("+ " + " ".join(str(c) for c in cmd), flush=True)
        subprocess.run(cmd, cwd=ROOT)
        try:
            result = json.loads(status.read_text())
        except (OSError, ValueError):
            return False, "the fetch stopped without a status"
    return (True, result["model"]) if result.get("ok") else (False, result.get("error", "unknown error"))


def cmd_fetch(args):
    """python3 build.py fetch phonon-2: the engine's fetch (download, pins, convert --verify into
    the cache), run in the .venv."""
    setup_venv()
    cmd = [VENV_PY, "-m", "modeltools", "fetch", args.name]
    for flag in ("mirror", "cache", "timeout", "retries", "sha256", "bytes"):
        value = getattr(args, flag)
        if value is not None:
            cmd += ["--from" if flag == "mirror" else f"--{flag}", str(value)]
    if args.force:
        cmd.append("--force")
    run(cmd, cwd=ROOT)


def cmd_docs(args):
    """The documents' generated tables from results/*.json (harness/documents.py); --check only
    compares and fails on a difference. Standard library only: runs before setup."""
    from harness.documents import main as results_main
    code = results_main(["--check"] if args.check else [])
    if code:
        sys.exit(f"build.py docs --check: a generated part differs from its result; run `python3 build.py docs` "
                 "after a benchmark, never edit the part or the result by hand")


def cmd_clean(args=None):
    for path in [BUILD, SITE, SITE_TINY, *LIB_DIR.glob("phonon_kernels*")]:
        if path.exists():
            print(f"+ rm -r {path.relative_to(ROOT)}")
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def add_fetch_arguments(parser):
    """The engine's own fetch options (modeltools/fetch.py is standard library until it converts)."""
    from modeltools.fetch import add_arguments
    add_arguments(parser)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="build.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("setup", "native", "wasm", "wheel", "parity", "clean"):
        sub.add_parser(name)
    site = sub.add_parser("site", help="the static web app (dist/site)")
    site.add_argument("--model", help="the GGUF to ship (default: models/phonon-small.gguf, else the tiny test model)")
    site.add_argument("--out", help="output folder (default: dist/site)")
    site.add_argument("--model-url", help="a model on another origin (the page fetches it with CORS; "
                                          "needs --model-sha256 and --model-bytes)")
    site.add_argument("--model-sha256", help="the --model-url model's sha256 (64 hex digits)")
    site.add_argument("--model-bytes", type=int, help="the --model-url model's size in bytes")
    site.add_argument("--model-name", help="the name the page shows for the --model-url model")
    site.add_argument("--no-gpu-digest", action="store_true",
                      help="skip the native encode of the WebGPU check's features (12 s for a full-size "
                           "model): a page on a GPU then checks it against its own wasm kernels, a CPU encode at load")
    sub.add_parser("pyodide", help="the Pyodide runtime files, the stdlib cut, with start-up bytecode (build/pyodide)")
    package = sub.add_parser("package", help="the runtime alone with its JavaScript API (dist/phonon-web)")
    package.add_argument("--out", help="output folder (default: dist/phonon-web)")
    for flag in ("--model", "--model-url", "--model-sha256", "--model-name"):
        package.add_argument(flag, help=site._option_string_actions[flag].help)
    package.add_argument("--pack", action="store_true",
                         help="then `npm pack` it: phonon-web-<version>.tgz beside the output folder")
    package.add_argument("--pack-destination", help="the folder --pack writes the tarball to")
    package.add_argument("--repository", help="the git URL package.json names (default: this checkout's remote)")
    package.add_argument("--model-bytes", type=int, help=site._option_string_actions["--model-bytes"].help)
    for name in ("serve", "demo"):
        serve = sub.add_parser(name, help="serve dist/site on 127.0.0.1" + (" after building it" if name == "demo" else ""))
        serve.add_argument("--port", type=int, help="default 8000 (any free port if 8000 is taken)")
        serve.add_argument("--coop-coep", action="store_true",
                           help="send COOP/COEP headers (cross-origin isolated: SharedArrayBuffer capture ring)")
    demo = sub.choices["demo"]
    demo.add_argument("--model", help="FILE.gguf, phonon-2 or bundled (default: Phonon-2 if cached or "
                                      "fetchable, else the bundled model)")
    demo.add_argument("--from", dest="mirror", metavar="URL", help="fetch Phonon-2 from this mirror folder")
    demo.add_argument("--out", help="site folder (default: dist/site)")
    fetch = sub.add_parser("fetch", help="download a model release into the cache and convert it")
    add_fetch_arguments(fetch)
    docs = sub.add_parser("docs", help="the documents' generated tables from results/*.json")
    docs.add_argument("--check", action="store_true", help="only compare: fail if a table differs from its result")
    test = sub.add_parser("test", help="run the whole test suite (in parallel; tests/README.md)")
    test.add_argument("--quick", action="store_true",
                      help="the development tier: native, Chromium and the parity sweep (under 4 minutes)")
    test.add_argument("--workers", "-n", type=int, metavar="N",
                      help="pytest-xdist workers (default: one per core and one more; 1: one process, in order)")
    test.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed to pytest")
    bench = sub.add_parser("bench", help="kernel benchmarks in every runtime")
    bench.add_argument("--json", help="write the records to this file")
    bench.add_argument("--quick", action="store_true", help="fewer repeats (smoke run)")
    bench.add_argument("--runtimes", help="comma list of native,node,chromium (default: all)")
    bench.add_argument("--no-e2e", action="store_true", help="kernels only (skip end-to-end transcription)")
    bench.add_argument("--e2e-only", action="store_true", help="end-to-end transcription only")
    bench.add_argument("--ort", action="store_true",
                       help="only the ONNX Runtime peer on the full-size encoder, natively and in Chromium")
    bench.add_argument("--schedule", action="store_true",
                       help="only the full-size model on the default model's streaming schedule, Chromium 1 vs 2 workers")
    bench.add_argument("--behind", action="store_true",
                       help="only streams that fall behind: lag reached and catch-up time in Chromium, API and page")
    bench.add_argument("--live", action="store_true",
                       help="only the full-size model fed at real time for 3 minutes, natively (1 thread) and in Chromium "
                            "(1 and 2 workers): today's schedule beside the microphone's (harness/bench_live.py)")
    bench.add_argument("--soak", action="store_true",
                       help="only a long live session (default 180 minutes of generated speech): poll cost, message "
                            "size and memory over time, through the engine worker's Python side (harness/bench_soak.py)")
    bench.add_argument("--minutes", type=float, help="--soak's length in minutes of audio")
    bench.add_argument("--engine", choices=["chromium", "firefox", "webkit", "webkit-sab"],
                       help="--soak in this browser engine, through the JavaScript API (harness/bench_soak_browser.py)")
    bench.add_argument("--pace", type=float, help="--soak --engine: times real time the audio is fed (default 1)")
    bench.add_argument("--engines", action="store_true",
                       help="only the browser engines side by side: start-up, RTFx and memory in Chromium, "
                            "Firefox ESR and WebKitGTK (harness/bench_engines.py)")
    bench.add_argument("--webgpu", action="store_true",
                       help="only the encoder on this machine's WebGPU adapter (named) through wgpu-py against the "
                            "best native CPU tier: times, counters, GPU buffer bytes, digests (harness/bench_webgpu.py)")
    bench.add_argument("--split", action="store_true",
                       help="only the encoder split: native threads 1 vs 2, then Chromium kernel workers 1 vs 2")
    bench.add_argument("--overhead", metavar="BASE",
                       help="only the default model against the built checkout BASE of a baseline commit, "
                            "natively and in Chromium, side by side (harness/bench_overhead.py)")
    args = parser.parse_args(argv)
    handler = globals()[f"cmd_{args.command}"]
    handler(args)


if __name__ == "__main__":
    main()
