"""A real static host for the site's tests: Debian's nginx on a free loopback port, serving a
built site from a sub-path the way README says a static host should - MIME types (.wasm as
application/wasm, .mjs as text/javascript), the precompressed `<file>.br` and `<file>.gz` beside
each file for browsers that accept them (`brotli_static on`, Debian's libnginx-mod-http-brotli-static;
`gzip_static on`), the cross-origin isolation headers that let the
page run kernel workers, and revalidation for the files that name a build (index.html, sw.js,
manifest.json). Its own prefix folder (config, logs, temp), stopped at the end of the block.

Who reads the files: nginx's workers run as the user who started it. Started by root, nginx
would otherwise switch its workers to `nobody`, which cannot enter a checkout under a private
folder (mode 0700: what `mktemp -d` makes, root's home, a container's work folder) and answers
403 for every file; so as root the config names root as the workers' user (`worker_user`).
Loopback only, serving the project's own build, for the length of a test.

    with Nginx(site, "/apps/phonon/") as host:
        page.goto(host.url)               # http://127.0.0.1:PORT/apps/phonon/
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.server import free_port, stop_process, wait_until_serving

def nginx_types() -> dict:
    """{MIME type: "ext ext"} from the project's own table (harness/server.py MIME), the types
    the site needs (nginx's `types` block replaces its defaults, so it is complete here)."""
    from harness.server import MIME
    out = {}
    for ext, mime in MIME.items():
        out.setdefault(mime.split(";")[0], []).append(ext.lstrip("."))
    out.setdefault("image/png", []).append("png")
    return {mime: " ".join(exts) for mime, exts in out.items()}


def nginx_binary() -> str:
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/bin/nginx") if Path(p).exists()), None)
    if not found:
        raise RuntimeError("nginx is not installed (Debian package nginx: `python3 build.py setup` installs it)")
    return found


BROTLI_STATIC = Path("/usr/lib/nginx/modules/ngx_http_brotli_static_module.so")


def worker_user() -> str:
    """The `user` directive for nginx's workers: the user running the tests, when that is root
    (nginx honours the directive only for a root master, and warns about it otherwise)."""
    import grp
    import os
    import pwd
    if os.geteuid() != 0:
        return ""
    return f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};\n"


def config(root: Path, site: Path, prefix: str, port: int, isolate: bool) -> str:
    types = "\n".join(f"        {mime} {exts};" for mime, exts in nginx_types().items())
    isolation = ("add_header Cross-Origin-Opener-Policy same-origin always;\n"
                 "            add_header Cross-Origin-Embedder-Policy require-corp always;\n"
                 "            add_header Cross-Origin-Resource-Policy same-origin always;") if isolate else ""
    if not BROTLI_STATIC.exists():
        raise RuntimeError(f"{BROTLI_STATIC} is missing (Debian package libnginx-mod-http-brotli-static: "
                           "`python3 build.py setup` installs it)")
    return f"""load_module {BROTLI_STATIC};
{worker_user()}worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 64; }}
http {{
    log_format bytes '$status $body_bytes_sent $uri';
    access_log {root}/access.log bytes;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    types {{
{types}
    }}
    default_type application/octet-stream;
    sendfile on;
    map $uri $revalidate {{
        ~(/|index\\.html|sw\\.js|manifest\\.json)$ "no-cache";
        default "";
    }}
    server {{
        listen 127.0.0.1:{port};
        location {prefix} {{
            alias {site}/;
            brotli_static on;
            gzip_static on;
            {isolation}
            add_header Cache-Control $revalidate always;
        }}
    }}
}}
"""


class Nginx:
    def __init__(self, site: Path, prefix: str = "/apps/phonon/", isolate: bool = True):
        assert prefix.startswith("/") and prefix.endswith("/"), prefix
        self.site, self.prefix, self.isolate = Path(site).resolve(), prefix, isolate

    def __enter__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="phonon-nginx-")
        root = Path(self._tmp.name)
        self.port = free_port()
        conf = root / "nginx.conf"
        conf.write_text(config(root, self.site, self.prefix, self.port, self.isolate))
        self.proc = subprocess.Popen([nginx_binary(), "-p", str(root), "-c", str(conf), "-e", str(root / "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until_serving(self.url, self.proc, 20, "nginx", self.errors)
        return self

    def errors(self) -> str:
        """nginx's error log so far (why a file could not be read, why it did not start)."""
        log = Path(self._tmp.name) / "error.log"
        return log.read_text().strip() if log.exists() else "(no error log)"

    def served(self) -> list:
        """[(status, body bytes sent, path)] of every request so far (nginx's access log)."""
        log = Path(self._tmp.name) / "access.log"
        rows = []
        for line in log.read_text().splitlines() if log.exists() else []:
            status, sent, path = line.split(" ", 2)
            rows.append((int(status), int(sent), path))
        return rows

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    def __exit__(self, *exc):
        stop_process(self.proc)
        self._tmp.cleanup()
