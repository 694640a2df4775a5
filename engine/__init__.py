"""phonon-web engine: the Python side of in-browser Phonon-2 speech recognition.

Runs unchanged natively (CPython + ctypes on the host kernel library) and in Pyodide (ctypes
on the emscripten side modules). Standard library only on the data path.
"""

__version__ = "0.1.0"
