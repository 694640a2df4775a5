"""Fetch a model release into the user's cache: download (resumable), check against the pins,
convert with --verify. Host-side (the conversion needs numpy, gguf and zstandard).

    python3 -m modeltools fetch phonon-2 [--from URL] [--cache DIR] [--timeout S] [--retries N]

The release (repository, revision, file, size, sha256) comes from pins.json's
`phonon2_release`. `--from URL` replaces the Hugging Face location with a folder URL that holds
the same file (a mirror; the tests' loopback server). The cache is `$PHONON_WEB_CACHE`, else
`~/.cache/phonon-web`:

    downloads/phonon-2.bps.tar.zst.part   while downloading: resumed with an HTTP Range request
    downloads/phonon-2.bps.tar.zst        the whole archive, only after its size and sha256 matched
    models/phonon-2.gguf                  the converted model, only after --verify passed
    models/phonon-2.json                  where it came from (URL, digests, sizes, when)

Nothing else is ever left behind: a wrong size or digest deletes the download, a failed
conversion deletes its output. Only an interrupted transfer keeps its `.part`, which the next
run resumes. Running it again when the model is cached does nothing.
"""

from __future__ import annotations

import json
import os
import argparse
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from engine.transcribe import cache_dir, cached_model   # where the runtime finds what a fetch left

from .digest import sha256_file

PINS = Path(__file__).resolve().parent.parent / "pins.json"
RELEASE_KEYS = {"phonon-2": "phonon2_release"}        # name on the command line -> pins.json key
CHUNK = 1 << 16
USER_AGENT = "phonon-web-fetch/1"


class FetchError(RuntimeError):
    """A fetch that cannot go on. `resumable`: the .part file is kept and a retry resumes it."""

    def __init__(self, message: str, resumable: bool = False):
        super().__init__(message)
        self.resumable = resumable


@dataclass
class Release:
    name: str                 # "phonon-2": the name of the cached files
    repo: str
    revision: str
    file: str                 # the archive's file name
    size: int | None          # None: not pinned
    sha256: str | None        # None: not pinned (the downloaded digest is recorded and shown)
    base_url: str
    licence: str = ""

    def url(self, mirror: str | None = None) -> str:
        if mirror:
            return mirror.rstrip("/") + "/" + self.file
        return f"{self.base_url.rstrip('/')}/{self.repo}/resolve/{self.revision}/{self.file}"


def release(name: str, pins_path: Path = PINS) -> Release:
    """The pinned release `name` (see RELEASE_KEYS)."""
    if name not in RELEASE_KEYS:
        raise FetchError(f"unknown model {name!r}: this command fetches {', '.join(RELEASE_KEYS)}")
    pins = json.loads(pins_path.read_text()).get(RELEASE_KEYS[name], {})
    return Release(name=name, repo=pins["repo"], revision=pins.get("revision") or "main",
                   file=pins["archive_name"], size=pins.get("archive_bytes") or None,
                   sha256=pins.get("archive_sha256") or None,
                   base_url=pins.get("base_url", "https://huggingface.co"), licence=pins.get("licence", ""))


# --------------------------------------------------------------------------------------------
# Progress

class Progress:
    """A byte progress bar on stderr: redrawn in place on a terminal (at most 5 times a second),
    a line per 10% otherwise (logs, CI)."""

    def __init__(self, label: str, stream=None):
        self.label, self.stream = label, stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = self.last = time.monotonic()
        self.first_byte = None
        self.reported_tenth = -1

    def update(self, done: int, total: int | None, resumed_from: int = 0):
        now = time.monotonic()
        if self.first_byte is None:
            self.first_byte = (now, resumed_from)
        rate = (done - self.first_byte[1]) / max(now - self.first_byte[0], 1e-6)
        if total:
            tenth = done * 10 // total
            text = (f"{self.label}  {done / 1e6:7.1f} / {total / 1e6:.1f} MB  {100 * done / total:3.0f}%"
                    f"  {rate / 1e6:5.1f} MB/s  ETA {_duration((total - done) / rate) if rate > 0 else '?'}")
        else:
            tenth = -1
            text = f"{self.label}  {done / 1e6:7.1f} MB  {rate / 1e6:5.1f} MB/s"
        if self.tty:
            if now - self.last >= 0.2 or (total and done >= total):
                self.stream.write("\r" + text.ljust(78))
                self.stream.flush()
                self.last = now
        elif tenth > self.reported_tenth:
            self.reported_tenth = tenth
            self.stream.write(text + "\n")
            self.stream.flush()

    def done(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


# --------------------------------------------------------------------------------------------
# Download

def download(url: str, part: Path, size: int | None, timeout: float, progress: Progress):
    """Bring `part` up to the whole file at `url`, resuming from what it holds with a Range
    request. Raises FetchError: resumable for a stall or a dropped connection, not for an HTTP
    error or a size that contradicts the pins."""
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have > size:
        part.unlink()
        have = 0
    if size is not None and have == size:
        return
    headers = {"User-Agent": USER_AGENT}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:
            return                          # nothing after `have`: the digest decides whether it is whole
        raise FetchError(_http_error(url, e.code, e.reason)) from None
    except urllib.error.URLError as e:
        reason = e.reason
        if isinstance(reason, TimeoutError):
            raise FetchError(f"{_host(url)} did not answer within {timeout:g} s", resumable=True) from None
        raise FetchError(f"cannot reach {_host(url)} ({getattr(reason, 'strerror', None) or reason})") from None
    except TimeoutError:
        raise FetchError(f"{_host(url)} did not answer within {timeout:g} s", resumable=True) from None
    with response:
        have, total = _start_position(response, have, part)
        if size is not None and total is not None and total != size:
            raise FetchError(f"{url} is {total:,} bytes; pins.json says {size:,}: not the pinned file")
        with open(part, "ab" if have else "wb") as out:
            resumed_from = have
            progress.update(have, total or size, resumed_from)
            while True:
                try:
                    chunk = response.read(CHUNK)
                except TimeoutError:
                    raise FetchError(f"the download stalled: no data for {timeout:g} s after "
                                     f"{have:,} bytes", resumable=True) from None
                except OSError as e:
                    raise FetchError(f"the connection broke after {have:,} bytes ({e})", resumable=True) from None
                if not chunk:
                    break
                out.write(chunk)
                have += len(chunk)
                if size is not None and have > size:
                    raise FetchError(f"{url} sent more than the pinned {size:,} bytes: not the pinned file")
                progress.update(have, total or size, resumed_from)
    expected = total or size
    if expected is not None and have < expected:
        raise FetchError(f"the connection closed after {have:,} of {expected:,} bytes", resumable=True)


def _start_position(response, have: int, part: Path) -> tuple:
    """(bytes already held that this response continues, the file's total size or None). A
    server that ignores Range answers 200 with the whole file: start over."""
    length = response.headers.get("Content-Length")
    if have and response.status == 206:
        match = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", response.headers.get("Content-Range", ""))
        if not match or int(match.group(1)) != have:
            raise FetchError(f"the server resumed at the wrong place ({response.headers.get('Content-Range')!r} "
                             f"for bytes={have}-)")
        total = None if match.group(3) == "*" else int(match.group(3))
        return have, total
    if have:
        print("  (the server does not resume downloads: starting again from byte 0)", file=sys.stderr)
    return 0, int(length) if length and length.isdigit() else None


def _http_error(url: str, code: int, reason: str) -> str:
    if code == 404:
        return (f"{url}: not found (HTTP 404). The file or the pinned revision is not there; "
                f"--from URL fetches from a mirror")
    return f"{url}: HTTP {code} {reason}"


def _host(url: str) -> str:
    return urllib.request.urlparse(url).netloc or url


def download_verified(rel: Release, url: str, downloads: Path, timeout: float, retries: int,
                      log=print) -> tuple:
    """downloads/<file>, whole and matching the pins: (path, sha256). Retries resumable failures
    `retries` times (a second apart, resuming); a wrong size or digest deletes the download."""
    downloads.mkdir(parents=True, exist_ok=True)
    final, part = downloads / rel.file, downloads / (rel.file + ".part")
    if final.exists():
        digest = sha256_file(final)
        if rel.sha256 is None or digest == rel.sha256:
            return final, digest
        final.unlink()                                    # an older or damaged copy
    progress = Progress(rel.file)
    for attempt in range(retries + 1):
        try:
            download(url, part, rel.size, timeout, progress)
            break
        except FetchError as e:
            if not e.resumable:
                part.unlink(missing_ok=True)
                raise
            if attempt == retries:
                progress.done()
                held = part.stat().st_size if part.exists() else 0
                raise FetchError(f"{e}. {held:,} bytes are kept: run the same command again to resume",
                                 resumable=True) from None
            progress.done()
            log(f"  {e}; retrying ({attempt + 1} of {retries})")
            time.sleep(1.0)
    progress.done()
    digest = sha256_file(part)
    if rel.size is not None and part.stat().st_size != rel.size:
        part.unlink()
        raise FetchError(f"the download is {part.stat().st_size:,} bytes; pins.json says {rel.size:,}; deleted")
    if rel.sha256 is not None and digest != rel.sha256:
        part.unlink()
        raise FetchError(f"the download's sha256 is {digest}, pins.json says {rel.sha256}: it is not the "
                         f"pinned file and was deleted")
    os.replace(part, final)
    return final, digest


# --------------------------------------------------------------------------------------------
# Fetch = download + convert + record

def fetch(name: str, mirror: str | None = None, cache: Path | None = None, timeout: float = 30.0,
          retries: int = 2, force: bool = False, rel: Release | None = None, log=print) -> Path:
    """The converted model for `name` in the cache (fetched and converted if needed)."""
    from . import convert as conv
    rel = rel or release(name)
    cache = cache or cache_dir()
    cached = None if force else cached_model(rel.name, cache, rel.sha256)
    if cached:
        log(f"{rel.name}: already in the cache ({cached})")
        return cached
    url = rel.url(mirror)
    log(f"{rel.name}: downloading {url}" + (f" ({rel.size:,} bytes)" if rel.size else ""))
    archive, digest = download_verified(rel, url, cache / "downloads", timeout, retries, log)
    if rel.sha256 is None:
        log(f"WARNING: pins.json pins no sha256 for {rel.name}; the downloaded archive's is\n"
            f"WARNING:   {digest}\nWARNING: recorded in {cache / 'models' / (rel.name + '.json')}. "
            f"Add it to pins.json to pin it.")
    else:
        log(f"{rel.name}: sha256 {digest} matches pins.json")
    models = cache / "models"
    models.mkdir(parents=True, exist_ok=True)
    gguf = models / f"{rel.name}.gguf"
    with tempfile.TemporaryDirectory(prefix=".convert-", dir=cache) as tmp:
        staged = Path(tmp) / gguf.name
        summary = convert_archive(conv, archive, staged, rel, log)
        os.replace(staged, gguf)
    record = {"name": rel.name, "repo": rel.repo, "revision": rel.revision, "url": url,
              "archive": rel.file, "archive_bytes": archive.stat().st_size, "archive_sha256": digest,
              "archive_sha256_pinned": rel.sha256 is not None, "gguf": gguf.name,
              "gguf_bytes": gguf.stat().st_size, "gguf_sha256": sha256_file(gguf),
              "licence": rel.licence, "verify": summary,
              "fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    _write_json_atomically(models / f"{rel.name}.json", record)
    log(f"{rel.name}: {gguf} ({record['gguf_bytes']:,} bytes)")
    return gguf


def convert_archive(conv, archive: Path, out: Path, rel: Release, log) -> str:
    """The converter's own path (extract, pins, artifact digests, convert, --verify) into `out`;
    returns --verify's summary. `out` is removed on any failure."""
    try:
        with tempfile.TemporaryDirectory(prefix=".extract-", dir=out.parent) as tmp:
            container, config_path = conv.extract_archive(archive, Path(tmp))
            config = conv.read_config(config_path)
            conv.check_artifact(config, container)
            name = conv.model_id(config) or rel.repo
            log(f"{rel.name}: converting to GGUF")
            conv.convert(container, config, out, conv.PHONON2_NOTICE, name)
            summary = conv.verify(container, out)
            log(f"{rel.name}: --verify: {summary}")
            return summary
    except BaseException:
        out.unlink(missing_ok=True)
        raise


def _write_json_atomically(path: Path, data: dict):
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# Command line (python3 -m modeltools fetch)

def add_arguments(parser):
    parser.add_argument("name", choices=sorted(RELEASE_KEYS), help="the model to fetch")
    parser.add_argument("--from", dest="mirror", metavar="URL",
                        help="a folder URL holding the same archive (default: Hugging Face, pinned revision)")
    parser.add_argument("--cache", help="cache folder (default: $PHONON_WEB_CACHE or ~/.cache/phonon-web)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds without data before the download counts as stalled (default 30)")
    parser.add_argument("--retries", type=int, default=2, help="resumed retries after a stall (default 2)")
    parser.add_argument("--force", action="store_true", help="convert again even if the model is cached")
    parser.add_argument("--sha256", help="with --from: the mirror's archive has this sha256 instead of the pinned one")
    parser.add_argument("--bytes", type=int, help="with --from: the mirror's archive has this size instead of the pinned one")
    parser.add_argument("--status-json", help=argparse.SUPPRESS)


def main(args) -> int:
    """Returns 0, or 1 after printing the reason; --status-json FILE also writes
    {"ok", "model" or "error"} (how build.py demo learns why a fetch failed)."""
    status = {"ok": False}
    try:
        rel = release(args.name)
        if args.sha256 is not None or args.bytes is not None:
            if not args.mirror:
                raise FetchError("--sha256 and --bytes describe a mirror's archive: they need --from URL")
            if not (args.sha256 and re.fullmatch(r"[0-9a-f]{64}", args.sha256)) or not args.bytes or args.bytes <= 0:
                raise FetchError("--sha256 needs 64 lowercase hex digits and --bytes a positive size, together")
            print(f"{args.name}: the mirror's archive is pinned by --sha256/--bytes, not by pins.json", file=sys.stderr)
            rel.sha256, rel.size = args.sha256, args.bytes
        path = fetch(args.name, mirror=args.mirror, cache=Path(args.cache) if args.cache else None,
                     timeout=args.timeout, retries=args.retries, force=args.force, rel=rel)
        status = {"ok": True, "model": str(path)}
        print(path)
        return 0
    except (FetchError, OSError, ValueError) as e:
        status = {"ok": False, "error": str(e)}
        print(f"fetch {args.name}: {e}", file=sys.stderr)
        return 1
    finally:
        if args.status_json:
            Path(args.status_json).write_text(json.dumps(status) + "\n")
