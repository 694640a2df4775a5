"""The GPU executor (engine/executors/webgpu/executor.py): the engine with its linears on a WebGPU device gives
the native scalar tier's encoder output and tokens bit for bit, batch and stream, on the tiny
synthetic model, the default model (five-value) and an int8-rows model; the known-answer
self-test passes, and refuses a device whose GEMM output is one bit off.

Natively through PyPI wgpu on Mesa lavapipe here (a CPU emulation). Skipped, saying why,
without wgpu or an adapter."""

from __future__ import annotations

import json
import math
from array import array
from pathlib import Path

import pytest

from engine.audio import load_audio
from engine.executors import Alone
from engine.executors.webgpu.device import GEMM_TOKENS, MODULES, UNIFORM_WORDS, GpuKernels, shader_source
from engine.executors.webgpu.executor import WebGpu
from engine.executors.webgpu.mutations import (DECODE_STORE, GEMM_STORE, TILE_STORE, flip_one_bit, no_entry_point,
                                               wrong_in_one_tile, wrong_when_decoded_once)
from engine.executors.webgpu.self_test import (SELF_TEST_FRAMES, SELF_TEST_SHORT_FRAMES, GpuRefused, cpu_digest,
                                              encoder_digest, first_difference, self_test, self_test_features)
from engine.family import load, network
from engine.kernels import KernelError, Kernels
from engine.stream.session import stream_samples
from engine.transcribe import Engine

wgpu = pytest.importorskip("wgpu", reason="PyPI wgpu is not installed (build.py setup installs wgpu==0.32.0)")
from test_webgpu_kernels import device  # noqa: E402,F401 - the fixture: a device, or a skip saying why

pytestmark = pytest.mark.webgpu

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "models" / "phonon-small.gguf"
WAV = ROOT / "samples" / "two-commands.wav"
MODELS = ["tiny", "phonon-small", "int8-rows"]


@pytest.fixture(scope="module")
def gpu(device):
    """One set of compiled pipelines for every engine of this module (compiling is the slow part
    on lavapipe)."""
    return GpuKernels(device)


@pytest.fixture(scope="module")
def int8_rows_path(tmp_path_factory) -> Path:
    """test_parakeet_hf's random transformers ParakeetForTDT, converted with int8 rows."""
    pytest.importorskip("transformers", reason="the int8-rows model is made with transformers (a test extra)")
    from modeltools.parakeet_hf import convert_hf
    from test_parakeet_hf import random_model, save
    folder = save(random_model(), tmp_path_factory.mktemp("hf") / "tiny-parakeet")
    out = folder.parent / "tiny-int8.gguf"
    convert_hf(folder, out, "int8")
    return out


@pytest.fixture(scope="module", params=MODELS)
def model_path(request) -> Path:
    if request.param == "tiny":
        return request.getfixturevalue("tiny_gguf_path")
    if request.param == "int8-rows":
        return request.getfixturevalue("int8_rows_path")
    return DEFAULT_MODEL


@pytest.fixture(scope="module")
def samples():
    return load_audio(Kernels("scalar"), WAV.read_bytes())


def as_json(value):
    return json.loads(json.dumps(value))


def stream_of(engine, samples) -> dict:
    """A stream's events and final transcript, fed 20 ms at a time as fast as it goes (not in
    real time, so the schedule is the audio's alone); without the compute time."""
    out = as_json(stream_samples(engine.stream(16000), samples, 320))
    del out["final"]["stats"]["compute_seconds"]
    return {"events": out["events"], "final": out["final"], "decodes": out["metrics"]["decodes"]}


@pytest.fixture(scope="module")
def engines(model_path, gpu):
    """(native scalar, GPU) engines of one model: the GPU one's CPU part on the scalar tier too."""
    return Engine.open(model_path, "scalar", 1), Engine.open(model_path, "scalar", gpu=gpu)


def test_the_executor_sends_every_encoder_linear_to_the_device(tiny_gguf_path, gpu):
    engine = Engine.open(tiny_gguf_path, "scalar", gpu=gpu)
    ex = engine.executor
    assert isinstance(ex, WebGpu) and not ex.one_call_now() and engine.threads == 1
    assert type(ex.unsplit) is Alone                      # the decoder: one token at a time, on the CPU
    enc = engine.network.encoder
    linears = [enc.subsampling.pw3, enc.subsampling.pw6, enc.subsampling.linear]
    for layer in enc.layers:
        att = layer.self_attn
        linears += [layer.feed_forward1.linear1, layer.feed_forward1.linear2, att.q, att.k_, att.v, att.o,
                    att.pos, layer.conv.pw2, layer.feed_forward2.linear1, layer.feed_forward2.linear2]
    assert all(hasattr(lin._run, "gpu") for lin in linears)
    assert {lin._run.gpu.activation for lin in linears} == {None, "silu"}      # SiLU on the device
    with pytest.raises(ValueError, match="one thread"):
        Engine.open(tiny_gguf_path, "scalar", 2, gpu=gpu)


def test_batch_matches_native_scalar(engines, samples):
    native, on_gpu = engines
    enc, T = native.encode(samples)
    got, T_gpu = on_gpu.encode(samples)
    assert T_gpu == T and encoder_digest(got) == encoder_digest(enc)
    want, result = as_json(native.transcribe(samples)), as_json(on_gpu.transcribe(samples))
    assert want["tokens"], "no tokens to compare"
    assert result["tokens"] == want["tokens"] and result["text"] == want["text"]
    counters = result["timing"]["gpu"]
    assert counters["submissions"] > 0 and counters["uploaded_bytes"] > 0 and counters["read_bytes"] > 0


def test_resident_weights_give_native_bits(tiny_gguf_path, gpu, samples):
    """WebGpu(resident_weights=True): every five-value linear decoded once at load; an encode
    then runs no decode pass and gives the native scalar tier's output."""
    model = load(tiny_gguf_path)
    features = self_test_features(model.dims.n_mels, SELF_TEST_FRAMES)
    ex = WebGpu(Kernels("scalar"), gpu, fallback=False, resident_weights=True)
    net = network(model, ex)
    layers = net.encoder.layers
    fv5 = [lin._run.gpu for layer in layers for lin in (layer.feed_forward1.linear1, layer.self_attn.q,
                                                         layer.conv.pw2) if lin._run.gpu.kind == "fv5"]
    assert fv5 and all(lin.resident for lin in fv5)
    assert ex.gpu.counters["dispatches"] >= len(fv5)          # the decode passes, at load
    got, _ = net.encode(features, SELF_TEST_FRAMES)
    want, _ = network(model, Alone(Kernels("scalar"))).encode(features, SELF_TEST_FRAMES)
    assert first_difference(got, want) is None
    assert ex.lost is None


def test_the_float_debug_path_is_refused_on_the_gpu(engines, gpu):
    """The graph check's float32 executor is a CPU executor: asked for with a device, refused."""
    _, on_gpu = engines
    with pytest.raises(ValueError, match=r"float activations \(the graph check\) run on one CPU thread"):
        Engine(on_gpu.model, "scalar", gpu=gpu, float_activations=True)


def test_an_encode_keeps_its_activations_on_the_device(engines, samples):
    """The whole encoder on the device: one read-back (the output, and the rows' NaN flags),
    the features' slices and the positional table the only uploads, a few submissions."""
    _, on_gpu = engines
    ex = on_gpu.executor
    on_gpu.encode(samples[:16000])                       # a first window length: its table goes up
    before = ex.counters()
    enc, T = on_gpu.encode(samples[:16000])
    spent = {name: ex.counters()[name] - before[name] for name in before}
    assert spent["read_bytes"] == 4 * len(enc) + 4 * ex.status_rows
    d = on_gpu.model.dims
    features = d.n_mels * (100 + 1)                      # 1 s of 10 ms frames, as the frontend gives
    # + a uniform per pass and the status words zeroed; no activation goes up
    per_pass = 4 * UNIFORM_WORDS
    assert spent["uploaded_bytes"] <= 4 * features + per_pass * spent["dispatches"] + 4 * ex.status_rows, spent
    assert spent["submissions"] <= 2 and spent["dispatches"] > 10 * d.n_layers, spent


def test_stream_matches_native_scalar(engines, samples):
    native, on_gpu = engines
    want = stream_of(native, samples)
    assert want["events"] and want["decodes"] > 1
    assert stream_of(on_gpu, samples) == want


# -- GPU memory and the full-size model ----------------------------------------

MiB = 2**20


def test_the_gpu_buffers_count_every_byte_created(tiny_gguf_path, device, samples):
    """buffer_bytes: at load, the weights as uploaded and nothing else; an encode adds the
    pooled activations, scratch and uniforms; once the positional table is kept (it stays up
    across encodes: one pooled buffer fewer for the next encode's other values), an encode of
    the same length nothing."""
    gpu = GpuKernels(device)
    engine = Engine.open(tiny_gguf_path, "scalar", gpu=gpu)
    at_load = engine.executor.counters()
    assert at_load["uploaded_bytes"] > 0 and at_load["submissions"] == 0
    assert at_load["buffer_bytes"] == at_load["uploaded_bytes"]
    engine.encode(samples)
    once = engine.executor.counters()["buffer_bytes"]
    assert once > at_load["buffer_bytes"]
    engine.encode(samples)
    twice = engine.executor.counters()["buffer_bytes"]
    assert twice - once <= 4 * (2 * 82 - 1) * engine.model.dims.d_model * 2     # the table's size class
    engine.encode(samples)
    assert engine.executor.counters()["buffer_bytes"] == twice


def test_the_full_size_model_fits_in_its_file_plus_100_mib_and_gives_native_bits(device):
    """GPU memory for the full-size model at most the model file + 100 MiB, counted
    from the buffers created, at load and after an encode; its encoder output and tokens are the
    native scalar tier's. One second of speech-like audio here (a 10 s encode takes 85 s on
    lavapipe: harness/bench_webgpu.py --size full measures that one, BENCHMARKS.md)."""
    from harness.bench_e2e import full_model, speechlike
    path = full_model()
    limit = path.stat().st_size + 100 * MiB
    engine = Engine.open(path, "scalar", gpu=GpuKernels(device))
    at_load = engine.executor.counters()["buffer_bytes"]
    assert 0.8 * path.stat().st_size < at_load <= limit, (at_load, limit)
    x = speechlike(1.0)
    got, T = engine.encode(x)
    assert engine.executor.counters()["buffer_bytes"] <= limit
    native = Engine.open(path, "scalar", 1)
    want, T_native = native.encode(x)
    assert T == T_native > 0 and encoder_digest(got) == encoder_digest(want)
    assert engine.network.decode(got, T) == native.network.decode(want, T)


# -- the known-answer self-test ------------------------------------------------------------------

def native_digest(model) -> str:
    """The digest the page would carry: the native scalar tier's encoder output of the fixed
    features."""
    return cpu_digest(model)


def test_self_test_passes_on_a_correct_device(tiny_gguf_path, gpu):
    model = load(tiny_gguf_path)
    report = self_test(gpu, model, expected=native_digest(model))
    assert report["digest"] == native_digest(model) and report["counters"]["submissions"] > 0
    assert self_test(gpu, model)["digest"] == report["digest"]          # against the CPU here


def test_self_test_refuses_a_device_one_bit_off(tiny_gguf_path, device):
    assert all(GEMM_STORE in shader_source(m, False) for m in ("fv5_gemm", "int8_gemm"))
    model = load(tiny_gguf_path)
    wrong = GpuKernels(device, patch=flip_one_bit)
    with pytest.raises(GpuRefused, match=r"differs from the CPU's: digest \w+, expected \w+"):
        self_test(wrong, model, expected=native_digest(model))
    with pytest.raises(GpuRefused, match=r"differs from the CPU's in \d+ of \d+ values of the \d+-frame encode; "
                                         r"first at frame \d+, channel \d+: 0x[0-9a-f]{8}, expected 0x[0-9a-f]{8}"):
        self_test(wrong, model)


def test_the_check_covers_what_only_long_inputs_run(device):
    """A device wrong only where a five-value linear runs over more than one tile of tokens (its
    weights decoded once, fv5_decode.wgsl) passes a check of 64 feature frames (8 encoder frames)
    alone and fails the check's SELF_TEST_FRAMES (72): the check's shapes refuse it."""
    assert DECODE_STORE in shader_source("fv5_decode", False)
    model = load(DEFAULT_MODEL)
    wrong = GpuKernels(device, patch=wrong_when_decoded_once)
    short = self_test(wrong, model, shapes=(SELF_TEST_SHORT_FRAMES,))      # against the CPU here
    assert short["values"] == 8 * model.dims.d_model
    with pytest.raises(GpuRefused, match=r"differs from the CPU's: digest"):
        self_test(wrong, model, expected=cpu_digest(model))
    with pytest.raises(GpuRefused, match=rf"of the {SELF_TEST_FRAMES}-frame encode; first at frame"):
        self_test(wrong, model)
    assert SELF_TEST_FRAMES // 8 > GEMM_TOKENS


def test_the_check_covers_what_only_short_inputs_run(device):
    """A device wrong only where a five-value linear runs within one tile of tokens (the fused
    decode-and-multiply, fv5_weights.wgsl: every short live window) passes a check of the long
    input alone and fails the check's short one; the check compiles every module an encode of
    any length uses (none is left to compile during the first live decode)."""
    assert TILE_STORE in shader_source("fv5_gemm", False)
    model = load(DEFAULT_MODEL)
    wrong = GpuKernels(device, patch=wrong_in_one_tile)
    long = self_test(wrong, model, shapes=(SELF_TEST_FRAMES,))
    assert long["values"] == 72 * model.dims.d_model
    with pytest.raises(GpuRefused, match=r"differs from the CPU's: digest"):
        self_test(wrong, model, expected=cpu_digest(model))
    with pytest.raises(GpuRefused, match=rf"of the {SELF_TEST_SHORT_FRAMES}-frame encode; first at frame"):
        self_test(wrong, model)
    assert SELF_TEST_SHORT_FRAMES // 8 <= GEMM_TOKENS
    counting = CountingDevice(device, {})
    gpu = GpuKernels(counting, packed_dot=False, patch=lambda source: source + "\n// a fresh device's compile\n")
    self_test(gpu, model)
    compiled = counting.shader_modules
    engine = Engine(model, "scalar", gpu=gpu)
    for seconds in (0.3, 1.3, 5.0, 12.0):
        engine.encode(array("f", [0.1 * math.sin(0.05 * i) for i in range(int(16000 * seconds))]))
    assert counting.shader_modules == compiled, counting.labels[compiled:]


def test_first_difference_names_one_flipped_bit():
    want = array("f", [0.5, -1.25, 3.0, 0.0])
    got = array("f", want)
    assert first_difference(got, want) is None
    raw = bytearray(got.tobytes())
    raw[8] ^= 1                                          # value 2, its lowest bit
    assert first_difference(raw, want) == (2, 1, 0x40400001, 0x40400000)


def test_self_test_refuses_a_device_that_cannot_run_it(tiny_gguf_path, device):
    broken = GpuKernels(device, packed_dot=False, patch=no_entry_point)
    with pytest.raises(GpuRefused, match="could not run the known-answer encode"):
        self_test(broken, load(tiny_gguf_path))


# -- device loss ---------------------------------------------------------------

class _LosingQueue:
    """A queue whose reads fail once `budget` reads have been made (a device lost mid-decode:
    the browser's mapAsync then rejects)."""

    def __init__(self, queue, budget: int):
        self._queue, self.budget = queue, budget

    def read_buffer(self, *args, **kwargs):
        if self.budget <= 0:
            raise RuntimeError("WebGPU mapAsync failed: OperationError: Device is lost")
        self.budget -= 1
        return self._queue.read_buffer(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._queue, name)


class LosingDevice:
    """A device (every call forwarded) whose reads start failing after `budget` of them."""

    def __init__(self, device, budget: int):
        self._device, self.queue = device, _LosingQueue(device.queue, budget)

    def __getattr__(self, name):
        return getattr(self._device, name)


def test_a_device_lost_mid_decode_finishes_on_the_cpu_with_the_same_bits(tiny_gguf_path, device, samples):
    native = Engine.open(tiny_gguf_path, "scalar", 1)
    want = as_json(native.transcribe(samples))
    lost = []
    # one read per encode (the output and the rows' status): the loss comes at the first one's end
    losing = LosingDevice(device, budget=0)
    engine = Engine.open(tiny_gguf_path, "scalar", gpu=GpuKernels(losing, packed_dot=False))
    engine.executor.on_lost = lost.append
    got = as_json(engine.transcribe(samples))
    assert got["tokens"] == want["tokens"] and got["text"] == want["text"]
    assert lost == [engine.executor.lost] and "Device is lost" in lost[0], lost
    submitted = engine.executor.counters()["submissions"]
    assert submitted > 0
    again = as_json(engine.transcribe(samples))                      # the CPU from then on
    assert again["tokens"] == want["tokens"] and engine.executor.counters()["submissions"] == submitted
    enc, _ = native.encode(samples)
    assert encoder_digest(engine.encode(samples)[0]) == encoder_digest(enc)


def test_the_self_test_does_not_fall_back(tiny_gguf_path, device):
    model = load(tiny_gguf_path)
    with pytest.raises(GpuRefused, match="could not run the known-answer encode: RuntimeError: .*Device is lost"):
        self_test(GpuKernels(LosingDevice(device, budget=0), packed_dot=False), model, expected=native_digest(model))


def test_the_worker_side_reports_a_lost_device_once(tiny_gguf_path, device):
    """engine/worker/ on the GPU (what Gpu.load sets up after the check, here with a native
    device): a file transcribed across the loss gives the native tokens; the tier becomes the
    CPU's, gpu_lost() gives the note once, model_info says the same."""
    from engine.worker import WebWorker
    model = tiny_gguf_path.read_bytes()
    want = as_json(Engine.open(tiny_gguf_path, "scalar", 1).transcribe(
        load_audio(Kernels("scalar"), WAV.read_bytes())))
    app = WebWorker()
    app.gpu.kernels = GpuKernels(LosingDevice(device, budget=0), packed_dot=False)
    app.model.engine, app.model.bytes = app.gpu.engine_for(load(model), "scalar"), model
    assert app.model.tier == "webgpu" and json.loads(app.model.info())["tier"] == "webgpu"
    app.file.prepare_wav(WAV.read_bytes())
    app.file.begin()
    while "result" not in (step := json.loads(app.file.step())):
        pass
    assert step["result"]["tokens"] == want["tokens"]
    note = app.gpu.lost_note()
    assert note.startswith("scalar: the WebGPU device failed mid-decode (RuntimeError: WebGPU mapAsync failed: "), note
    assert app.gpu.lost_note() is None and app.model.tier == "scalar"
    info = json.loads(app.model.info())
    assert info["tier"] == "scalar" and info["tierNote"] == note


class CountingDevice:
    """A device (every call forwarded) with the adapter info a browser's has, counting the
    shader modules made on it."""

    def __init__(self, device, adapter_info: dict):
        self._device, self.adapter_info, self.shader_modules, self.labels = device, adapter_info, 0, []

    def create_shader_module(self, **kwargs):
        self.shader_modules += 1
        self.labels.append(kwargs.get("label"))
        return self._device.create_shader_module(**kwargs)

    def __getattr__(self, name):
        return getattr(self._device, name)


def test_the_timed_verdict_decides_and_says_what_it_measured(tiny_gguf_path, device, monkeypatch):
    """Gpu.load's timed check (tier "auto"): the device against the CPU kernels, the CPU's time
    divided by the kernel workers it would have; the faster one runs and the note gives both
    times. Here lavapipe against native scalar: whichever wins, the verdict follows the numbers;
    with the CPU's time divided by a huge worker count the device must lose, and with the test
    hook it is taken as faster."""
    import asyncio
    import engine.executors.webgpu.browser
    from engine.worker import WebWorker

    async def request_device():
        return CountingDevice(device, {"vendor": "mesa", "architecture": "", "device": "", "description": ""})
    monkeypatch.setattr(engine.executors.webgpu.browser, "request_device", request_device)
    model = tiny_gguf_path.read_bytes()

    def load_gpu(**options):
        return json.loads(asyncio.run(WebWorker().gpu.load(model, "scalar", "prefer", options=json.dumps(options))))
    out = load_gpu(timed=True)
    m = out["measured"]
    assert set(m) == {"audio_s", "gpu_ms", "cpu_ms", "cpu_workers", "faster"} and m["audio_s"] == SELF_TEST_FRAMES / 100, m
    assert m["faster"] == (m["gpu_ms"] < m["cpu_ms"]) and out["tier"] == ("webgpu" if m["faster"] else None), out
    assert out["speed"] == f"{SELF_TEST_FRAMES / 100:g} s of audio encoded in {m['gpu_ms']:g} ms, scalar {m['cpu_ms']:g} ms", out
    assert out["speed"] in out["note"]
    slower = load_gpu(timed=True, cpuWorkers=10**9)
    assert slower["tier"] is None and slower["measured"]["cpu_workers"] == 10**9, slower
    assert slower["note"].startswith("scalar: the WebGPU adapter (mesa) passed the known-answer check but is slower "
                                     f"than the wasm kernels: {SELF_TEST_FRAMES / 100:g} s of audio encoded in "), slower
    assert slower["note"].endswith(f" ms ({10**9} workers at best)"), slower
    hooked = load_gpu(timed=True, cpuWorkers=10**9, testFaster=True)
    assert hooked["tier"] == "webgpu" and hooked["measured"]["faster"], hooked
    assert "taken as faster by the test hook gpuTestFaster; the CPU part on scalar)" in hooked["note"], hooked
    kept = load_gpu(kept="3.2 s of audio encoded in 1 ms, scalar 9 ms (measured 2026-12-06)")
    assert kept["tier"] == "webgpu" and kept["measured"] is None, kept
    assert kept["note"].endswith("; 3.2 s of audio encoded in 1 ms, scalar 9 ms (measured 2026-12-06); the CPU part "
                                 "on scalar)"), kept


def test_the_worker_knows_the_cpu_emulations_this_module_knows():
    """The engine worker's Gpu (web/worker/gpu.mjs) names the CPU emulations before Python starts
    (its probe); adapter.py
    names them for the engine: the same list."""
    import re
    from engine.executors.webgpu.adapter import CPU_EMULATIONS
    worker = (ROOT / "web" / "worker" / "gpu.mjs").read_text()
    listed = re.search(r"const CPU_EMULATIONS = \[([^\]]*)\]", worker).group(1)
    assert tuple(re.findall(r'"(\w+)"', listed)) == CPU_EMULATIONS


def test_the_kernels_on_one_device_compile_each_source_once(tiny_gguf_path, device):
    """A second GpuKernels on a device compiles nothing its first compiled; a mutated one (a
    known-answer check's wrong device) compiles exactly the modules its mutation changes, and
    still computes the mutation (the shared pipelines are keyed by their source)."""
    model = load(tiny_gguf_path)
    counting = CountingDevice(device, {})
    first = self_test(GpuKernels(counting, packed_dot=False), model)
    compiled = counting.shader_modules
    assert compiled >= 10, compiled                     # the encoder's modules (fresh device)
    assert self_test(GpuKernels(counting, packed_dot=False), model)["digest"] == first["digest"]
    assert counting.shader_modules == compiled
    changed = [m for m in MODULES if flip_one_bit(shader_source(m, False)) != shader_source(m, False)]
    assert sorted(changed) == ["fv5_gemm", "int8_gemm"]
    with pytest.raises(GpuRefused, match="differs from the CPU's"):
        self_test(GpuKernels(counting, packed_dot=False, patch=flip_one_bit), model, expected=first["digest"])
    recompiled = counting.labels[compiled:]
    assert recompiled and set(recompiled) <= set(changed) and len(set(recompiled)) == len(recompiled), recompiled


def test_preferred_a_cpu_emulation_is_refused_before_any_shader_is_compiled(tiny_gguf_path, device, monkeypatch):
    """engine/worker/gpu.py Gpu.load in "prefer" mode on an adapter that says it is SwiftShader: the
    wasm tier, the note naming the emulation, and not one shader module made (the check's shaders
    take ~15 s to compile on SwiftShader); with the tests' `hardware` hook the check runs (here
    on lavapipe: it passes) and the engine is on the device."""
    import asyncio
    import engine.executors.webgpu.browser
    from engine.worker import WebWorker
    swiftshader = {"vendor": "google", "architecture": "swiftshader", "device": "", "description": ""}
    counting = CountingDevice(device, swiftshader)

    async def request_device():
        return counting
    monkeypatch.setattr(engine.executors.webgpu.browser, "request_device", request_device)
    model = tiny_gguf_path.read_bytes()
    app = WebWorker()
    out = json.loads(asyncio.run(app.gpu.load(model, "scalar", "prefer")))
    assert out == {"tier": None, "adapter": "google swiftshader", "adapterInfo": swiftshader,
                   "note": "scalar: the WebGPU adapter (google swiftshader) is a CPU emulation (swiftshader): "
                           "the wasm kernels are faster", "measured": None, "speed": None}, out
    assert counting.shader_modules == 0 and app.gpu.kernels is None
    out = json.loads(asyncio.run(app.gpu.load(model, "scalar", "prefer", hardware=True)))
    assert out["tier"] == "webgpu" and counting.shader_modules > 5, (out, counting.shader_modules)
    assert out["measured"] is None                              # not asked to time it
    assert app.gpu.tier_note.startswith("webgpu: google swiftshader (passed the known-answer check; the CPU part on "), \
        app.gpu.tier_note


# -- what an encode does when the device cannot (review of the executor) -------------------------

def test_a_bound_of_the_gpu_kernels_computes_that_encode_on_the_cpu(tiny_gguf_path, gpu, samples, monkeypatch):
    """A KernelError on the device path (here: the attention refusing, as for windows past its
    scores' binding) is not a loss: that encode is the CPU's, the next ones the device's."""
    from engine.executors.webgpu import attention as webgpu_attention
    native = Engine.open(tiny_gguf_path, "scalar", 1)
    engine = Engine.open(tiny_gguf_path, "scalar", gpu=gpu)
    x = samples[:16000]
    want = encoder_digest(native.encode(x)[0])
    refuse = lambda *args, **kwargs: (_ for _ in ()).throw(KernelError("above the scores' binding"))  # noqa: E731
    with monkeypatch.context() as m:
        m.setattr(webgpu_attention.GpuAttention, "passes", refuse)
        before = engine.executor.counters()["read_bytes"]
        assert encoder_digest(engine.encode(x)[0]) == want
        assert engine.executor.counters()["read_bytes"] == before          # nothing read: the CPU's
    assert engine.executor.lost is None
    assert encoder_digest(engine.encode(x)[0]) == want and engine.executor.counters()["read_bytes"] > before


def test_rows_flagged_by_the_device_but_not_the_cpu_turn_the_device_off(tiny_gguf_path, device, samples):
    """A device that reports NaN or infinity where the CPU finds none is wrong: the encode is the
    CPU's (native bits) and the device is not used again."""
    flags_every_row = lambda source: source.replace("if (bad) {", "if (true) {")          # noqa: E731
    engine = Engine.open(tiny_gguf_path, "scalar", gpu=GpuKernels(device, packed_dot=False, patch=flags_every_row))
    x = samples[:16000]
    assert encoder_digest(engine.encode(x)[0]) == encoder_digest(Engine.open(tiny_gguf_path, "scalar", 1).encode(x)[0])
    assert engine.executor.lost and "NaN or infinity the CPU did not" in engine.executor.lost


def test_an_error_of_the_callers_is_not_a_lost_device(engines, samples):
    _, on_gpu = engines

    def on_layer(i, x):
        raise ValueError("the caller's bug")
    with pytest.raises(ValueError, match="the caller's bug"):
        on_gpu.encode(samples[:16000], on_layer=on_layer)
    assert on_gpu.executor.lost is None
