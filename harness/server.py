"""A small static file server for the harness (and the site later): URL prefixes mapped to
directories, correct MIME types for .wasm/.mjs/.whl, no caching, optional COOP/COEP headers.
Loopback only."""

from __future__ import annotations

import mimetypes
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

MIME = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
        ".whl": "application/zip", ".json": "application/json", ".onnx": "application/octet-stream",
        ".zip": "application/zip"}


class _Handler(SimpleHTTPRequestHandler):
    def __init__(self, *args, routes, isolate, **kwargs):
        self.routes, self.isolate = routes, isolate
        super().__init__(*args, **kwargs)

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
        return MIME.get(Path(path).suffix, mimetypes.guess_type(path)[0] or "application/octet-stream")

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        if self.isolate:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def log_message(self, fmt, *args):
        pass


class StaticServer:
    """`routes`: {"/prefix/": directory}; longest prefix wins. Use as a context manager."""

    def __init__(self, routes: dict, port: int = 0, isolate: bool = False):
        ordered = sorted(((p, Path(d)) for p, d in routes.items()), key=lambda r: -len(r[0]))
        handler = partial(_Handler, routes=ordered, isolate=isolate)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
