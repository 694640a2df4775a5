"""A small static file server for the harness, the tests and `python3 build.py serve|demo`:
URL prefixes mapped to directories, correct MIME types for .wasm/.mjs/.whl, Cache-Control
(tests: no-store; `build.py serve|demo` and the benchmarks: no-cache, a host's advised setting),
optional COOP/COEP headers, optional CORS headers (a model host for another origin), a log of
the paths requested. Loopback only. Standard library
only (build.py imports it before anything is installed)."""

from __future__ import annotations

import mimetypes
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

MIME = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
        ".whl": "application/zip", ".json": "application/json", ".onnx": "application/octet-stream",
        ".zip": "application/zip", ".gguf": "application/octet-stream", ".svg": "image/svg+xml",
        ".css": "text/css", ".html": "text/html; charset=utf-8", ".txt": "text/plain; charset=utf-8"}


class _Handler(SimpleHTTPRequestHandler):
    def __init__(self, *args, routes, isolate, log, cors=False, headers=None, types=None, cache="no-store", **kwargs):
        self.routes, self.isolate, self.request_log, self.cors, self.cache = routes, isolate, log, cors, cache
        self.extra_headers, self.types = headers or {}, {**MIME, **(types or {})}
        super().__init__(*args, **kwargs)

    def send_head(self):
        self.request_log.append(urlsplit(self.path).path)
        return super().send_head()

    def translate_path(self, path):
        path = unquote(urlsplit(path).path)
        for prefix, directory in self.routes:
            if path.startswith(prefix):
                rel = path[len(prefix):].lstrip("/")
                target = (directory / rel).resolve()
                if directory.resolve() in target.parents or target == directory.resolve():
                    return str(target)
                return str(directory / "__forbidden__")
        return str(Path("/nonexistent"))

    def guess_type(self, path):
        return self.types.get(Path(path).suffix, mimetypes.guess_type(path)[0] or "application/octet-stream")

    def end_headers(self):
        self.send_header("Cache-Control", self.cache)
        if self.cors:                       # a model host for pages on other origins
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Cross-Origin-Resource-Policy", "cross-origin")
        if self.isolate:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        for name, value in self.extra_headers.items():
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, fmt, *args):
        pass


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A client that went away mid-response (a page closed, a download cancelled: the tests
        do both) is not an error of the server's; anything else is printed as before."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (port 0: any free one) running in a daemon thread while used
    as a context manager; `url` is its address."""

    def __init__(self, handler, port: int = 0):
        self.httpd = _Server(("127.0.0.1", port), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class StaticServer(LoopbackServer):
    """`routes`: {"/prefix/": directory}; longest prefix wins. Use as a context manager."""

    def __init__(self, routes: dict, port: int = 0, isolate: bool = False, cors: bool = False,
                 headers: dict | None = None, types: dict | None = None, cache: str = "no-store"):
        """headers: more response headers (a host's Content-Security-Policy, say); types:
        {".suffix": MIME type} over MIME (a misconfigured host, in tests); cache: the
        Cache-Control value. "no-store" keeps each test's requests its own; "no-cache" is what a
        host should send: the browser keeps each file and revalidates it (a 304 from
        If-Modified-Since), and Chromium keeps its compiled WebAssembly with the cached
        response, which no-store throws away (a returning visit compiles Pyodide again)."""
        ordered = sorted(((p, Path(d)) for p, d in routes.items()), key=lambda r: -len(r[0]))
        self.log: list[str] = []                 # every path requested (GET and HEAD), in order
        super().__init__(partial(_Handler, routes=ordered, isolate=isolate, log=self.log, cors=cors,
                                 headers=headers, types=types, cache=cache), port)

    def serve_forever(self):
        """In the foreground until Ctrl-C."""
        try:
            self.httpd.serve_forever()
        except KeyboardInterrupt:
            print("\nstopped")
        finally:
            self.httpd.server_close()


# -- another program serving on loopback (nginx, a bundler's dev server) ---------------------------

def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(url: str, proc, seconds: float, what: str, output=lambda: "") -> None:
    """Poll `url` until it answers 200; a RuntimeError naming the cause (the last HTTP status or
    connection error, and output(): the server's own log) if `proc` exits first or `seconds` pass
    (then the process is stopped). A 403 ends the wait at once: a server that may not read its
    files will not learn to while we wait."""
    import time
    import urllib.error
    import urllib.request
    deadline = time.time() + seconds
    last = "no answer"
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except urllib.error.HTTPError as e:
            last = f"answered {e.code} {e.reason} for {url}"
            if e.code == 403:
                stop_process(proc)
                raise RuntimeError(f"{what} {last} (it may not read the files it serves): {output()}") from None
        except OSError as e:
            last = f"{type(e).__name__}: {e}"
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited (code {proc.returncode}): {output()}") from None
        time.sleep(0.2)
    stop_process(proc)
    raise RuntimeError(f"{what} did not answer 200 within {seconds:.0f} s ({last}): {output()}")


def stop_process(proc) -> None:
    import subprocess
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()

