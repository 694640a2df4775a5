"""Measure the web app (dist/site) in headless Chromium, the way a user meets it:

- page open -> "ready", cold (fresh profile: the service worker caches the shell, the model is
  downloaded) and warm (reload: shell and model from Cache Storage), with the stages;
- time to first partial after speech starts (fake microphone playing espeak-ng speech: wall
  time from the speech onset in the captured audio to the first partial text on the page),
  and the engine's own figure in audio time;
- commit lag p50/p95 and compute per audio second from the stream's stats;
- memory: the page's JS heap (performance.memory, peak of samples), the worker's wasm heap
  (Pyodide's memory, which only grows: its final size is its peak) and the renderer process's
  peak RSS (VmHWM; pages and workers share that process here).

    python3 build.py site
    .venv/bin/python -m harness.measure_site [--site dist/site] [--runs 3] [--json out.json]

Served from loopback, so "cold" has no network latency: it is start-up cost, not download time
(add model bytes / bandwidth for a real network).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from array import array
from pathlib import Path

from .server import StaticServer
from .site_check import SiteBrowser, speech_wav

ROOT = Path(__file__).resolve().parent.parent
SUB = "/app/"


def speech_onset(samples: bytes, rate: int, dbfs: float = -40.0) -> float:
    """Seconds to the first 20 ms block whose RMS is above `dbfs`."""
    x = array("f")
    x.frombytes(samples)
    block = rate // 50
    limit = 10 ** (dbfs / 10) * block
    for i in range(0, len(x) - block, block):
        if sum(v * v for v in x[i:i + block]) > limit:
            return i / rate
    return float("nan")


def renderer_peak_rss(browser) -> int | None:
    """Largest VmHWM of the browser's renderer processes (Linux), via CDP's process list."""
    try:
        cdp = browser.browser.new_browser_cdp_session()
        info = cdp.send("SystemInfo.getProcessInfo")["processInfo"]
    except Exception:                           # noqa: BLE001 - best effort
        return None
    peak = None
    for p in info:
        if p.get("type") != "renderer":
            continue
        try:
            status = Path(f"/proc/{p['id']}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                kib = int(line.split()[1])
                peak = max(peak or 0, kib * 1024)
    return peak


def one_run(browser, url: str, seconds: float) -> dict:
    context = browser.context()
    app = browser.open(url + "?debug=1", context)
    assert app.state == "ready", app.alert()
    cold = app.phonon()
    app.reload()
    assert app.state == "ready", app.alert()
    warm = app.phonon()
    js_heap = []
    sampler = "performance.memory ? performance.memory.usedJSHeapSize : null"
    js_heap.append(app.page.evaluate(sampler))
    run = app.listen(seconds)
    js_heap.append(app.page.evaluate(sampler))
    samples, rate = app.captured()
    onset = speech_onset(samples, rate)
    start = run["timings"]["captureStart"]
    first = next((p for p in run["partials"] if p["committed"] or p["tentative"]), None)
    m = run["metrics"]
    out = {
        "cold_ready_ms": round(cold["timings"]["ready"]),
        "cold_stages_ms": stages(cold),
        "warm_ready_ms": round(warm["timings"]["ready"]),
        "warm_stages_ms": stages(warm),
        "model_source_warm": warm["ready"]["modelSource"],
        "tier": cold["ready"]["tier"],
        "sample_rate": rate,
        "transport": run["transport"],
        "speech_onset_s": round(onset, 3),
        "first_partial_after_speech_ms": round(first["t"] - (start + onset * 1000)) if first else None,
        "first_partial_latency_audio_s": m["first_partial_latency_seconds"],
        "commit_lag_p50_s": m["commit_lag_p50_seconds"],
        "commit_lag_p95_s": m["commit_lag_p95_seconds"],
        "compute_per_audio": m["compute_per_audio"],
        "decodes": m["decodes"],
        "js_heap_peak_bytes": max((h for h in js_heap if h), default=None),
        "wasm_heap_bytes": run["heap"],
        "renderer_peak_rss_bytes": renderer_peak_rss(browser),
        "text": run["result"]["text"],
    }
    context.close()
    return out


def stages(info: dict) -> dict:
    t = info["timings"]
    return {k: round(t[k]) for k in ("serviceWorker", "runtime", "engine", "model", "compile", "ready") if k in t}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default=str(ROOT / "dist" / "site"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="write the runs and medians here")
    args = parser.parse_args(argv)
    site = Path(args.site)
    manifest = json.loads((site / "manifest.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "speech.wav"
        seconds = speech_wav(wav)
        with StaticServer({SUB: site}) as server, SiteBrowser(fake_mic=wav) as browser:
            runs = []
            for i in range(args.runs):
                runs.append(one_run(browser, server.url + SUB, seconds + 1.0))
                print(f"run {i + 1}: " + json.dumps({k: v for k, v in runs[-1].items() if not k.endswith("stages_ms")}),
                      flush=True)
            version = browser.browser.version
    keys = ["cold_ready_ms", "warm_ready_ms", "first_partial_after_speech_ms", "first_partial_latency_audio_s",
            "commit_lag_p50_s", "commit_lag_p95_s", "compute_per_audio", "js_heap_peak_bytes",
            "wasm_heap_bytes", "renderer_peak_rss_bytes"]
    median = {k: statistics.median(r[k] for r in runs if r[k] is not None)
              if any(r[k] is not None for r in runs) else None for k in keys}
    model = manifest["model"]
    print(f"\nChromium {version}, model {model['path']} ({model['size']:,} bytes), tier {runs[0]['tier']}, "
          f"{runs[0]['sample_rate']} Hz capture, medians of {len(runs)} runs:\n")
    def mib(b):
        return f"{b / 2**20:.0f} MiB" if b else "n/a"
    rows = [("page open -> ready, cold (shell + model downloaded, service worker install)", f"{median['cold_ready_ms'] / 1000:.2f} s"),
            ("page open -> ready, warm (shell + model from Cache Storage)", f"{median['warm_ready_ms'] / 1000:.2f} s"),
            ("speech onset -> first partial on the page (wall clock)", f"{median['first_partial_after_speech_ms']} ms"
             if median["first_partial_after_speech_ms"] is not None else "no text"),
            ("first partial latency in audio time (engine metric)", f"{median['first_partial_latency_audio_s']} s"),
            ("commit lag p50 / p95 (engine stats)", f"{median['commit_lag_p50_s']} / {median['commit_lag_p95_s']} s"),
            ("stream compute / audio", f"{median['compute_per_audio']}"),
            ("page JS heap, peak sampled (performance.memory)", mib(median["js_heap_peak_bytes"])),
            ("worker wasm heap (Pyodide memory, final = peak)", mib(median["wasm_heap_bytes"])),
            ("renderer process peak RSS (VmHWM)", mib(median["renderer_peak_rss_bytes"]))]
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print("\ncold stages (ms since navigation): " + json.dumps(runs[0]["cold_stages_ms"]))
    print("warm stages (ms since navigation): " + json.dumps(runs[0]["warm_stages_ms"]))
    if args.json:
        Path(args.json).write_text(json.dumps({"chromium": version, "model": model, "runs": runs,
                                               "median": median}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
