"""The browser's WebGPU device behind the calls engine/executors/webgpu/device.py makes: the
same GpuKernels / GpuLinear code runs natively on a wgpu-py device and in Pyodide on this.

    device = await request_device()          # in an async call (a job, the engine worker)
    engine = Engine.from_buffer(model, "scalar", gpu=device)

The browser's API is camelCase and asynchronous (requestAdapter, requestDevice, mapAsync,
getCompilationInfo, popErrorScope); GpuKernels is written against wgpu-py's synchronous
names. BrowserDevice maps each call it makes to the browser's, and waits for a promise with
pyodide.ffi.run_sync: JavaScript Promise Integration suspends the WebAssembly stack until the
promise settles, so the engine stays synchronous. run_sync works only when Python was entered
through an async function (a coroutine the page awaits), pyodide.runPythonAsync or
callPromising, in a browser with JSPI; `request_device` refuses otherwise, saying so.

The calls, and what each becomes:
- create_shader_module(code=): createShaderModule, then getCompilationInfo awaited; an error
  message raises (so GpuKernels' packed-dot probe and a broken shader behave as natively),
  and the error the browser also reported to the open scopes is dropped;
- create_compute_pipeline(layout="auto", compute={module, entry_point}):
  createComputePipelineAsync awaited (it rejects on a validation error), with
  get_bind_group_layout;
- create_buffer(size=, usage=), create_buffer_with_data(data=, usage=): createBuffer (and
  writeBuffer); the buffer is the browser's GPUBuffer (its `size` is what GpuKernels reads);
- create_bind_group(layout=, entries=), create_command_encoder() with begin_compute_pass,
  set_pipeline, set_bind_group, dispatch_workgroups, end, finish: the camelCase calls;
- queue.write_buffer(buf, offset, data): the bytes copied into a Uint8Array, writeBuffer;
- queue.read_buffer(buf, offset, size): a copy into a MAP_READ buffer (one kept per device,
  grown), mapAsync awaited, the range copied out, unmap.
Errors: a validation and an out-of-memory error scope are kept open on the device; each read
pops them (awaited with the map), raises the first error, and opens new ones, so a command the
browser refused fails the read that follows instead of giving zeros.

A watchdog on every read: a device that hangs (mapAsync never settles, a driver stuck) would
hang the page's transcription forever. A read that takes longer than `read_limit_s()` (the
first: WATCHDOG_FIRST_S; later ones: WATCHDOG_FACTOR times the slowest read so far, at least
WATCHDOG_MIN_S) raises instead, and the device is destroyed; the executor then redoes that
encode on the CPU (the same bits) and stays there (engine/executors/webgpu/executor.py).

Imports nothing outside the standard library and Pyodide's own modules (js, pyodide.ffi), and
only inside the functions, so the module imports natively too (tests check the wheel's list).
"""

from __future__ import annotations

# GPUBufferUsage and GPUMapMode (WebGPU specification)
MAP_READ, COPY_DST = 0x0001, 0x0008
MAP_MODE_READ = 0x0001
SCOPES = ("validation", "out-of-memory")      # pushed in this order, popped in reverse

# The read-back watchdog (seconds). The first read is the known-answer check's (its whole
# encode waits in that read: seconds on a CPU emulation under load); every later read waits at most WATCHDOG_FACTOR times
# the slowest one so far: a window of a few times the check's audio takes a few times as long.
WATCHDOG_FIRST_S = 120.0
WATCHDOG_MIN_S = 10.0
WATCHDOG_FACTOR = 30.0


class ReadTimeout(RuntimeError):
    """A read-back did not finish within the watchdog's time: the device hung."""


class GpuUnavailable(RuntimeError):
    """No usable WebGPU device here; the message says why (no navigator.gpu, no adapter, no
    JSPI, ...)."""


def _js(value):
    """A Python dict / list (possibly holding JsProxies) as a JavaScript object / array."""
    import js
    from pyodide.ffi import to_js
    return to_js(value, dict_converter=js.Object.fromEntries)


def _wait(promise):
    from pyodide.ffi import run_sync
    return run_sync(promise)


def _to_u8(data):
    """Bytes-like `data` as a new Uint8Array (a copy into JavaScript memory)."""
    import js
    raw = memoryview(data).cast("B")
    out = js.Uint8Array.new(raw.nbytes)
    out.assign(raw)
    return out


class _Pipeline:
    def __init__(self, js_pipeline):
        self.js = js_pipeline

    def get_bind_group_layout(self, index):
        return self.js.getBindGroupLayout(index)


class _ComputePass:
    def __init__(self, js_pass):
        self._pass = js_pass

    def set_pipeline(self, pipeline):
        self._pass.setPipeline(pipeline.js)

    def set_bind_group(self, index, bind_group):
        self._pass.setBindGroup(index, bind_group)

    def dispatch_workgroups(self, x, y=1, z=1):
        self._pass.dispatchWorkgroups(x, y, z)

    def end(self):
        self._pass.end()


class _CommandEncoder:
    def __init__(self, js_encoder):
        self._encoder = js_encoder

    def begin_compute_pass(self):
        return _ComputePass(self._encoder.beginComputePass())

    def finish(self):
        return self._encoder.finish()


class _Queue:
    def __init__(self, device: "BrowserDevice"):
        self._device = device
        self._queue = device.js_device.queue

    def submit(self, command_buffers):
        self._queue.submit(_js(list(command_buffers)))

    def write_buffer(self, buffer, buffer_offset, data):
        raw = memoryview(data).cast("B")
        pad = (-raw.nbytes) % 4                # writeBuffer's size must be a multiple of 4
        if pad:
            raw = memoryview(raw.tobytes() + bytes(pad))
        self._queue.writeBuffer(buffer, buffer_offset, _to_u8(raw))

    def read_buffer(self, buffer, buffer_offset=0, size=None):
        return self._device.read(buffer, buffer_offset, size)


class BrowserDevice:
    """A browser GPUDevice (a JsProxy) with the wgpu-py calls GpuKernels makes. `adapter_info`:
    what the page learnt of the adapter (vendor, architecture, ...), for reports."""

    def __init__(self, js_device, adapter_info: dict | None = None, language_features=()):
        from pyodide.ffi import can_run_sync
        if not can_run_sync():
            raise GpuUnavailable("WebGPU from Python needs JavaScript Promise Integration (JSPI) and a "
                                 "call entered through an async function: pyodide.ffi.can_run_sync() is False")
        self.js_device = js_device
        self.adapter_info = dict(adapter_info or {})
        self.language_features = tuple(language_features)
        self.queue = _Queue(self)
        self._staging = None
        self.slowest_read_s = None                # the longest read so far (the watchdog scales with it)
        self.fixed_limit_s = None                 # (tests) the watchdog's limit, whatever the reads took
        self._hang_in = None                      # (tests) reads until one whose map never settles
        self._push_scopes()

    # -- errors ------------------------------------------------------------------------------

    def _push_scopes(self):
        for scope in SCOPES:
            self.js_device.pushErrorScope(scope)

    def _pop_scopes(self):
        """The promises of the open scopes' errors, innermost first."""
        return [self.js_device.popErrorScope() for _ in SCOPES]

    def _drain(self):
        """Forget the errors the open scopes caught (a refused shader or pipeline was already
        raised as such; the next read must not raise it again)."""
        import js
        _wait(js.Promise.all(_js(self._pop_scopes())))
        self._push_scopes()

    @staticmethod
    def _raise_first(errors):
        for error in errors:
            if error:                      # null (jsnull) when the scope saw no error
                raise RuntimeError(f"WebGPU {error.constructor.name}: {error.message}")

    # -- the watchdog -------------------------------------------------------------------------

    def read_limit_s(self) -> float:
        """How long the next read may take before it counts as a hung device."""
        if self.fixed_limit_s is not None:
            return self.fixed_limit_s
        if self.slowest_read_s is None:
            return WATCHDOG_FIRST_S
        return max(WATCHDOG_MIN_S, WATCHDOG_FACTOR * self.slowest_read_s)

    def hang_after(self, reads: int, limit_s: float) -> None:
        """(debug, tests) The read `reads` reads from now maps a promise that never settles (a
        hung device), and the watchdog waits `limit_s` for every read."""
        self._hang_in, self.fixed_limit_s = int(reads), float(limit_s)

    def _mapped(self, padded: int):
        """mapAsync of the staging buffer, or (hang_after) a promise that never settles."""
        import js
        from pyodide.ffi import create_once_callable
        if self._hang_in is not None:
            self._hang_in -= 1
            if self._hang_in < 0:
                self._hang_in = None
                return js.Promise.new(create_once_callable(lambda resolve, reject: None))
        return self._staging.mapAsync(MAP_MODE_READ, 0, padded)

    def _within_limit(self, promise):
        """`promise`'s results, or ReadTimeout once the watchdog's time has passed (the device
        is destroyed then: whatever it was doing, it is not used again)."""
        import js
        import time
        from pyodide.ffi import create_once_callable
        limit = self.read_limit_s()
        timer = []

        def expire(resolve, reject):
            timer.append(js.setTimeout(create_once_callable(lambda: resolve("timeout")), int(limit * 1000)))
        watchdog = js.Promise.new(create_once_callable(expire))
        started = time.perf_counter()
        out = _wait(js.Promise.race(_js([promise, watchdog])))
        if isinstance(out, str) and out == "timeout":
            try:
                self.js_device.destroy()
            except Exception:       # noqa: BLE001 - already lost
                pass
            raise ReadTimeout(f"WebGPU read-back did not finish within {limit:g} s: the device hung "
                              "(it was destroyed; the CPU computes from now on)")
        js.clearTimeout(timer[0])
        took = time.perf_counter() - started
        self.slowest_read_s = max(self.slowest_read_s or 0.0, took)
        return out

    # -- the calls GpuKernels makes ---------------------------------------------------------

    def create_shader_module(self, code: str, label: str = ""):
        module = self.js_device.createShaderModule(_js({"label": label, "code": code}))
        info = _wait(module.getCompilationInfo())
        errors = [m for m in info.messages if m.type == "error"]
        if errors:
            self._drain()
            m = errors[0]
            raise RuntimeError(f"WGSL of {label or 'a shader'} refused: line {m.lineNum}: {m.message}"
                               + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""))
        return module

    def create_compute_pipeline(self, layout="auto", compute=None, label: str = ""):
        stage = {"module": compute["module"], "entryPoint": compute.get("entry_point", "main")}
        try:
            return _Pipeline(_wait(self.js_device.createComputePipelineAsync(
                _js({"label": label, "layout": layout, "compute": stage}))))
        except Exception:
            self._drain()
            raise

    def create_buffer(self, size: int, usage: int, label: str = ""):
        return self.js_device.createBuffer(_js({"label": label, "size": size, "usage": usage}))

    def create_buffer_with_data(self, data, usage: int, label: str = ""):
        raw = memoryview(data).cast("B")
        buf = self.create_buffer(size=(raw.nbytes + 3) // 4 * 4, usage=usage | COPY_DST, label=label)
        self.queue.write_buffer(buf, 0, raw)
        return buf

    def create_bind_group(self, layout, entries, label: str = ""):
        return self.js_device.createBindGroup(_js({"label": label, "layout": layout, "entries": entries}))

    def create_command_encoder(self):
        return _CommandEncoder(self.js_device.createCommandEncoder())

    def read(self, buffer, offset: int = 0, size: int | None = None) -> bytes:
        """`size` bytes of `buffer` from `offset`, after every submitted command: copied to a
        mappable buffer, mapAsync awaited (with the error scopes), copied out."""
        import js
        size = int(buffer.size) - offset if size is None else size
        padded = (size + 3) // 4 * 4             # copyBufferToBuffer's size: a multiple of 4
        if self._staging is None or self._staging.size < padded:
            if self._staging is not None:
                self._staging.destroy()
            self._staging = self.create_buffer(size=max(256, padded), usage=MAP_READ | COPY_DST,
                                               label="phonon read-back")
        encoder = self.js_device.createCommandEncoder()
        encoder.copyBufferToBuffer(buffer, offset, self._staging, 0, padded)
        self.js_device.queue.submit(_js([encoder.finish()]))
        mapped = self._mapped(padded)
        results = self._within_limit(js.Promise.allSettled(_js([mapped, *self._pop_scopes()])))
        self._push_scopes()
        settled = list(results)
        self._raise_first([r.value for r in settled[1:] if r.status == "fulfilled"])
        if settled[0].status != "fulfilled":
            # (the reason can arrive wrapped: "PythonError: pyodide.ffi.JsException: AbortError: ...")
            reason = str(settled[0].reason).rsplit("JsException: ", 1)[-1]
            raise RuntimeError(f"WebGPU mapAsync failed: {reason}")
        try:
            out = js.Uint8Array.new(self._staging.getMappedRange(0, padded)).to_bytes()
        finally:
            self._staging.unmap()
        return out[:size]


async def request_device(power_preference: str = "high-performance") -> BrowserDevice:
    """The page's (or worker's) WebGPU device, with the adapter's info and the WGSL language
    features; GpuUnavailable saying why when there is none."""
    import js
    from pyodide.ffi import can_run_sync
    gpu = getattr(js.navigator, "gpu", None)
    if not gpu:
        raise GpuUnavailable("this browser has no WebGPU (navigator.gpu is undefined)")
    adapter = await gpu.requestAdapter(_js({"powerPreference": power_preference}))
    if not adapter:                               # null (jsnull in Pyodide 314)
        raise GpuUnavailable("navigator.gpu.requestAdapter() returned no adapter")
    if not can_run_sync():
        raise GpuUnavailable("WebGPU from Python needs JavaScript Promise Integration (JSPI) and a "
                             "call entered through an async function: pyodide.ffi.can_run_sync() is False")
    info = adapter.info
    adapter_info = {name: str(getattr(info, name, "") or "")
                    for name in ("vendor", "architecture", "device", "description")}
    features = [str(f) for f in getattr(gpu, "wgslLanguageFeatures", [])]
    device = await adapter.requestDevice()
    return BrowserDevice(device, adapter_info, features)
