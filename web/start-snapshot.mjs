// The engine worker's start-up snapshot, kept in Cache Storage between visits.
//
// Starting CPython inside Pyodide and importing the engine takes most of a returning visit's
// load() (1.8-2.4 s of 2.7-3.6 s, measured before bytecode and snapshots). Pyodide can write its
// whole wasm memory after the start (loadPyodide({_makeSnapshot}), makeMemorySnapshot()) and
// start from such a copy instead (loadPyodide({_loadSnapshot})): the interpreter, the stdlib
// and the engine's modules come back already initialised. pyodide-boot.mjs takes the copy on a
// start without one; this file keeps it and finds it again.
//
// One snapshot per site build: the key names manifest.build, a digest over every file of the
// site or package (Pyodide's runtime, its stdlib, the engine wheel among them), because a
// snapshot is only valid for the exact runtime and engine that made it. Storing a new one drops
// the others. The bytes' sha256 is kept beside them and checked before use: a damaged entry is
// dropped and the start goes the long way, never fails for it.

const SNAPSHOT_CACHE = "phonon-web-start-snapshot";
const DIGEST_HEADER = "x-phonon-sha256";

// The sha256 of `data` as hex (SubtleCrypto: secure contexts only).
export async function sha256Hex(data) {
  const digest = await crypto.subtle.digest("SHA-256", data);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

export class StartSnapshots {
  constructor(build) {
    this.build = build;
    this.url = new URL(`phonon-start-snapshot/${build}`, self.location.href).href;
  }

  // Cache Storage exists only in secure contexts (https, localhost) and may be refused
  // (private windows, storage disabled): then there is simply no snapshot.
  static available() { return typeof caches !== "undefined" && !!(self.crypto && crypto.subtle); }

  // -> {bytes: Uint8Array} when a sound snapshot of this build is kept, {bytes: null, note}
  // otherwise (note null when there was simply none).
  async find() {
    if (!StartSnapshots.available()) return { bytes: null, note: "no Cache Storage here" };
    let response;
    try {
      response = await (await caches.open(SNAPSHOT_CACHE)).match(this.url);
    } catch (e) {
      return { bytes: null, note: `the snapshot cache could not be read (${e.message})` };
    }
    if (!response) return { bytes: null, note: null };
    const bytes = new Uint8Array(await response.arrayBuffer());
    const digest = await sha256Hex(bytes);
    if (digest !== response.headers.get(DIGEST_HEADER)) {
      await this.drop();
      return { bytes: null, note: `the kept start-up snapshot was damaged (sha256 ${digest.slice(0, 12)}..., ` +
                                  `${bytes.length.toLocaleString("en")} bytes) and was dropped` };
    }
    return { bytes, note: null };
  }

  // Keep `bytes` for the next visit (old builds' snapshots dropped). Never throws: a start
  // without a kept snapshot only takes longer. -> null or why it was not kept.
  async keep(bytes) {
    if (!StartSnapshots.available()) return "no Cache Storage here";
    try {
      const digest = await sha256Hex(bytes);
      const cache = await caches.open(SNAPSHOT_CACHE);
      for (const request of await cache.keys()) {
        if (request.url !== this.url) await cache.delete(request);
      }
      await cache.put(this.url, new Response(bytes, { headers: {
        "content-type": "application/octet-stream", [DIGEST_HEADER]: digest } }));
      return null;
    } catch (e) {
      return `the start-up snapshot was not kept (${e.message})`;
    }
  }

  async drop() {
    try { await (await caches.open(SNAPSHOT_CACHE)).delete(this.url); } catch { /* nothing kept */ }
  }
}
