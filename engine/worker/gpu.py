"""The WebGPU device the encoder may run on (web/worker/gpu.mjs calls it): requested, checked
against the known answer, timed against the wasm kernels when preferred; its loss (told by the
browser, or met mid-decode) and the notes the page shows. The debug hooks lose or hang it."""

from __future__ import annotations

import json

from ..family import load as load_model
from ..transcribe import Engine


class Gpu:
    """kernels: the GpuKernels of the device in use, or None; tier_note: why the tier in use
    runs (r.tierNote); lost_note: set once when the device is lost mid-decode."""

    def __init__(self, model):
        self.model = model                   # the worker's Model: the engine this puts on the device
        self.kernels = None
        self.tier_note = None
        self._lost_note = None

    async def load(self, model, tier: str, mode: str, expected=None, patch=None,
                   hardware: bool = False, options: str = "{}") -> str:
        """An engine with its encoder on the browser's WebGPU device, the CPU part on
        the wasm `tier`, once the device passed the known-answer check (engine/executors/webgpu/self_test.py
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
        promises are awaited through JSPI (engine/executors/webgpu/browser.py). Returns JSON {"tier", "note", "adapter",
        "adapterInfo", "measured", "speed"} (measured: the timing, when made; speed: its words)."""
        from ..executors.webgpu.adapter import adapter_name, cpu_emulation
        from ..executors.webgpu.mutations import SHADER_MUTATIONS
        from ..executors.webgpu.self_test import GpuRefused, self_test, speed_note, time_against_cpu
        from ..kernels import Kernels
        from ..executors.webgpu.browser import GpuUnavailable, request_device
        from ..executors.webgpu.device import GpuKernels
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
            return self._report(None, adapter, info, measured, speed)
        self.kernels = gpu
        self.model.engine, self.model.bytes = self.engine_for(loaded, tier), model
        self.tier_note = (f"webgpu: {adapter} (passed the known-answer check"
                          + (f"; a CPU emulation ({emulation}), forced" if emulation else "")
                          + (f"; {speed}" if speed else "")
                          + f"; the CPU part on {self.model.engine.tier})")
        return self._report(self.model.tier, adapter, info, measured, speed)

    @staticmethod
    def _speed_verdict(measured: dict, speed: str, adapter: str, test_faster: bool) -> str:
        """The timing's words (`speed`) when the device won (or the test hook says it did);
        GpuRefused with them when it lost."""
        from ..executors.webgpu.self_test import GpuRefused
        if test_faster:
            measured["faster"], speed = True, speed + ", taken as faster by the test hook gpuTestFaster"
        if not measured["faster"]:
            raise GpuRefused(f"the WebGPU adapter ({adapter}) passed the known-answer check but is "
                             f"slower than the wasm kernels: {speed}")
        return speed

    def _report(self, tier, adapter, info, measured, speed) -> str:
        return json.dumps({"tier": tier, "note": self.tier_note, "adapter": adapter, "adapterInfo": info,
                           "measured": measured, "speed": speed})

    def engine_for(self, model, tier: str) -> Engine:
        """An engine on `model` with its encoder on this device, the CPU part on `tier`."""
        engine = Engine(model, tier, gpu=self.kernels)
        engine.executor.on_lost = self._lost
        return engine

    def device(self):
        """The browser's GPUDevice the encoder runs on (the worker watches its `lost`), or None."""
        return self.kernels.device.js_device if self.kernels is not None else None

    def device_lost(self, reason: str) -> None:
        """The browser said the device is lost (GPUDevice.lost settled): from now on the CPU
        computes, told now rather than at the next read."""
        from ..executors.webgpu.device import DeviceError
        if self.model.tier == "webgpu":
            self.model.engine.executor.device_failed(DeviceError(f"GPUDevice.lost: {reason}"))

    def _lost(self, reason: str) -> None:
        self._lost_note = (f"{self.model.engine.tier}: the WebGPU device failed mid-decode ({reason}); that "
                           "decode finished on the CPU with the same result, and the CPU runs from now on")
        self.tier_note = self._lost_note

    def lost_note(self):
        """Once, after the device failed mid-decode: the note saying so (the worker tells the
        page); else None."""
        note, self._lost_note = self._lost_note, None
        return note

    def hang(self, after_reads: int, limit_ms: int) -> None:
        """(debug, tests) The read `after_reads` reads from now never completes (a hung device):
        the watchdog, at `limit_ms`, gives up on it."""
        self.kernels.device.hang_after(after_reads, limit_ms / 1000)

    def lose(self, after_reads: int = 0) -> None:
        """(debug, tests) Destroy the device just before its `after_reads`-th read from now: the
        read then fails as on a real loss (mapAsync rejects), mid-decode."""
        gpu, left = self.kernels, [int(after_reads)]
        read = gpu.read

        def losing_read(buf, nbytes):
            if left[0] == 0:
                gpu.device.js_device.destroy()
            left[0] -= 1
            return read(buf, nbytes)
        gpu.read = losing_read
