// The live session's committed words, kept on this device (IndexedDB) as they commit, so that a
// reload, a crashed tab or a closed laptop lid loses nothing: the next visit offers them back.
//
//   const store = await SessionStore.open();          // null where the browser has no IndexedDB
//   const id = await store.begin({model, tier, sampleRate, threads});   // replaces the kept session
//   store.append(id, words, added, audioSeconds);      // each commit: only the new words are written
//   store.finish(id, audioSeconds);
//   const kept = await store.latest();                 // {session, text, words} or null
//   await store.clear();                               // nothing kept
//
// One session is kept: the newest. A commit writes its own words (one record per word, keyed
// [session, index]) and the session's counters in one transaction, so the work per commit does
// not grow with the session, and what is on disk is always a whole prefix of the committed words
// (transactions on the same stores complete in the order they were made).

const DB_NAME = "phonon-web-sessions";
const DB_VERSION = 1;
const SESSIONS = "sessions";      // {id, started, updated, model: {name, sha256}, tier, sampleRate,
                                  //  threads, words: count, audio_seconds, finished}
const WORDS = "words";            // {session, i, word, start, end, piece?}: the first word of a
                                  // commit carries the text that commit added (its spacing and
                                  // punctuation are the engine's), so the text is the pieces joined

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = tx.onabort = () => reject(tx.error || new Error("the transaction was aborted"));
  });
}

export class SessionStore {
  #db;
  #writes = Promise.resolve();     // the last write (never rejects: a failure goes to onError)
  #count = 0;                      // words of the kept session written or queued (one session is kept)
  #held = false;                   // debug: nothing more is written, as if the tab had crashed
  onError = null;                  // (error) => void: a write failed (quota, a blocked database)

  constructor(db) { this.#db = db; }

  /** The store, or null if this browser keeps no IndexedDB here (some private modes). */
  static async open() {
    if (typeof indexedDB === "undefined") return null;
    try {
      const req = indexedDB.open(DB_NAME, DB_VERSION);
      req.onupgradeneeded = () => {
        const db = req.result;
        db.createObjectStore(SESSIONS, { keyPath: "id" });
        db.createObjectStore(WORDS, { keyPath: ["session", "i"] });
      };
      return new SessionStore(await request(req));
    } catch {
      return null;
    }
  }

  /** A new session (the one kept before is deleted): its id. */
  async begin({ model, tier, sampleRate, threads }) {
    await this.clear();
    const now = new Date().toISOString();
    const session = { started: now, updated: now, model, tier, sampleRate, threads, words: 0, audio_seconds: 0, finished: false };
    const tx = this.#db.transaction(SESSIONS, "readwrite");
    const id = await request(tx.objectStore(SESSIONS).add({ id: now + "-" + Math.random().toString(36).slice(2, 8), ...session }));
    await done(tx);
    this.#count = 0;
    return id;
  }

  /** The words that just committed ({word, start, end}, in order), the text they added to the
   *  committed text, and the audio heard so far. */
  append(id, words, added, audioSeconds) {
    if (!words.length) return this.#writes;
    const first = this.#count;
    this.#count += words.length;
    if (this.#held) return this.#writes;       // debug: as if the tab had crashed before this
    return this.#write(id, (tx) => {
      const store = tx.objectStore(WORDS);
      words.forEach(({ word, start, end }, k) => {
        store.put({ session: id, i: first + k, word, start, end, ...(k ? {} : { piece: added }) });
      });
      return { words: first + words.length, audio_seconds: audioSeconds };
    });
  }

  /** The session ended normally (it is still kept until cleared or replaced). */
  finish(id, audioSeconds) {
    return this.#write(id, () => ({ finished: true, audio_seconds: audioSeconds }));
  }

  /** The kept session, its text and words, or null. */
  async latest() {
    await this.#writes;
    const tx = this.#db.transaction([SESSIONS, WORDS], "readonly");
    const sessions = await request(tx.objectStore(SESSIONS).getAll());
    if (!sessions.length) return null;
    const session = sessions.sort((a, b) => (a.started < b.started ? 1 : -1))[0];
    const range = IDBKeyRange.bound([session.id, 0], [session.id, Infinity]);
    const records = await request(tx.objectStore(WORDS).getAll(range));
    const text = records.map((r) => r.piece || "").join("");
    const words = records.map(({ word, start, end }) => ({ word, start, end }));
    return { session: { ...session, words: words.length }, text, words };
  }

  /** Delete everything kept. */
  async clear() {
    await this.#writes;
    const tx = this.#db.transaction([SESSIONS, WORDS], "readwrite");
    tx.objectStore(SESSIONS).clear();
    tx.objectStore(WORDS).clear();
    await done(tx);
    this.#count = 0;
  }

  /** Debug: write no more words - what is on disk stays as a crash at this instant leaves it. */
  hold() { this.#held = true; }

  /** Resolves once every write made so far is on disk. */
  settled() { return this.#writes; }

  // One readwrite transaction: fill(tx) writes its records and returns the session's changes.
  #write(id, fill) {
    const tx = this.#db.transaction([SESSIONS, WORDS], "readwrite");
    const sessions = tx.objectStore(SESSIONS);
    const changes = fill(tx);
    const read = sessions.get(id);
    let gone = false;
    read.onsuccess = () => {
      if (read.result) return sessions.put({ ...read.result, ...changes, updated: new Date().toISOString() });
      gone = true;                         // cleared or replaced meanwhile: write nothing
      tx.abort();
    };
    const wrote = done(tx);
    this.#writes = this.#writes.then(() => wrote).catch((e) => {
      if (!gone && this.onError) this.onError(e);
    });
    return this.#writes;
  }
}
