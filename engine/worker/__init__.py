"""The engine worker's Python side (web/worker.mjs and web/worker/): one engine, one live stream, one file at a
time, with answers the page can post as they are (JSON text). Each of the worker's jobs has its
namesake here, and the worker's object calls only its own:

    app = WebWorker()
    app.model      Model     (model.py)    the engine on the page's model: load, switch, what runs
    app.gpu        Gpu       (gpu.py)      the WebGPU device: request, check, lose, its notes
    app.stream     Stream    (stream.py)   the live stream: feed, partial, checkpoint, finish
    app.file       FileJob   (file_job.py) a file, a window per step

The worker calls these through Pyodide; tests call them natively with Python buffers. Values
from JavaScript arrive as Pyodide proxies: a typed array has to_memoryview(), bytes have
to_bytes(); `memory_of` and `bytes_of` (model.py) take those and Python buffers alike.
"""

from __future__ import annotations

from .file_job import FileJob
from .gpu import Gpu
from .model import Model, new_buffer
from .stream import Stream, TokensFrom


class WebWorker:
    """The four jobs, made together (none appears later): they share the Model's engine."""

    def __init__(self):
        self.model = Model()
        self.gpu = Gpu(self.model)
        self.model.gpu = self.gpu
        self.stream = Stream(self.model)
        self.file = FileJob(self.model)
        self.model.stream_open = lambda: self.stream.open
        self.model.file_open = lambda: self.file.open


__all__ = ["WebWorker", "Model", "Gpu", "Stream", "FileJob", "TokensFrom", "new_buffer"]
