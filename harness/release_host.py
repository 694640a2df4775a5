"""A loopback stand-in for the model release host (Hugging Face), for the fetch tests: serves the
files of one folder with HTTP Range support, and misbehaves on request the ways real networks
do: drop the connection after N bytes, stall (send nothing) after N bytes, ignore Range.
Standard library only."""

from __future__ import annotations

import re
import time
from functools import partial
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from .server import LoopbackServer


class Faults:
    """What the next responses do wrong. `drop_after` / `stall_after`: a byte offset in the
    file; the first response that reaches it drops the connection or stops sending (for
    `stall_seconds`), then the fault is spent (a retry gets the rest)."""

    def __init__(self):
        self.drop_after: int | None = None
        self.stall_after: int | None = None
        self.stall_seconds = 30.0
        self.ignore_range = False


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def __init__(self, *args, root: Path, faults: Faults, log: list, **kwargs):
        self.root, self.faults, self.request_log = root, faults, log
        super().__init__(*args, **kwargs)

    def do_GET(self):
        self.request_log.append((self.path, self.headers.get("Range")))
        path = (self.root / self.path.lstrip("/")).resolve()
        if self.root.resolve() not in path.parents or not path.is_file():
            self.send_error(404, "Not Found")
            return
        data = path.read_bytes()
        start = self._range_start(len(data))
        if start is None:
            return
        body = data[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self._send_body(body, start)

    def _range_start(self, size: int) -> int | None:
        header = self.headers.get("Range")
        if not header or self.faults.ignore_range:
            return 0
        match = re.fullmatch(r"bytes=(\d+)-", header)
        if not match:
            self.send_error(400, "Bad Range")
            return None
        start = int(match.group(1))
        if start >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return start

    def _send_body(self, body: bytes, start: int):
        f = self.faults
        for offset in range(0, len(body), 1 << 14):
            position = start + offset
            if f.drop_after is not None and position >= f.drop_after:
                f.drop_after = None
                self.close_connection = True
                self.connection.shutdown(2)          # the connection breaks mid-body
                return
            if f.stall_after is not None and position >= f.stall_after:
                f.stall_after = None
                self.wfile.flush()
                time.sleep(f.stall_seconds)          # the body stops arriving
                self.close_connection = True
                return
            self.wfile.write(body[offset:offset + (1 << 14)])

    def log_message(self, fmt, *args):
        pass


class ReleaseHost(LoopbackServer):
    """Serve `root` on 127.0.0.1 (any free port); `faults` changes behaviour between requests;
    `log` holds (path, Range header) of every GET. Use as a context manager."""

    def __init__(self, root: Path):
        self.faults, self.log = Faults(), []
        super().__init__(partial(_Handler, root=Path(root), faults=self.faults, log=self.log))
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False          # a stalled response must not hold up the exit
