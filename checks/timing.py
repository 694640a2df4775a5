"""Jobs that need nothing of the engine but `Engine.from_buffer(model, tier, threads=1)` and
`transcribe(samples)`, so an older checkout's engine runs them too: harness/bench_overhead.py
times today's engine and a baseline commit's side by side in one machine session, natively and
in Chromium (where this module, shipped as the baseline's checks.jobs, is all it imports).

    result_json = await run("time_transcribe", '{"model": {...}, "audio": {...}, "tier": "auto"}')
"""

from __future__ import annotations

import base64
import json
import statistics
import time
from array import array

JOBS = {}


def job(fn):
    JOBS[fn.__name__] = fn
    return fn


async def run(name: str, args_json: str = "{}") -> str:
    """Run job `name` with the JSON object `args_json` as keyword arguments; its result as JSON."""
    if name not in JOBS:
        raise ValueError(f"unknown job {name!r}; jobs: {', '.join(sorted(JOBS))}")
    return json.dumps(await JOBS[name](**json.loads(args_json)))


async def read_bytes(source: dict) -> bytearray:
    """{"base64": s} or {"url": u} -> one writable bytearray (the kernels take its tensors
    zero-copy). A URL is fetched into the wasm heap with one copy: JS ArrayBuffer -> bytearray
    (response.bytes() + bytearray() would hold two)."""
    if "base64" in source:
        return bytearray(base64.b64decode(source["base64"]))
    import js
    from pyodide.http import pyfetch
    response = await pyfetch(source["url"])
    if not response.ok:
        raise OSError(f"{source['url']}: HTTP {response.status}")
    data = js.Uint8Array.new(await response.js_response.arrayBuffer())
    out = bytearray(data.length)
    data.assign_to(out)
    return out


async def read_floats(source: dict) -> array:
    samples = array("f")
    samples.frombytes(bytes(await read_bytes(source)))
    return samples


@job
async def time_transcribe(model, audio, tier="auto", warmup=3, repeats=20):
    """Batch transcription of float32 16 kHz `audio`, one worker: {"tier", "text", "seconds":
    [each of `repeats` runs after `warmup`], "median_seconds", "audio_seconds"}."""
    from engine.transcribe import Engine
    model, audio = await read_bytes(model), await read_floats(audio)
    engine = Engine.from_buffer(model, tier, threads=1)
    for _ in range(warmup):
        result = engine.transcribe(audio)
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        engine.transcribe(audio)
        seconds.append(time.perf_counter() - started)
    return {"tier": engine.tier, "text": result["text"], "seconds": [round(s, 6) for s in seconds],
            "median_seconds": round(statistics.median(seconds), 6), "audio_seconds": round(len(audio) / 16000, 3)}
