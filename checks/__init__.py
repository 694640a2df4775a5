"""Checks that run inside every runtime (CPython, Pyodide under Node, Pyodide in Chromium): the
seeded kernel sweep, the kernel benchmark and the jobs the tests and benchmarks send to a
runtime. Shipped to the browser only in the test wheel, never in the runtime wheel."""
