"""The jobs tests and benchmarks run inside a runtime (CPython, Pyodide under Node, Pyodide in
the harness page's worker), named so that no Python source crosses as a string.

    result_json = await run("parity_sweep", '{"tiers": ["scalar"]}')

Each job is an async function of keyword arguments (JSON values) returning JSON-able data.
Bytes arrive as {"base64": "..."} (small models and clips, inlined by the caller) or
{"url": "/models/x"} (large files the harness serves; Pyodide in a page only).
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from array import array

from engine.kernels import Kernels, KernelError, available_tiers, wasm_module_path
from engine.family import fingerprint, load
# the shader mutations (a wrong device, one that cannot run the shaders): gpu_self_test, tests
from engine.executors.webgpu.mutations import flip_one_bit, no_entry_point, not_wgsl, wrong_in_one_tile
from engine.stream.session import stream_samples
from engine.timing import Timer
from engine.transcribe import Engine

from . import kernel_bench, parity
# The job table, its decorator and run() (the entry point the harness calls) are checks/timing.py's:
# its jobs and these share one table.
from .timing import JOBS, job, read_bytes, read_floats, run  # noqa: F401


def digest(values) -> str:
    return hashlib.sha256(values.tobytes()).hexdigest()


async def engine_with_workers(model, tier: str, workers: int, hold_ms: int = 0):
    """An Engine with `workers` kernel workers beside it (0: alone) and their pool (or None).
    The pool comes from the harness page (js.makeKernelPool, web/kernel-pool.mjs); hold_ms:
    KernelPool.serve's holdMs (each worker blocks that long after saying it serves)."""
    pool = None
    if workers:
        import js
        pool = await js.makeKernelPool(tier, workers, wasm_module_path(tier))
    engine = Engine.from_buffer(model, tier, workers=pool)
    if pool is not None:
        await pool.serve(holdMs=hold_ms)         # keyword arguments: the call's last (options) object
    return engine, pool


# ------------------------------------------------------------------------------------------
# kernels

@job
async def stdlib_reach():
    """What the served stdlib (cut by harness/start_bytecode.mjs) lets Python do: import every
    module of the engine and of these checks, find site-packages through sysconfig (the snapshot
    restore does), encode with the Unicode codecs; and which cut modules fail to import."""
    import importlib
    import pkgutil
    import sysconfig
    import engine
    import checks
    imported = []
    for package in (engine, checks):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)
            imported.append(module.name)
    codecs = {c: "caf\u00e9.example".encode(c).decode(c) == "caf\u00e9.example"
              for c in ("utf-8", "utf-16", "utf-32", "latin-1", "idna", "unicode_escape")}
    refused = {}
    for name in ("unittest", "pdb", "xml.dom.minidom", "multiprocessing", "encodings.cp1252"):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            refused[name] = e.name
    return {"imported": imported, "purelib": sysconfig.get_path("purelib"), "codecs": codecs, "refused": refused}


@job
async def tiers():
    return available_tiers()


@job
async def parity_sweep(tiers=None):
    """Every case's digest per tier: {tier: {case: sha256}}."""
    return {tier: parity.digests(tier)["cases"] for tier in (tiers or available_tiers())}


@job
async def parity_summary(tiers, shape=(1024, 1024), tokens=64):
    """Per tier: [the sweep's combined digest, fv5 GEMM GMAC/s on one shape]."""
    out = {}
    for tier in tiers:
        speed = kernel_bench.run("node", tiers=[tier], shapes=(tuple(shape),), tokens=(tokens,),
                                 min_seconds=0.1, ops=("fv5_gemm",))[0]["gmacs"]
        out[tier] = [parity.combined_digest(parity.digests(tier)), speed]
    return out


@job
async def kernel_errors(tier):
    """Bad calls each give a KernelError (not a crash) and the runtime stays alive: the error
    texts, then the first values of a good call made afterwards."""
    k = Kernels(tier)
    x = array("f", [1.0] * 32)
    x[17] = float("nan")
    calls = (lambda: k.quantize(x, 2, 16),
             lambda: k.prepare_fv5(bytearray(48), array("f", [0] * 12), array("f", [1] * 12), 12, 16),
             lambda: k.int8_gemm(bytearray(8), array("f", [1]), 1, bytearray(7), array("f", [1]), 1, 8),
             lambda: k.check_blocks(bytearray([125] * 48), 8, 16))
    errors = []
    for call in calls:
        try:
            call()
            errors.append("no error")
        except KernelError as e:
            errors.append(str(e))
    xq, _ = k.quantize(array("f", [0.5] * 16), 1, 16)
    errors.append(list(xq[:2]))
    return errors


@job
async def kernel_throughput(runtime, shapes, tokens, min_seconds):
    return kernel_bench.run(runtime, shapes=tuple(tuple(s) for s in shapes), tokens=tuple(tokens),
                            min_seconds=min_seconds)


# ------------------------------------------------------------------------------------------
# models and the engine

@job
async def model_fingerprint(model):
    return fingerprint(load(await read_bytes(model)))


@job
async def transcribe(model, wav, tier="wasm_simd128"):
    """[text, tokens] of a WAV file."""
    from engine.audio import load_audio
    engine = Engine.from_buffer(await read_bytes(model), tier)
    result = engine.transcribe(load_audio(engine.k, bytes(await read_bytes(wav))))
    return [result["text"], result["tokens"]]


@job
async def tokens_per_tier(model, clips):
    """{tier: [tokens of each float32 clip]} for every tier this runtime has."""
    model = await read_bytes(model)
    audio = [await read_floats(c) for c in clips]
    return {tier: [Engine.from_buffer(model, tier).transcribe(a)["tokens"] for a in audio]
            for tier in available_tiers()}


def batch_summary(engine, audio) -> dict:
    enc, frames = engine.encode(audio)
    result = engine.transcribe(audio)
    return {"encoder_sha256": digest(enc), "frames": frames, "tokens": result["tokens"],
            "text": result["text"], "words": result["words"]}


def stream_summary(engine, audio) -> dict:
    """A 48 kHz stream in 20 ms feeds, windows of at most 4 s."""
    run = stream_samples(engine.stream(48000, max_window_ms=4000), audio, 960)
    return {"events": run["events"], "text": run["final"]["text"], "words": run["final"]["words"],
            "tokens": run["final"]["tokens"], "decodes": run["metrics"]["decodes"]}


SUMMARIES = {"batch": batch_summary, "stream": stream_summary}


@job
async def engine_summary(model, audio, kind):
    """{tier: batch_summary or stream_summary} for every tier this runtime has."""
    model, audio = await read_bytes(model), await read_floats(audio)
    return {tier: SUMMARIES[kind](Engine.from_buffer(model, tier), audio) for tier in available_tiers()}


@job
async def profile_crossings(model, audio, tier, repeats=3, composed=False):
    """Where a transcription's time goes, by C entry point: every ctypes call of one engine
    (one worker) counted and timed from Python, i.e. with its crossing; `composed`: block by
    block, without the one-call C forms. {"calls": {name: [count, seconds]}, "total_seconds",
    "audio_seconds"} for the last of `repeats` runs."""
    from engine import kernels
    model, audio = await read_bytes(model), await read_floats(audio)
    table = {}

    def counted(name, fn):
        def call(*args):
            started = time.perf_counter()
            try:
                return fn(*args)
            finally:
                entry = table.setdefault(name, [0, 0.0])
                entry[0] += 1
                entry[1] += time.perf_counter() - started
        return call

    # Every entry point is counted as it is declared: the engine's own table, and the ones the
    # executors bind while the network is built or later (Kernels.entry).
    declare = kernels._declare
    kernels._declare = lambda lib, name, restype, argtypes: counted(
        name.split("__")[0], declare(lib, name, restype, argtypes))          # fv5_gemm__avx2: fv5_gemm
    try:
        return _profile(model, audio, tier, repeats, composed, table)
    finally:
        kernels._declare = declare


def _profile(model, audio, tier, repeats, composed, table) -> dict:
    engine = Engine.from_buffer(model, tier, threads=1)
    if composed:                        # block by block: the one-call C forms off
        engine.executor.one_call = False
    for _ in range(repeats):
        table.clear()
        started = time.perf_counter()
        engine.transcribe(audio)
        total = time.perf_counter() - started
    return {"calls": {n: [c, round(s, 6)] for n, (c, s) in sorted(table.items(), key=lambda kv: -kv[1][1])},
            "total_seconds": round(total, 4), "audio_seconds": round(len(audio) / 16000, 3), "tier": engine.tier}


# ------------------------------------------------------------------------------------------
# kernel workers (the harness page only: they need js.makeKernelPool)

@job
async def kernel_pool_start(tier="scalar", workers=1):
    """"started", or why a kernel pool could not start (e.g. no cross-origin isolation)."""
    import js
    try:
        pool = await js.makeKernelPool(tier, workers, wasm_module_path(tier))
    except Exception as e:                           # a JavaScript error, as Pyodide raises it
        return str(e)
    pool.close()
    return "started"


@job
async def worker_digests(model, audio, tiers, counts):
    """{"tier/n": encoder digest, tokens, threads, commands sent, why a worker was lost} with n
    kernel workers."""
    model, audio = await read_bytes(model), await read_floats(audio)
    out = {}
    for tier in tiers:
        for n in counts:
            engine, pool = await engine_with_workers(model, tier, n)
            enc, _ = engine.encode(audio)
            tokens = engine.transcribe(audio)["tokens"]
            out[f"{tier}/{n}"] = {"encoder_sha256": digest(enc), "tokens": tokens, "threads": engine.threads,
                                  "commands": sum(pool.commands) if pool is not None else 0,
                                  "lost": engine.executor.lost}
            if pool is not None:
                pool.close()
    return out


@job
async def worker_lost(model, audio, tier="wasm_simd128"):
    """Two kernel workers, one killed after the first encode: what the engine says and computes."""
    model, audio = await read_bytes(model), await read_floats(audio)
    engine, pool = await engine_with_workers(model, tier, 2)
    engine.encode(audio)
    pool.kill(1)
    started = time.perf_counter()
    enc, _ = engine.encode(audio)
    seconds = time.perf_counter() - started
    again, _ = engine.encode(audio)
    return {"lost": engine.executor.lost, "threads": engine.threads, "seconds": seconds,
            "digests": [digest(enc), digest(again)], "tokens": engine.transcribe(audio)["tokens"]}


@job
async def worker_served_late(model, audio, hold_ms, tier="wasm_simd128"):
    """Two kernel workers that block hold_ms after saying they serve, and one encode posted at
    once: how long it took and whether the pool lost a worker."""
    model, audio = await read_bytes(model), await read_floats(audio)
    engine, pool = await engine_with_workers(model, tier, 2, hold_ms=hold_ms)
    started = time.perf_counter()
    enc, _ = engine.encode(audio)
    return {"lost": engine.executor.lost, "threads": engine.threads,
            "seconds": time.perf_counter() - started, "digest": digest(enc)}


# ------------------------------------------------------------------------------------------
# benchmarks (the harness page; files under /models/)

def wasm_heap_bytes() -> int:
    import pyodide_js
    return pyodide_js._module.HEAPU8.length


@job
async def bench_transcribe(model, seconds, tiers):
    """Batch transcription of /models/audio-{s}s.f32 per tier, with time by section."""
    model = await read_bytes(model)
    out = []
    for s in seconds:
        audio = await read_floats({"url": f"/models/audio-{s}s.f32"})
        for tier in tiers:
            engine = Engine.from_buffer(model, tier)
            with Timer() as timer:
                result = engine.transcribe(audio)
            out.append({"tier": tier, "seconds": s, "result": result, "split": timer.seconds,
                        "wasm_heap_bytes": wasm_heap_bytes()})
    return out


@job
async def bench_stream_hops(model, audio, hops, tier="wasm_simd128"):
    model, audio = await read_bytes(model), await read_floats(audio)
    engine = Engine.from_buffer(model, tier)
    return [{"hop": hop, "run": stream_samples(engine.stream(16000, hop_ms=hop), audio, 320)} for hop in hops]


async def engines_by_count(model, tier, counts) -> tuple:
    """{n: Engine} with n workers in all (the engine's own + n - 1 kernel workers), and their pools."""
    engines, pools = {}, {}
    for n in counts:
        engines[n], pools[n] = await engine_with_workers(model, tier, n - 1)
    return engines, pools


@job
async def bench_encoder_features(model, tier, counts, seconds, repeats):
    """Median seconds of the encoder alone on /models/ort/features-{100 s}.f32, per worker count."""
    model = await read_bytes(model)
    out = {}
    for n in counts:
        engine, pool = await engine_with_workers(model, tier, n - 1)
        for s in seconds:
            frames = 100 * s
            feats = await read_floats({"url": f"/models/ort/features-{frames}.f32"})
            engine.network.encoder(feats, frames)
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                engine.network.encoder(feats, frames)
                times.append(time.perf_counter() - started)
            out[f"{s}/phonon {n}"] = round(statistics.median(times), 3)
        if pool is not None:
            pool.close()
        del engine
    return out


@job
async def bench_schedule(model, tier, counts):
    """Seconds per worker count to decode every window of /models/schedule.json (start, length
    in samples of /models/schedule-audio.f32), interleaved."""
    model = await read_bytes(model)
    audio = await read_floats({"url": "/models/schedule-audio.f32"})
    windows = json.loads(bytes(await read_bytes({"url": "/models/schedule.json"})))
    engines, _ = await engines_by_count(model, tier, counts)
    view = memoryview(audio)
    for e in engines.values():                       # warm-up
        e.tokens(view[:16000 * 4])
    spent = {n: 0.0 for n in engines}
    for start, length in windows:
        for n, e in engines.items():
            started = time.perf_counter()
            e.tokens(view[start:start + length])
            spent[n] += time.perf_counter() - started
    return {"seconds": spent}


@job
async def bench_workers(model, tier, counts, seconds, repeats):
    """Encodes of /models/audio-{s}s.f32 per worker count, interleaved: median seconds, digests,
    time by section (with the engine's own part, its wait and each kernel worker's busy time)."""
    model = await read_bytes(model)
    engines, pools = await engines_by_count(model, tier, counts)
    records = []
    for s in seconds:
        audio = await read_floats({"url": f"/models/audio-{s}s.f32"})
        times, digests, splits = {n: [] for n in engines}, {}, {}
        for e in engines.values():
            e.encode(audio)                          # warm-up
        for _ in range(repeats):
            for n, e in engines.items():
                pool, busy = pools[n], []
                if pool is not None:
                    busy, pool.waitedMs, pool.ownMs = list(pool.busyMs), 0, 0
                with Timer() as timer:
                    started = time.perf_counter()
                    enc, _ = e.encode(audio)
                    times[n].append(time.perf_counter() - started)
                digests[n] = digest(enc)
                splits[n] = {k: round(v, 3) for k, v in timer.seconds.items()}
                if pool is not None:
                    splits[n]["own"] = round(pool.ownMs / 1000, 3)
                    splits[n]["pool_wait"] = round(pool.waitedMs / 1000, 3)
                    splits[n]["kernel_busy"] = [round((b - a) / 1000, 3) for a, b in zip(busy, pool.busyMs)]
        records.append({"audio_seconds": s, "median_seconds": {n: statistics.median(t) for n, t in times.items()},
                        "digests": digests, "split": splits})
    heaps = {n: (pools[n].heapBytes if pools[n] is not None else 0) for n in engines}
    return {"records": records, "engine_heap_bytes": wasm_heap_bytes(), "kernel_heap_bytes": heaps}


# ------------------------------------------------------------------------------------------
# WebGPU: the harness page in a Chromium launched with harness.runtimes
# Chromium(webgpu=True)

@job
async def gpu_digest(models, wav, tier="scalar", timed=True):
    """The engine with its encoder on the browser's WebGPU device (engine/executors/webgpu/browser.py, one
    GpuKernels for all models), the WAV encoded as one window: {"adapter": its info, "packed_dot",
    "shader_dir": where the WGSL was read, "models": {name: {"encoder_sha256", "frames", "tokens"
    (the encoder output decoded on the CPU, {"id", "frame", "duration"} as a transcription gives
    them), "seconds": {"first_encode" (with the pipelines' compilation), "encode" (a second one)},
    "gpu": the last encode's counters, "device_lost": why the device failed (then the CPU computed
    the rest), else None}}}; {"adapter": None, "reason"} when there is no device. timed=False:
    one encode, not two (tests)."""
    from engine.audio import load_audio
    from engine.executors.webgpu.browser import GpuUnavailable, request_device
    from engine.executors.webgpu.device import SHADER_DIR, GpuKernels
    try:
        device = await request_device()
    except GpuUnavailable as e:
        return {"adapter": None, "reason": str(e)}
    gpu = GpuKernels(device)
    wav = bytes(await read_bytes(wav))
    out = {}
    for name, source in models.items():
        engine = Engine.from_buffer(await read_bytes(source), tier, gpu=gpu)
        audio = load_audio(engine.k, wav)
        seconds = {}
        for step in ("first_encode", "encode") if timed else ("first_encode",):
            before = engine.executor.counters()
            started = time.perf_counter()
            enc, frames = engine.encode(audio)
            seconds[step] = round(time.perf_counter() - started, 3)
        after = engine.executor.counters()
        # the tokens of that encode, decoded on the CPU: what the transcription of this one
        # window gives (tests/test_webgpu_api.py checks transcriptions through the API)
        tokens = [{"id": t.id, "frame": t.frame, "duration": t.duration} for t in engine.network.decode(enc, frames)]
        out[name] = {"encoder_sha256": digest(enc), "frames": frames, "tokens": tokens,
                     "seconds": seconds, "gpu": {key: after[key] - before[key] for key in before},
                     "device_lost": engine.executor.lost}
    return {"adapter": device.adapter_info, "packed_dot": gpu.packed_dot, "shader_dir": str(SHADER_DIR),
            "tier": tier, "models": out}


@job
async def gpu_self_test(model, expected):
    """engine/executors/webgpu/self_test.py self_test on the browser's device with the native digest `expected`:
    {"passed": the report's digest, "one_bit_off": GpuRefused's message with flip_one_bit,
    "one_tile_off": with wrong_in_one_tile (wrong only on short inputs), "cannot_run": with
    no_entry_point, "not_wgsl": with not_wgsl, "passed_after": the digest on the same device
    after those, with the first check's pipelines (their compilation is most of
    a check on SwiftShader: about 15 s) and one pipeline made anew (no error of theirs left for a
    later call or read), "seconds": {step: seconds from the start}};
    {"adapter": None, "reason"} without a device."""
    from engine.executors.webgpu.self_test import GpuRefused, self_test
    from engine.executors.webgpu.browser import GpuUnavailable, request_device
    from engine.executors.webgpu.device import GpuKernels
    try:
        device = await request_device()
    except GpuUnavailable as e:
        return {"adapter": None, "reason": str(e)}
    model = load(await read_bytes(model))
    seconds, started = {}, time.perf_counter()
    first = GpuKernels(device)
    out = {"adapter": device.adapter_info, "seconds": seconds,
           "passed": self_test(first, model, expected=expected)["digest"]}
    seconds["passed"] = round(time.perf_counter() - started, 2)
    for name, patch, packed in (("one_bit_off", flip_one_bit, None), ("one_tile_off", wrong_in_one_tile, None),
                                ("cannot_run", no_entry_point, False),
                                ("not_wgsl", not_wgsl, None)):
        try:
            self_test(GpuKernels(device, packed_dot=packed, patch=patch), model, expected=expected)
            out[name] = "accepted"
        except GpuRefused as e:
            out[name] = str(e)
        seconds[name] = round(time.perf_counter() - started, 2)
    # a pipeline compiled anew (a source no check compiled: the device shares the others)
    GpuKernels(device, patch=lambda source: source + "\n// compiled after the refusals\n").pipeline("copy_values")
    out["passed_after"] = self_test(first, model, expected=expected)["digest"]
    seconds["passed_after"] = round(time.perf_counter() - started, 2)
    return out
