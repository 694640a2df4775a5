"""The engine worker's Python side (web/worker.mjs): one engine, one live stream, one file at a
time, with answers the page can post as they are (JSON text). The worker calls these methods
through Pyodide; tests call them natively with Python buffers.

Values from JavaScript arrive as Pyodide proxies: a typed array has to_memoryview(), bytes have
to_bytes(). `_memory` and `_bytes` take those and Python buffers alike.
"""

from __future__ import annotations

import json
import time

from .audio import MODEL_RATE, load_audio, resample
from .family import load as load_model
from .longform import SteppedTranscription
from .stream.session import StreamConfig, StreamOverrun, Stream, live_metrics, stream_metrics
from .transcribe import Engine


def _memory(samples) -> memoryview:
    return samples.to_memoryview() if hasattr(samples, "to_memoryview") else memoryview(samples)


def _bytes(data) -> bytes:
    return data.to_bytes() if hasattr(data, "to_bytes") else bytes(data)


def new_buffer(size: int) -> bytearray:
    """A zeroed bytearray in the wasm heap for JavaScript to fill (a model's bytes)."""
    return bytearray(int(size))


class TokensFrom:
    """A stream's recogniser for benchmarks: each window is decoded by `costly` (the full-size
    model: the time a decode takes) and by `placing` (a trained model: where its tokens fall),
    and the tokens are the second's. A synthetic full-size model has random weights and emits
    tokens everywhere, so its own windows never move into pauses; with these the schedule is a
    real stream's and the cost the big model's (`build.py bench --live`)."""

    def __init__(self, costly, placing):
        self.costly, self.placing = costly, placing
        self.k, self.marks = placing.k, placing.marks
        self.placing_seconds = 0.0           # the placing model's share of the stream's compute

    @property
    def model(self):
        return self.placing.model

    def tokens(self, samples, cancelled=None):
        self.costly.tokens(samples, cancelled=cancelled)
        started = time.perf_counter()
        try:
            return self.placing.tokens(samples, cancelled=cancelled)
        finally:
            self.placing_seconds += time.perf_counter() - started


class WebApp:
    def __init__(self):
        self.engine = self.model = self.session = None
        self.placing = None                  # (benchmarks) the engine whose tokens a stream takes
        self.file = self.pending = None
        self.gpu = None                      # the GpuKernels of the device in use (load_gpu), or None
        self.tier_note = None                # why this tier runs (r.tierNote)
        self.gpu_lost_note = None            # set once when the device is lost mid-decode

    # -- the GPU ----------------------------------------------------------------------------------

    async def load_gpu(self, model, tier: str, mode: str, expected=None, patch=None,
                       hardware: bool = False, options: str = "{}") -> str:
        """An engine with its encoder on the browser's WebGPU device, the CPU part on
        the wasm `tier`, once the device passed the known-answer check (executors/webgpu/self_test.py
        against `expected`, the digest build.py wrote in manifest.json; without one, against
        the CPU kernels here). mode "force": no device, or one that fails the check, raises
        (GpuUnavailable, GpuRefused); "prefer" (tier "auto"): then, or when the adapter is a CPU
        emulation (SwiftShader, llvmpipe, lavapipe: slower than the wasm kernels; told from the
        adapter's info before any shader is compiled, which takes seconds there), or when the
        timed encode finds the device slower than the wasm kernels, nothing is loaded ("tier"
        null: the worker loads the CPU engine as without the GPU) and the note says why.
        patch: a SHADER_MUTATIONS name; hardware: take the adapter for real hardware whatever it
        says (tests). options (JSON): "timed" (prefer: time the device against the CPU,
        self_test.time_against_cpu, with "cpuWorkers"), "kept" (the words of a faster verdict
        the worker kept for this adapter, driver and model; no timing then), "testFaster"
        (tests: take the device as faster whatever was measured). An async call: the device's
        promises are awaited through JSPI (executors/webgpu/browser.py). Returns JSON {"tier", "note", "adapter",
        "adapterInfo", "measured", "speed"} (measured: the timing, when made; speed: its words)."""
        from .executors.webgpu.adapter import adapter_name, cpu_emulation
        from .executors.webgpu.mutations import SHADER_MUTATIONS
        from .executors.webgpu.self_test import GpuRefused, self_test, speed_note, time_against_cpu
        from .kernels import Kernels
        from .executors.webgpu.browser import GpuUnavailable, request_device
        from .executors.webgpu.device import GpuKernels
        if mode not in ("force", "prefer"):
            raise ValueError(f"mode must be 'force' or 'prefer', got {mode!r}")
        opts = json.loads(options or "{}")
        loaded = load_model(model)                        # a bad model fails as without the GPU
        adapter = info = measured = speed = None
        try:
            try:
                device = await request_device()
            except GpuUnavailable:
                raise
            except Exception as e:      # noqa: BLE001 - requestDevice() rejected, ...
                raise GpuUnavailable(f"the WebGPU device could not be made: {e}") from e
            info = device.adapter_info
            adapter = adapter_name(info)
            emulation = None if hardware else cpu_emulation(info)
            if mode == "prefer" and emulation:
                raise GpuRefused(f"the WebGPU adapter ({adapter}) is a CPU emulation ({emulation}): "
                                 "the wasm kernels are faster")
            gpu = GpuKernels(device, patch=SHADER_MUTATIONS[patch] if patch else None)
            k = Kernels(tier)
            self_test(gpu, loaded, k, expected=expected or None)
            if mode == "prefer" and opts.get("timed"):
                measured = time_against_cpu(gpu, loaded, k, int(opts.get("cpuWorkers") or 1))
                speed = speed_note(measured, tier)
                speed = self._speed_verdict(measured, speed, adapter, bool(opts.get("testFaster")))
            elif mode == "prefer" and opts.get("kept"):
                speed = opts["kept"]
        except (GpuUnavailable, GpuRefused) as e:
            if mode == "force":
                raise
            self.tier_note = f"{tier}: {e}"
            return self._gpu_report(None, adapter, info, measured, speed)
        self.gpu = gpu
        self.engine, self.model = self._gpu_engine(loaded, tier), model
        self.tier_note = (f"webgpu: {adapter} (passed the known-answer check"
                          + (f"; a CPU emulation ({emulation}), forced" if emulation else "")
                          + (f"; {speed}" if speed else "")
                          + f"; the CPU part on {self.engine.tier})")
        return self._gpu_report(self.tier, adapter, info, measured, speed)

    @staticmethod
    def _speed_verdict(measured: dict, speed: str, adapter: str, test_faster: bool) -> str:
        """The timing's words (`speed`) when the device won (or the test hook says it did);
        GpuRefused with them when it lost."""
        from .executors.webgpu.self_test import GpuRefused
        if test_faster:
            measured["faster"], speed = True, speed + ", taken as faster by the test hook gpuTestFaster"
        if not measured["faster"]:
            raise GpuRefused(f"the WebGPU adapter ({adapter}) passed the known-answer check but is "
                             f"slower than the wasm kernels: {speed}")
        return speed

    def _gpu_report(self, tier, adapter, info, measured, speed) -> str:
        return json.dumps({"tier": tier, "note": self.tier_note, "adapter": adapter, "adapterInfo": info,
                           "measured": measured, "speed": speed})

    def gpu_device(self):
        """The browser's GPUDevice the encoder runs on (the worker watches its `lost`), or None."""
        return self.gpu.device.js_device if self.gpu is not None else None

    def device_lost(self, reason: str) -> None:
        """The browser said the device is lost (GPUDevice.lost settled): from now on the CPU
        computes, told now rather than at the next read."""
        from .executors.webgpu.device import DeviceError
        if self.tier == "webgpu":
            self.engine.executor.device_failed(DeviceError(f"GPUDevice.lost: {reason}"))

    def use_workers(self, workers=None) -> bool:
        """After the device was lost: the engine on the CPU with kernel workers (a KernelPool;
        none: alone) instead of beside the lost device, when no stream or file is open (the
        worker retries after them). True when done; the worker then serves the pool."""
        if self.session is not None or self.file is not None:
            return False
        self.engine, self.gpu = Engine(self.engine.model, self.engine.tier, workers=workers), None
        return True

    def hang_gpu(self, after_reads: int, limit_ms: int) -> None:
        """(debug, tests) The read `after_reads` reads from now never completes (a hung device):
        the watchdog, at `limit_ms`, gives up on it."""
        self.gpu.device.hang_after(after_reads, limit_ms / 1000)

    def _gpu_engine(self, model, tier: str) -> Engine:
        engine = Engine(model, tier, gpu=self.gpu)
        engine.executor.on_lost = self._gpu_lost
        return engine

    def _gpu_lost(self, reason: str) -> None:
        self.gpu_lost_note = (f"{self.engine.tier}: the WebGPU device failed mid-decode ({reason}); that "
                              "decode finished on the CPU with the same result, and the CPU runs from now on")
        self.tier_note = self.gpu_lost_note

    def gpu_lost(self):
        """Once, after the device failed mid-decode: the note saying so (the worker tells the
        page); else None."""
        note, self.gpu_lost_note = self.gpu_lost_note, None
        return note

    def lose_gpu(self, after_reads: int = 0) -> None:
        """(debug, tests) Destroy the device just before its `after_reads`-th read from now: the
        read then fails as on a real loss (mapAsync rejects), mid-decode."""
        gpu, left = self.gpu, [int(after_reads)]
        read = gpu.read

        def losing_read(buf, nbytes):
            if left[0] == 0:
                gpu.device.js_device.destroy()
            left[0] -= 1
            return read(buf, nbytes)
        gpu.read = losing_read

    @property
    def tier(self) -> str:
        """"webgpu" while the device runs the encoder, else the wasm tier."""
        ex = self.engine.executor
        return "webgpu" if self.gpu is not None and getattr(ex, "lost", True) is None else self.engine.tier

    # -- the model ------------------------------------------------------------------------------

    def load(self, model, tier: str, workers=None) -> str:
        """An engine on `model` (its tensors are read from these bytes: keep them); the tier used."""
        self.engine, self.model = Engine.from_buffer(model, tier, workers=workers), model
        return self.engine.tier

    def switch(self, model, tier: str, workers=None) -> str:
        """Another model: the loader validates it first; on any error the current one stays. On
        the GPU (load_gpu) while it runs: the new one too (an async call then, as load_gpu)."""
        if self.session is not None:
            raise RuntimeError("a live stream is open: stop it before changing the model")
        if self.tier == "webgpu":
            engine = self._gpu_engine(load_model(model), tier)
        else:
            engine = Engine.from_buffer(model, tier, workers=workers)
        self.engine, self.model = engine, model
        return self.model_info()

    def place_tokens_with(self, model, tier: str) -> None:
        """(Benchmarks, the page's debug hooks) Streams opened from now on take their tokens from
        `model` (bytes of a trained model) while this engine still decodes every window: TokensFrom."""
        self.placing = (Engine.from_buffer(model, tier), model)     # the bytes stay referenced

    def model_info(self) -> str:
        m = self.engine.model
        return json.dumps({"name": m.name, "notice": m.notice, "tier": self.tier, "tierNote": self.tier_note,
                           "threads": self.engine.threads})

    def threads(self) -> int:
        return self.engine.threads

    def workers_lost(self):
        """Why the kernel workers are gone (the engine then computes alone), or None."""
        return self.engine.executor.lost

    # -- a live stream --------------------------------------------------------------------------

    def start(self, rate, max_pending_seconds=None, resume=None, latency="fast", pace="exact") -> None:
        """Open a stream at `rate` Hz; max_pending_seconds: how far decoding may fall behind
        before feed() refuses audio (StreamConfig.max_pending_ms if None); latency: a named
        setting (StreamConfig.for_latency); pace: "live" decodes at the newest audio when behind
        (the microphone), "exact" at every position (a recording). resume: the JSON of
        a checkpoint() of a stream in a worker that died, with "prefix" {text, words, tokens}
        added (what the page had committed): that stream goes on here once the page feeds its
        input again from the checkpoint's "from"."""
        fields = {} if max_pending_seconds is None else {"max_pending_ms": int(float(max_pending_seconds) * 1000)}
        if resume is None:
            config = StreamConfig.for_latency(str(latency), pace=str(pace), **fields)
            recogniser = self.engine if self.placing is None else TokensFrom(self.engine, self.placing[0])
            self.session = Stream(recogniser, int(rate), config)
            self.received = 0                # samples at the stream's rate that feed() was given
            self.refused = 0                 # ... and refused
            self.refused_spans = []          # [[first, end)] of the refused ones (feed()'s count)
        else:
            state = json.loads(resume)
            self.session = Stream.resume(self.engine, state["checkpoint"], state["prefix"])
            self.received, self.refused = int(state["from"]), int(state["refused"])
            self.refused_spans = [list(span) for span in state["refused_spans"]]
        self.checkpointed_at = None          # the decode count of the last checkpoint

    def feed(self, samples):
        """Add samples; None, or why they were refused (the stream is too far behind: the
        worker reports it, and the samples are counted in the metrics' refused_seconds).
        After a resume, the input the old worker refused is refused again as it is fed again,
        so the stream sees what it saw before (refused_spans)."""
        memory = _memory(samples)
        if memory.ndim != 1 or memory.itemsize != 4:
            memory = memory.cast("B").cast("f")
        first = self.received
        self.received += len(memory)
        refused = None
        for at, part in self._unrefused(memory, first):
            try:
                self.session.feed(part)
            except StreamOverrun as e:
                self.refused += len(part)
                self._note_refused(at, at + len(part))
                refused = str(e)
        return refused

    def _unrefused(self, memory: memoryview, first: int) -> list:
        """(index, samples) of the parts of samples [first, first + n) outside the spans refused
        before a resume: the whole chunk but while one is fed again."""
        end, parts, at = first + len(memory), [], first
        for a, b in self.refused_spans:
            if b <= at or a >= end:
                continue
            if a > at:
                parts.append((at, memory[at - first:a - first]))
            at = max(at, b)
        if at < end:
            parts.append((at, memory[at - first:]))
        return parts

    def _note_refused(self, first: int, end: int) -> None:
        spans = self.refused_spans
        if spans and spans[-1][1] == first:
            spans[-1][1] = end
        else:
            spans.append([first, end])

    def _feeder_index(self, accepted: int) -> int:
        """feed()'s count of the `accepted`-th sample the stream took (they differ by the
        refused samples before it)."""
        at = accepted
        for a, b in self.refused_spans:
            if a > at:
                break
            at += b - a
        return at

    def checkpoint(self) -> dict:
        """The stream's checkpoint (Stream.checkpoint) as the page keeps it: "from" is
        the first sample, in feed()'s count, the page must keep and feed again to resume it."""
        state = self.session.checkpoint()
        first = self._feeder_index(state["input_from"])
        self.refused_spans = [span for span in self.refused_spans if span[1] > first]
        self.checkpointed_at = self.session.stats.decodes
        return {"checkpoint": state, "from": first, "refused": self.refused, "refused_spans": self.refused_spans}

    def checkpoint_json(self) -> str:
        return json.dumps(self.checkpoint())

    def next_window_seconds(self) -> float:
        """The window the next partial() decodes first (at most max_window), 0 when none is due
        yet: before a step, what the page's heartbeat must wait for."""
        return round(self.session.next_window_seconds(), 2)

    def partial(self, budget_ms=None) -> str:
        """Run the due decodes in order - with `budget_ms`, one, then more only while that much
        wall time has not passed, so the worker reads its messages (audio, pings, cancel)
        between steps however far behind it is - and return what changed since the last poll
        (Stream.partial: the committed words and text added, the tentative tail), the
        live metrics and what is still due. Its size and cost do not grow with the session."""
        session = self.session
        if budget_ms is None:
            view = session.partial()
        else:
            started = time.perf_counter()
            session.run_due(1)
            while session.due and (time.perf_counter() - started) * 1000 < float(budget_ms):
                session.run_due(1)
            view = session.partial(0)                   # the text once, after the step
        metrics = live_metrics(session.stats, session.audio_seconds, session.pending_seconds)
        metrics["refused_seconds"] = round(self.refused / session.sample_rate, 2)
        metrics["fed_seconds"] = self.received / session.sample_rate     # what the page's stream.pending
        # a new checkpoint whenever a decode ran: words commit only in decodes, so the page's
        # committed words and this checkpoint always agree
        fresh = self.checkpointed_at != session.stats.decodes
        return json.dumps({"view": view, "metrics": metrics, "due": session.due,
                           "checkpoint": self.checkpoint() if fresh else None,
                           "next_window_seconds": round(session.next_window_seconds(), 2),
                           "tail_window_seconds": round(session.tail_window_seconds(), 2)})

    def finish(self) -> str:
        final = self.session.finish()
        metrics = stream_metrics(final, self.session.stats)
        metrics["refused_seconds"] = round(self.refused / self.session.sample_rate, 2)
        if isinstance(self.session.engine, TokensFrom):     # (benchmarks) the placing model's time
            metrics["placing_seconds"] = round(self.session.engine.placing_seconds, 3)
        self.session = None
        return json.dumps({"result": final, "metrics": metrics})

    def cancel_stream(self) -> None:
        """Drop the open stream: a decode in progress stops, nothing is committed."""
        if self.session is not None:
            self.session.cancel()
        self.session = None

    # -- a file, a window per step --------------------------------------------------------------

    def prepare_wav(self, data) -> float:
        """A WAV file's bytes, decoded and resampled, ready for begin_file(); its seconds."""
        self.pending = load_audio(self.engine.k, _bytes(data))
        return len(self.pending) / MODEL_RATE

    def prepare_pcm(self, data, rate, channels) -> float:
        """Interleaved float32 samples (bytes) at `rate` Hz, as prepare_wav."""
        mono = self.engine.k.pcm_to_mono(_bytes(data), "f32", int(channels))
        self.pending = resample(self.engine.k, mono, int(rate))
        return len(self.pending) / MODEL_RATE

    def begin_file(self) -> float:
        if self.pending is None:
            raise RuntimeError("begin_file() before prepare_wav() or prepare_pcm()")
        samples, self.pending = self.pending, None
        self.file = SteppedTranscription(self.engine, samples)
        return self.file.total_seconds

    def file_step(self) -> str:
        """One step (at most one window): {"done": seconds} and, at the end, "result"."""
        finished = self.file.step()
        out = {"done": round(self.file.done_seconds, 2)}
        if finished:
            out["result"], self.file = self.file.result, None
        return json.dumps(out)

    def cancel_file(self) -> None:
        self.file = None


__all__ = ["WebApp", "new_buffer"]
