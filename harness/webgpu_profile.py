"""Per-kernel time and dispatch record of the WebGPU tier, natively (wgpu-py).

    profile = DispatchProfile(gpu)        # gpu: an engine.executors.webgpu.device.GpuKernels
    engine.encode(audio)                  # every pass that GpuKernels runs is recorded
    profile.records                       # [Dispatch(module, params, groups, seconds)]
    profile.by_module()                   # {module: {"dispatches", "seconds"}}

It takes over the GpuKernels instance's `run` (same command buffers: one compute pass per
dispatch, in order, one submission per call) and `uniform` (to note each pass's parameters, the
uniform values it was given: binding 0 of every module). Where the device was made with the
"timestamp-query" feature (open_device in harness/bench_webgpu.py requests it; lavapipe has
it), every pass writes a timestamp at its beginning and end and `seconds` is their difference
(the device's own clock, nanoseconds by WebGPU's definition); otherwise each pass is submitted
alone and waited for (on_submitted_work_done), so `seconds` includes a submission's overhead.
`dry=True` records the passes without submitting any (harness/webgpu_cost.py counts an encode's
work that way without running it; what the encode reads back is then meaningless).
Only GpuKernels.run, .pipeline, ._bind and .uniform are used, which the tier has had since it
was made, so the same profile times an older checkout's executor side by side.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass

QUERY_RESOLVE, COPY_SRC, COPY_DST, MAP_READ = 0x0200, 0x0004, 0x0008, 0x0001


@dataclass
class Dispatch:
    module: str
    params: tuple          # the u32 values of its uniform (binding 0), () if none was noted
    groups: tuple          # (x, y) workgroups
    seconds: float | None  # its GPU time


class DispatchProfile:
    """Records (and times) every pass a GpuKernels runs; `recording` False pauses it."""

    def __init__(self, gpu, dry: bool = False):
        self.gpu = gpu
        self.dry = dry
        self.timestamps = "timestamp-query" in set(getattr(gpu.device, "features", ()) or ())
        self.records: list[Dispatch] = []
        self.recording = True
        self._params = {}                      # id(uniform buffer) -> its values
        self._capacity = 0
        self._run_plain = gpu.run
        make_uniform = gpu.uniform

        def uniform(*values):
            buf = make_uniform(*values)
            self._params[id(buf)] = tuple(values)
            return buf

        gpu.uniform = uniform
        gpu.run = self.run

    def _queries(self, count: int):
        if count > self._capacity:
            self._capacity = max(count, 2 * self._capacity, 256)
            device = self.gpu.device
            self._query_set = device.create_query_set(type="timestamp", count=self._capacity)
            self._resolved = device.create_buffer(size=8 * self._capacity, usage=QUERY_RESOLVE | COPY_SRC)
        return self._query_set

    def run(self, passes):
        if not self.recording:
            return self._run_plain(passes)
        if self.dry:
            for one in passes:
                self._note(one, None)
            self.gpu._uniforms_used = 0
            return None
        if not self.timestamps:
            for one in passes:
                started = time.perf_counter()
                self._run_plain([one])
                self.gpu.device.queue.on_submitted_work_done_sync()
                self._note(one, time.perf_counter() - started)
            return None
        gpu, device = self.gpu, self.gpu.device
        query_set = self._queries(2 * len(passes))
        encoder = device.create_command_encoder()
        for i, (module, buffers, groups) in enumerate(passes):
            cpass = encoder.begin_compute_pass(timestamp_writes={
                "query_set": query_set, "beginning_of_pass_write_index": 2 * i,
                "end_of_pass_write_index": 2 * i + 1})
            cpass.set_pipeline(gpu.pipeline(module))
            cpass.set_bind_group(0, gpu._bind(module, buffers))
            cpass.dispatch_workgroups(groups[0], groups[1], 1)
            cpass.end()
        encoder.resolve_query_set(query_set, 0, 2 * len(passes), self._resolved, 0)
        device.queue.submit([encoder.finish()])
        gpu._uniforms_used = 0
        gpu.counters["submissions"] += 1
        gpu.counters["dispatches"] += len(passes)
        stamps = array("Q", bytes(device.queue.read_buffer(self._resolved, 0, 16 * len(passes))))
        for i, one in enumerate(passes):
            self._note(one, max(0, stamps[2 * i + 1] - stamps[2 * i]) * 1e-9)
        return None

    def _note(self, one, seconds: float) -> None:
        module, buffers, groups = one
        params = self._params.get(id(buffers[0]), ()) if buffers else ()
        self.records.append(Dispatch(module, params, tuple(groups), seconds))

    def by_module(self) -> dict:
        return group_by_module(self.records)

    def clear(self) -> None:
        self.records.clear()


def group_by_module(records) -> dict:
    """{module: {"dispatches": n, "seconds": total}} of Dispatch records, in the order first seen."""
    out = {}
    for r in records:
        row = out.setdefault(r.module, {"dispatches": 0, "seconds": 0.0})
        row["dispatches"] += 1
        row["seconds"] += r.seconds or 0.0
    return out
