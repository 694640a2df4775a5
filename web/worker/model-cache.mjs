// The engine worker's ModelCache (web/worker.mjs): the model, downloaded once and kept.
import { TO_PAGE } from "../messages.mjs";
import { Fatal, post } from "./common.mjs";

const MODEL_CACHE = "phonon-web-model";

// ModelCache: the site's model from Cache Storage, else downloaded once (XMLHttpRequest with a
// Blob response: byte progress, and the bytes stay in the browser's blob store, which pages
// large blobs to disk, instead of a second full copy in this worker's heap), checked against
// the manifest's size and sha256 in the Pyodide heap, and only then cached for the next visit.
// Into the heap it goes in 8 MiB slices, into a bytearray allocated once at the manifest's
// size: the one full copy the engine reads its tensors from. Files the user opened are kept too
// (one at a time).
//
// (A streamed fetch() body would do the same, but Chromium then intermittently reports the
// finished request as cancelled, net::ERR_ABORTED, in about 1 load of 7 here.)
//
// Cache Storage keys name the digest, not the URL: the same model from any address is found
// again, and another digest never reuses an entry. The site's model and files the user opened
// live under two prefixes, so replacing one never drops the other.

export class ModelCache {
  static SLICE = 8 << 20;
  static SITE = "phonon-model/site/";
  static LOCAL = "phonon-model/local/";

  constructor(runtime) { this.runtime = runtime; }

  static key(prefix, sha256) { return new URL(`${prefix}${sha256}`, self.location.href).href; }

  // The manifest's model in a Python buffer: {buffer, source: "cache" | "network", cacheNote}.
  async site(entry, base) {
    const url = entry.url || new URL(entry.path, base).href;
    const key = ModelCache.key(ModelCache.SITE, entry.sha256);
    let cache = null;
    try {
      cache = await caches.open(MODEL_CACHE);
    } catch { /* no Cache Storage (insecure context, some private modes): download every time */ }
    const cached = cache ? await cache.match(key) : undefined;
    const source = cached ? "cache" : "network";
    const progress = (loaded) => post({ kind: TO_PAGE.PROGRESS, loaded, total: entry.size, source });
    const blob = cached ? await cached.blob() : await download(url, entry, progress);
    if (blob.size !== entry.size) {
      if (cached) await cache.delete(key);
      throw integrity(`it has ${blob.size.toLocaleString("en")} bytes, the manifest lists ${entry.size.toLocaleString("en")}`);
    }
    const buffer = this.runtime.buffer(entry.size);
    try {
      await this.fill(buffer, blob, cached ? progress : null);
      const view = buffer.getBuffer("u8");
      let digest;
      try {
        digest = await this.runtime.sha256(view.data, buffer);
      } finally {
        view.release();
      }
      if (digest !== entry.sha256) throw integrity(`its sha256 is ${digest}, the manifest lists ${entry.sha256}`);
    } catch (e) {
      buffer.destroy();
      if (cached) await cache.delete(key);
      throw e;
    }
    const cacheNote = cache && !cached ? await this.keepSite(cache, key, blob) : null;
    return { buffer, source, cacheNote };
  }

  // The blob into the buffer, a slice at a time (the heap may grow between slices).
  async fill(buffer, blob, progress) {
    let view = buffer.getBuffer("u8");
    try {
      for (let at = 0; at < blob.size; at += ModelCache.SLICE) {
        const part = new Uint8Array(await blob.slice(at, at + ModelCache.SLICE).arrayBuffer());
        if (view.data.byteLength === 0) { view.release(); view = buffer.getBuffer("u8"); }   // heap grew
        view.data.set(part, at);
        if (progress) progress(at + part.length);
      }
    } finally {
      view.release();
    }
  }

  // The checked site model kept for the next visit; older site models (other digests) dropped.
  // null, or why it could not be kept.
  async keepSite(cache, key, blob) {
    try {
      await cache.put(key, new Response(blob, { headers: { "content-type": "application/octet-stream" } }));
      for (const request of await cache.keys()) {
        if (request.url !== key && !request.url.startsWith(ModelCache.key(ModelCache.LOCAL, ""))) await cache.delete(request);
      }
      return null;
    } catch (e) {
      return `the model could not be saved for the next visit (${e.name}: ${e.message})`;
    }
  }

  // A file the user opened (and the engine loaded) kept for the next visit, replacing the one
  // kept before. null, or why it could not be kept.
  async keepLocal(name, data, sha256) {
    try {
      const cache = await caches.open(MODEL_CACHE);
      for (const request of await cache.keys()) {
        if (request.url.startsWith(ModelCache.key(ModelCache.LOCAL, ""))) await cache.delete(request);
      }
      await cache.put(ModelCache.key(ModelCache.LOCAL, sha256), new Response(data, { headers: {
        "content-type": "application/octet-stream", "x-model-name": encodeURIComponent(name) } }));
      return null;
    } catch (e) {
      return `it could not be saved for the next visit (${e.name}: ${e.message})`;
    }
  }

  // The file opened before, as kept: {data}, or {note} saying why it is not there any more.
  async local({ sha256, name }) {
    const cache = await caches.open(MODEL_CACHE);
    const cached = await cache.match(ModelCache.key(ModelCache.LOCAL, sha256));
    if (!cached) return { note: `the model file ${name} you opened before is no longer stored on this device` };
    const data = new Uint8Array(await cached.arrayBuffer());
    if (await this.runtime.sha256(data) !== sha256) {
      await cache.delete(ModelCache.key(ModelCache.LOCAL, sha256));
      return { note: `the stored copy of ${name} was damaged and has been removed` };
    }
    return { data };
  }
}

function download(url, entry, progress) {
  return new Promise((resolve, reject) => {
    const crossOrigin = new URL(url).origin !== self.location.origin;
    const failed = (why) => reject(new Fatal("model-fetch",
      `The model could not be downloaded (${entry.path || url}: ${why}). ` + (crossOrigin
        ? "It is on another site: check the connection, and that its host allows cross-origin downloads " +
          "(it must send Access-Control-Allow-Origin)."
        : "Check the connection and reload.")));
    // the server answered, and not with the file: the address is wrong, not the connection
    const refused = (status) => reject(new Fatal("model-fetch",
      `The model could not be downloaded (${entry.path || url}: HTTP ${status}): the server has no such file ` +
      "or refuses it. Check the model's address."));
    const xhr = new XMLHttpRequest();
    xhr.open("GET", url);
    xhr.responseType = "blob";
    let last = 0;
    xhr.onprogress = (e) => {
      const now = performance.now();
      if (now - last > 50) { last = now; progress(e.loaded); }
    };
    xhr.onload = () => {
      if (xhr.status >= 400 && xhr.status < 500) return refused(xhr.status);
      if (xhr.status !== 200) return failed(`HTTP ${xhr.status}`);
      progress(xhr.response.size);
      resolve(xhr.response);
    };
    xhr.onerror = () => failed("network error");
    xhr.onabort = () => failed("aborted");
    progress(0);
    xhr.send();
  });
}

function integrity(detail) {
  return new Fatal("model-digest", `The model file failed its integrity check (sha256): ${detail}. It was not used. Reload to download it again; if this persists, the site's files are damaged or were changed.`);
}

// ------------------------------------------------------------------------------------------
