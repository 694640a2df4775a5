"""The nginx the site's host test starts (harness/nginx.py) serves a site wherever the checkout
lives and whoever runs the suite: a site under a private folder (mode 0700, what `mktemp -d`
makes, root's home, a container's work folder), and when it cannot read its files the failure
names the cause from nginx's own log instead of waiting out a timeout."""

from __future__ import annotations

import os
import urllib.request

import pytest

from harness import nginx


def private_site(tmp_path):
    """A small site two levels under a folder only its owner may enter: [folder, site]."""
    private = tmp_path / "private"
    site = private / "clone" / "dist" / "site"
    site.mkdir(parents=True)
    (site / "index.html").write_text("<!doctype html><title>phonon</title>\n")
    (site / "kernels.wasm").write_bytes(b"\0asm\1\0\0\0")
    private.chmod(0o700)
    return site


@pytest.mark.skipif(os.geteuid() != 0, reason="run as another user, nginx's workers are that user "
                    "and read whatever the checkout's owner reads: the private-folder case is root's")
def test_nginx_serves_a_checkout_under_a_private_folder_as_root(tmp_path):
    site = private_site(tmp_path)
    with nginx.Nginx(site, "/apps/phonon/") as host:
        with urllib.request.urlopen(host.url) as answer:
            assert answer.status == 200 and b"<title>phonon</title>" in answer.read()
        with urllib.request.urlopen(host.url + "kernels.wasm") as answer:
            assert answer.headers["Content-Type"] == "application/wasm"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's nginx switches its workers to another user")
def test_a_host_that_may_not_read_the_site_says_so_at_once(tmp_path, monkeypatch):
    """Without the `user` line a root nginx's workers are `nobody`: the error carries nginx's
    "Permission denied" line and comes on the first 403, not after the 20 s wait."""
    import time
    site = private_site(tmp_path)
    monkeypatch.setattr(nginx, "worker_user", lambda: "")
    started = time.monotonic()
    with pytest.raises(RuntimeError) as failure:
        with nginx.Nginx(site, "/apps/phonon/"):
            pass
    message = str(failure.value)
    assert "answered 403" in message and "Permission denied" in message, message
    assert time.monotonic() - started < 10


def test_the_workers_run_as_the_user_who_started_nginx():
    import pwd
    line = nginx.worker_user()
    if os.geteuid() == 0:
        assert line.startswith(f"user {pwd.getpwuid(0).pw_name} ")
    else:
        assert line == ""                   # nginx ignores `user` for an unprivileged master
