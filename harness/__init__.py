"""Test and benchmark harness: run the engine in Pyodide under Node and in headless Chromium,
serve static files locally, and drive the browser with playwright. Host-side only."""
