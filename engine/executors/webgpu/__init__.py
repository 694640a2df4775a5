"""The WebGPU executor's room: the executor (executor.py), the device's compiled kernels and
buffers (device.py; the WGSL in kernels/webgpu/), one module per kind of operation (norm,
attention, conv, subsampling; the linears are device.py's GpuLinear), the browser's device
behind wgpu-py's calls (browser.py), the known-answer check (self_test.py), what an adapter is
(adapter.py) and the tests' wrong devices (mutations.py).
"""
