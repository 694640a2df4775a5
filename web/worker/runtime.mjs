// The engine worker's Runtime (web/worker.mjs): Pyodide, the engine wheel, the Python side.
import { BootError, bootPyodide } from "../pyodide-boot.mjs";
import { StartSnapshots, sha256Hex } from "../start-snapshot.mjs";
import { Fatal, lastLine } from "./common.mjs";

// The first of Pyodide's files and the wheel (manifest.files) that the host does not serve, as
// "<url> answered HTTP <status> ...", or null.
async function missingRuntimeFile(manifest, base) {
  const names = Object.keys(manifest.files || {}).filter((rel) => rel.startsWith(manifest.pyodide.path) || rel === manifest.wheel);
  for (const rel of names) {
    const url = new URL(rel, base).href;
    try {
      const response = await fetch(url, { method: "HEAD", cache: "no-store" });
      if (!response.ok) {
        return `${url} answered HTTP ${response.status}: the host lacks a runtime file (serve every file of the package's folder; manifest.json lists them)`;
      }
    } catch (e) {
      return `${url} could not be fetched (${e.message})`;
    }
  }
  return null;
}

// ------------------------------------------------------------------------------------------
// Runtime: Pyodide, the engine wheel, and the Python side of this worker (engine/worker/)

export class Runtime {
  constructor() {
    this.pyodide = null;
    this.module = null;                       // the module engine.worker
    this.app = null;                          // its WebWorker: .model, .gpu, .stream, .file, each job's Python side
  }

  // -> {snapshot: "restored" | "made" | "none", note}: how Python started (the load details).
  // With snapshots on, a start from this build's kept snapshot, else the long way with one made
  // and kept for the next visit (web/start-snapshot.mjs; kept after this start, not awaited).
  async boot(manifest, base, onStage, useSnapshots) {
    const snapshots = useSnapshots ? new StartSnapshots(manifest.build) : null;
    const kept = snapshots ? await snapshots.find() : { bytes: null, note: null };
    let start;
    try {
      ({ pyodide: this.pyodide, start } = await bootPyodide({
        indexURL: new URL(manifest.pyodide.path, base).href,
        wheelURL: new URL(manifest.wheel, base).href,
        onStage,
        snapshot: snapshots && { restore: kept.bytes },
      }));
    } catch (e) {
      if (e instanceof BootError) throw new Fatal(e.code, `The speech engine could not start: ${e.message}`);
      // Pyodide reports a missing stdlib as "exit(1)": the host's answer for each file says more
      const missing = await missingRuntimeFile(manifest, base);
      throw new Fatal("boot", `The speech engine could not start: ${missing || lastLine(e)}`);
    }
    this.module = this.pyodide.pyimport("engine.worker");
    this.app = this.module.WebWorker();
    if (start.snapshot === "made") {                 // kept while the model loads: not awaited
      snapshots.keep(start.bytes).then((why) => { if (why) console.warn(`phonon-web: ${why}`); });
    }
    return { snapshot: start.snapshot, note: [kept.note, start.note].filter(Boolean).join("; ") || null };
  }

  get started() { return this.pyodide !== null; }

  // A Python bytearray of n bytes (the engine reads its tensors from it in place).
  buffer(n) { return this.module.new_buffer(n); }

  // `data` copied into a new Python bytearray.
  bytes(data) {
    const buffer = this.buffer(data.length);
    const view = buffer.getBuffer("u8");
    view.data.set(data);
    view.release();
    return buffer;
  }

  // The sha256 of `data` (hex). No SubtleCrypto outside a secure context: hashlib then, on
  // `pyBuffer` in place when the bytes are already in the Python heap.
  async sha256(data, pyBuffer = null) {
    if (self.crypto && crypto.subtle) return sha256Hex(data);
    const hashlib = this.pyodide.pyimport("hashlib");
    return hashlib.sha256(pyBuffer || this.pyodide.toPy(data)).hexdigest();
  }

  heapBytes() {
    try { return this.pyodide._module.HEAPU8.length; } catch { return null; }
  }
}

// ------------------------------------------------------------------------------------------
