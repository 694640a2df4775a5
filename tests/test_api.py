"""The JavaScript API (web/phonon.mjs) through the API alone, in Chromium, Firefox ESR and
WebKitGTK as shipped (harness/engines.py): the runtime package (dist/phonon-web, `build.py
package`) served as a developer would host it, a blank page that imports phonon.mjs. Batch and
stream results are the native engine's; cancel, close and every misuse give a PhononError with a
code and the recogniser goes on; the 30-line example page works (Chromium)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import build_artifact
from harness.runtimes import POLL_MS

ROOT = Path(__file__).resolve().parent.parent
WAV = ROOT / "samples" / "two-commands.wav"
MODEL = ROOT / "models" / "phonon-small.gguf"
WAV_SECONDS = 6.5                     # samples/two-commands.wav

pytestmark = pytest.mark.browser

# the engines each page test runs in, and the tier Recognizer.load picks there ("auto": the best
# the engine validates; WebKitGTK refuses the relaxed-SIMD dot products)
ENGINES = {"chromium": "wasm_relaxed_simd", "firefox": "wasm_relaxed_simd", "webkit": "wasm_simd128"}


def with_code_of(function: str) -> str:
    """A page function's source with codeOf(f) in scope: the code of the PhononError that
    calling f gives ("no error" if none)."""
    return """(arg) => {
        const codeOf = async (f) => { try { await f(); return "no error"; }
                                      catch (e) { return e.name === "PhononError" ? e.code : `not a PhononError: ${e}`; } };
        return (""" + function + ")(arg); }"


@pytest.fixture(scope="module")
def native():
    from engine.audio import load_audio
    from engine.stream.session import stream_samples
    from engine.transcribe import Engine
    engine = Engine.open(MODEL, "scalar", 1)
    samples = load_audio(engine.k, WAV.read_bytes())
    batch = json.loads(json.dumps(engine.transcribe(samples)))
    stream = json.loads(json.dumps(stream_samples(engine.stream(16000), samples, 320)))
    return {"samples": list(samples), "batch": batch, "stream": stream["final"], "events": stream["events"]}


@pytest.fixture(scope="module")
def server():
    from harness.server import StaticServer
    package = build_artifact("PHONON_PACKAGE")
    with StaticServer({"/": package, "/test/": ROOT / "tests" / "data" / "api-page",
                       "/spa/": ROOT / "tests" / "data" / "spa-fallback"}) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    """Chromium whose fake microphone plays the WAV once per capture (one Playwright per
    process: a second sync_playwright beside it refuses to start)."""
    from harness.site_check import SiteBrowser
    with SiteBrowser(fake_mic=WAV) as b:
        yield b


@pytest.fixture(scope="module", params=list(ENGINES))
def page(request, server):
    """A page with window.api (the module) and window.r (a loaded Recognizer), in each engine;
    page.engine names it."""
    from contextlib import ExitStack
    with ExitStack() as stack:
        if request.param == "chromium":
            page = request.getfixturevalue("browser").browser.new_context().new_page()
            stack.callback(page.context.close)
            page.set_default_timeout(180_000)
            page.problems = []
            page.on("pageerror", lambda e: page.problems.append(str(e)))
            page.goto(server.url + "/test/index.html")
        else:
            from harness.engines import launch
            page = stack.enter_context(launch(request.param)).open(server.url + "/test/index.html")
            stack.callback(page.close)
        page.engine = request.param
        page.evaluate("""async () => {
            window.api = await import("/phonon.mjs");
            window.progress = [];
            window.r = await window.api.Recognizer.load({ onProgress: (p) => window.progress.push(p) });
        }""")
        yield page


def test_load_outside_a_browser_says_so():
    """Recognizer.load() under Node (a server-side render, a test runner): code "boot", naming
    Node and what to do, before anything is fetched; importing the module there is fine."""
    code = """import("./web/phonon.mjs").then((m) => m.Recognizer.load())
        .then(() => console.log("{}"), (e) => console.log(JSON.stringify({ code: e.code, message: e.message })));"""
    got = json.loads(subprocess.run(["node", "--input-type=module", "-e", code], cwd=ROOT, capture_output=True,
                                    text=True, check=True, timeout=60).stdout)
    assert got["code"] == "boot", got
    assert got["message"].startswith("Recognizer.load() runs in a web browser, and Node ") and "onMount" in got["message"], got


def test_load_reports_progress_and_what_runs(page):
    info = page.evaluate("({ tier: r.tier, backend: r.backend, threads: r.threads, model: r.model, "
                         "stages: [...new Set(progress.map((p) => p.stage))], note: r.threadsNote, "
                         "model_bytes: progress.filter((p) => p.stage === 'model' && p.loaded !== undefined), "
                         "cores: navigator.hardwareConcurrency })")
    assert info["tier"] == ENGINES[page.engine] and info["threads"] == 1
    assert info["backend"] == info["model"]["backend"] == "one-thread", info
    assert info["model"]["name"] and info["stages"] == ["runtime", "engine", "model", "compile"]
    # the model's bytes: from 0, never back, and the last report is the whole file
    loaded = [p["loaded"] for p in info["model_bytes"]]
    assert loaded and loaded[0] == 0 and loaded == sorted(loaded), loaded
    assert loaded[-1] == info["model_bytes"][-1]["total"] > 0, info["model_bytes"]
    # the page is not cross-origin isolated either, but the small model is the reason it runs one worker
    if info["cores"] > 1:
        assert info["note"] and "small enough" in info["note"], info["note"]


def test_transcribe_samples_a_wav_and_a_blob_give_the_native_transcript(page, native):
    got = page.evaluate("""async ({ samples, wav }) => {
        const bytes = Uint8Array.from(atob(wav), (c) => c.charCodeAt(0));
        return [await r.transcribe(Float32Array.from(samples), 16000),
                await r.transcribe(bytes.buffer.slice(0)),
                await r.transcribe(new Blob([bytes], { type: "audio/wav" }))];
    }""", {"samples": native["samples"], "wav": base64.b64encode(WAV.read_bytes()).decode()})
    want = native["batch"]
    assert want["text"] and want["tokens"]
    for result in got:
        assert (result["text"], result["tokens"], result["words"]) == (want["text"], want["tokens"], want["words"])


@pytest.mark.parametrize("page", ["chromium"], indirect=True)      # the page's and the worker's code: one engine
def test_a_long_file_s_progress_advances_to_its_end(page, native):
    """onProgress over 70 s of audio (the recording eleven times): it starts at 0, only advances,
    and its last report, before the result, is the whole length."""
    got = page.evaluate("""async ({ samples }) => {
        const x = Float32Array.from(samples), long = new Float32Array(x.length * 11);
        for (let i = 0; i < 11; i++) long.set(x, i * x.length);
        const reports = [];
        const result = await r.transcribe(long, 16000, { onProgress: (p) => reports.push([p.done, p.total]) });
        return { reports, seconds: long.length / 16000, audio: result.audio_seconds };
    }""", {"samples": native["samples"]})
    reports, total = got["reports"], got["seconds"]
    assert total > 70 and reports[0][0] == 0 and len(reports) > 3, got
    assert all(t == pytest.approx(total, abs=0.01) for _, t in reports), reports
    assert all(a < b for (a, _), (b, _) in zip(reports, reports[1:])), reports      # advances only
    assert reports[-1][0] == reports[-1][1], reports


def test_a_stream_gives_the_native_final_with_partial_and_commit_events(page, native):
    got = page.evaluate("""async ({ samples }) => {
        const x = Float32Array.from(samples);
        const s = r.stream({ sampleRate: 16000 });
        const partials = [], commits = [];
        const soFar = [];                           // stream.transcript() beside the commits at each partial
        s.addEventListener("partial", (e) => {
            partials.push([e.detail.committed, e.detail.tentative]);
            const t = s.transcript();
            soFar.push(t.text === e.detail.committed && t.words.length === commits.length
                       && t.words.length === e.detail.committedWords);
        });
        s.addEventListener("commit", (e) => commits.push(...e.detail.words));
        let finalEvent = null;
        s.addEventListener("final", (e) => { finalEvent = e.detail; });
        for (let i = 0; i < x.length; i += 320) {
            s.feed(x.subarray(i, i + 320));
            if (i % 16000 === 0) await new Promise((done) => setTimeout(done, 200));   // let partials run
        }
        const final = await s.finish();
        return { final, partials, commits, soFar, after: s.transcript(), sameEvent: finalEvent === final, state: s.state };
    }""", {"samples": native["samples"]})
    from harness.site_check import assert_views_follow
    want = native["stream"]
    final = got["final"]
    assert (final["text"], final["words"], final["tokens"]) == (want["text"], want["words"], want["tokens"])
    assert_views_follow([tuple(view) for view in got["partials"]], native["events"])
    assert got["sameEvent"] and got["state"] == "finished"
    assert got["commits"] == final["words"]          # every word committed once, in order
    assert got["soFar"] and all(got["soFar"]) and got["after"] == {"text": final["text"], "words": final["words"]}
    assert final["metrics"]["decodes"] > 0


def test_cancel_a_stream_and_a_transcription_then_go_on(page, native):
    got = page.evaluate(with_code_of("""async ({ samples }) => {
        const x = Float32Array.from(samples);
        const s = r.stream({ sampleRate: 16000 });
        s.feed(x.subarray(0, 32000));
        await new Promise((done) => setTimeout(done, 300));
        s.cancel();
        const afterCancel = await codeOf(() => s.finish());
        const feedAfterCancel = await codeOf(() => s.feed(x.subarray(0, 10)));
        const controller = new AbortController();
        const long = new Float32Array(16000 * 300);                    // 5 minutes: many steps
        for (let i = 0; i < long.length; i++) long[i] = 0.1 * Math.sin(i * 0.05) * Math.sin(i * 0.0007);
        const steps = [];
        const cancelled = await codeOf(() => r.transcribe(long, 16000, { signal: controller.signal,
            onProgress: (p) => { steps.push(p.done); controller.abort(); } }));
        const again = await r.transcribe(x, 16000);
        const s2 = r.stream({ sampleRate: 16000 });
        s2.feed(x);
        const final = await s2.finish();
        return { afterCancel, feedAfterCancel, cancelled, steps, again: again.text, final: final.text };
    }"""), {"samples": native["samples"]})
    assert got["afterCancel"] == "cancelled" and got["feedAfterCancel"] == "state"
    # cancelled at its first report; the steps already under way may report before the cancel
    # lands (how many depends on the machine's load), but the 5 minutes are never finished
    assert got["cancelled"] == "cancelled" and got["steps"] and max(got["steps"]) < 300
    assert got["again"] == native["batch"]["text"] and got["final"] == native["stream"]["text"]


def test_misuse_gives_clear_errors_and_loses_nothing(page, native):
    got = page.evaluate(with_code_of("""async ({ samples }) => {
        const x = Float32Array.from(samples);
        const out = {};
        out.fractional_rate = await codeOf(() => r.transcribe(new Float32Array(10), 44100.5));
        out.low_rate = await codeOf(() => r.stream({ sampleRate: 1000 }));
        out.no_rate = await codeOf(() => r.stream({}));
        try { r.stream({ sampleRate: "48000" }); } catch (e) { out.string_rate = [e.code, e.message.includes("pass the number (48000)")]; }
        try { new api.Recognizer(); } catch (e) { out.constructor = [e.code, e.message.includes("Recognizer.load(")]; }
        out.not_audio = await codeOf(() => r.transcribe([0.1, 0.2], 16000));
        out.nan_transcribe = await codeOf(() => r.transcribe(Float32Array.of(0, NaN, 0), 16000));
        const s = r.stream({ sampleRate: 16000 });
        out.second_stream = await codeOf(() => r.stream({ sampleRate: 16000 }));
        out.nan_feed = await codeOf(() => s.feed(Float32Array.of(0.1, Infinity)));
        out.array_feed = await codeOf(() => s.feed([0.1, 0.2]));
        s.feed(x);
        out.text = (await s.finish()).text;
        out.feed_after_finish = await codeOf(() => s.feed(x));
        out.garbage_file = await codeOf(() => r.transcribe(new Uint8Array(4000).fill(7).buffer));
        const wav = new Uint8Array(44);
        wav.set([82, 73, 70, 70], 0); wav.set([87, 65, 86, 69], 8);            // "RIFF" ... "WAVE", nothing else
        out.broken_wav = await codeOf(() => r.transcribe(wav.buffer));
        out.empty = (await r.transcribe(new Float32Array(0), 16000)).text;
        out.still_works = (await r.transcribe(x, 16000)).text;
        // an async method's mistakes reject its promise (a .catch() sees them), never throw
        const rejects = (f) => { try { const p = f(); p.catch(() => {}); return p instanceof Promise; } catch { return "threw"; } };
        out.rejected = [rejects(() => r.transcribe(x, 0)), rejects(() => r.transcribe(null)),
                        rejects(() => r.transcribe([1], 16000)), rejects(() => r.switchModel("x"))];
        return out;
    }"""), {"samples": native["samples"]})
    assert got == {"fractional_rate": "sample-rate", "low_rate": "sample-rate", "no_rate": "sample-rate",
                   "string_rate": ["sample-rate", True], "constructor": ["state", True],
                   "not_audio": "audio", "nan_transcribe": "samples", "second_stream": "busy",
                   "nan_feed": "samples", "array_feed": "samples", "text": native["stream"]["text"],
                   "feed_after_finish": "state", "garbage_file": "audio", "broken_wav": "audio", "empty": "",
                   "still_works": native["batch"]["text"], "rejected": [True, True, True, True]}
    assert not page.problems, page.problems


@pytest.mark.parametrize("page", ["chromium", "firefox"], indirect=True)     # WebKit: 23 s of loads
def test_loading_options_and_close(page, server):
    manifest = json.loads((build_artifact("PHONON_PACKAGE") / "manifest.json").read_text())
    model = manifest["model"]
    got = page.evaluate(with_code_of("""async ({ model, tinyUrl }) => {
        const { Recognizer } = window.api;
        const out = {};
        out.unknown_tier = await codeOf(() => Recognizer.load({ tier: "avx9000" }));
        out.unknown_backend = await codeOf(() => Recognizer.load({ backend: "webnn" }));
        out.one_thread_of_two = await codeOf(() => Recognizer.load({ backend: "one-thread", threads: 2 }));
        out.tier_webgpu_contradicted = await codeOf(() => Recognizer.load({ tier: "webgpu", backend: "one-thread" }));
        try {           // the backend's need named: this page shares no memory
            await Recognizer.load({ backend: "kernel-workers" });
        } catch (e) { out.kernel_workers_unisolated = [e.code, e.message.includes("not cross-origin isolated")]; }
        out.bad_threads = await codeOf(() => Recognizer.load({ threads: 0 }));
        out.bad_model = await codeOf(() => Recognizer.load({ model: 42 }));
        out.not_a_model = await codeOf(() => Recognizer.load({ model: new Uint8Array(1000).fill(1) }));
        out.wrong_digest = await codeOf(() => Recognizer.load({ model: { url: "/" + model.path, size: model.size,
                                                                          sha256: "0".repeat(64) } }));
        out.missing_url = await codeOf(() => Recognizer.load({ model: "/models/no-such.gguf" }));
        for (const [name, base] of [["no_runtime", "/test/"], ["html_fallback", "/spa/"]]) {   // a bundler moved phonon.mjs
            try { await Recognizer.load({ base }); } catch (e) {
                out[name] = [e.code, /HTTP 404|an HTML page/.test(e.message), e.message.includes("base")];
            }
        }
        try {           // a pinned model that is not there: said from the server's answer, not "check the connection"
            await Recognizer.load({ model: { url: "/models/no-such.gguf", size: 10, sha256: "1".repeat(64) } });
        } catch (e) { out.missing_pinned = [e.code, e.message.includes("HTTP 404"), e.message.includes("address")]; }
        const pinned = await Recognizer.load({ model: { url: "/" + model.path, size: model.size, sha256: model.sha256 } });
        out.pinned = pinned.model.name;
        const bytes = await (await fetch("/" + model.path)).arrayBuffer();
        const fromBytes = await Recognizer.load({ model: bytes, tier: "scalar", threads: 2 });
        out.from_bytes = [fromBytes.model.name, fromBytes.tier, fromBytes.backend];
        // two workers asked for: the small model does not stop them, this page's isolation does
        out.forced_threads = [fromBytes.threads, /not cross-origin isolated/.test(fromBytes.threadsNote)];
        const running = fromBytes.transcribe(new Float32Array(16000 * 20), 16000);
        fromBytes.close();
        out.pending_on_close = await codeOf(() => running);
        out.after_close = await codeOf(() => fromBytes.transcribe(new Float32Array(10), 16000));
        out.stream_after_close = await codeOf(() => fromBytes.stream({ sampleRate: 16000 }));
        out.closed = fromBytes.closed;
        pinned.close();
        return out;
    }"""), {"model": model, "tinyUrl": None})
    assert got == {"unknown_tier": "state", "unknown_backend": "state", "one_thread_of_two": "state",
                   "tier_webgpu_contradicted": "state", "kernel_workers_unisolated": ["state", True],
                   "bad_threads": "state", "bad_model": "state",
                   "not_a_model": "model-file", "wrong_digest": "model-digest", "missing_url": "model-fetch",
                   "missing_pinned": ["model-fetch", True, True], "no_runtime": ["boot", True, True],
                   "html_fallback": ["boot", True, True],
                   "pinned": page.evaluate("r.model.name"), "from_bytes": [page.evaluate("r.model.name"), "scalar", "one-thread"],
                   "forced_threads": [1, True],
                   "pending_on_close": "closed", "after_close": "closed", "stream_after_close": "closed",
                   "closed": True}


@pytest.mark.parametrize("page", ["chromium", "firefox"], indirect=True)
def test_a_returning_visit_starts_from_the_kept_snapshot_with_the_native_tokens(page, native, capsys):
    """The fixture's load was the page's first: Python started the long way and a memory
    snapshot was kept in Cache Storage; the next load starts from it (details.start says so) and
    transcribes exactly as native does; a damaged snapshot is dropped with a note and the load
    goes the long way; snapshot: false neither uses nor keeps one."""
    got = page.evaluate("""async ({ wav }) => {
        const { Recognizer } = window.api;
        const cache = await caches.open("phonon-web-start-snapshot");
        for (let i = 0; i < 300 && !(await cache.keys()).length; i++) await new Promise((ok) => setTimeout(ok, 100));
        const bytes = Uint8Array.from(atob(wav), (c) => c.charCodeAt(0));
        const visit = async (options) => {
            const recognizer = await Recognizer.load(options);
            const out = { start: recognizer.details.start, timings: recognizer.timings,
                          result: await recognizer.transcribe(bytes.buffer.slice(0)) };
            recognizer.close();
            return out;
        };
        const out = { first: { start: r.details.start, timings: r.timings }, kept: (await cache.keys()).length };
        out.returning = await visit();
        const [request] = await cache.keys();          // damage the kept bytes, keep their recorded digest
        const response = await cache.match(request);
        const data = new Uint8Array(await response.arrayBuffer());
        data[data.length >> 1] ^= 0xff;
        await cache.put(request, new Response(data, { headers: response.headers }));
        out.damaged = await visit();
        out.off = await visit({ snapshot: false });
        return out;
    }""", {"wav": base64.b64encode(WAV.read_bytes()).decode()})
    with capsys.disabled():
        for name in ("first", "returning", "damaged", "off"):
            t = got[name]["timings"]
            print(f"\n{page.engine} {name}: start {got[name]['start']['snapshot']}, runtime {t['runtime']:.0f} ms, "
                  f"engine {t['engine']:.0f} ms, ready after {t['total']:.0f} ms")
    assert got["first"]["start"] == {"snapshot": "made", "note": None} and got["kept"] == 1
    assert got["returning"]["start"] == {"snapshot": "restored", "note": None}
    assert got["damaged"]["start"]["snapshot"] == "made" and "damaged" in got["damaged"]["start"]["note"]
    assert got["off"]["start"] == {"snapshot": "none", "note": None}
    want = native["batch"]
    for name in ("returning", "damaged", "off"):
        result = got[name]["result"]
        assert (result["text"], result["tokens"], result["words"]) == (want["text"], want["tokens"], want["words"]), name


def test_a_worker_that_dies_mid_stream_is_restarted_and_the_stream_loses_nothing(page, native):
    """The heartbeat notices a dead worker during a stream; a new worker loads the
    model and resumes the stream from its newest checkpoint, the Stream feeds it its input from
    there (the audio fed during the restart included), and the final transcript, tokens and
    word times are the native stream's over the same samples; the committed words arrived once
    each, in order. A second death while the stream runs restarts it again."""
    got = page.evaluate("""async ({ samples }) => {
        const x = Float32Array.from(samples);
        const r2 = await window.api.Recognizer.load({ silenceMs: 3000, debug: true });
        const s = r2.stream({ sampleRate: 16000 });
        const events = [], committed = [];
        for (const name of ["restart", "restarted", "error"]) {
            r2.addEventListener(name, (e) => events.push([name, e.detail.message, e.detail.attempt]));
        }
        s.addEventListener("commit", (e) => committed.push(...e.detail.words));
        const partialAfter = (seconds) => Promise.race([
            new Promise((done) => {
                const on = (e) => { if (e.detail.audio_seconds >= seconds) { s.removeEventListener("partial", on); done("partial"); } };
                s.addEventListener("partial", on);
            }),
            new Promise((done) => setTimeout(() => done(`no partial past ${seconds} s in 120 s`), 120000)),
        ]);
        const feed = async (from, to) => {
            for (let i = from; i < to; i += 1600) {
                try { s.feed(x.subarray(i, Math.min(i + 1600, to))); } catch (e) { events.push(["feed", e.message, s.state]); throw new Error(JSON.stringify(events)); }
                await new Promise((done) => setTimeout(done, 20));
            }
        };
        const third = Math.floor(x.length / 3);
        await feed(0, third);
        let waited = await partialAfter(third / 16000 - 0.2);
        if (waited !== "partial") return { waited, events };
        r2.debug.terminateWorker();
        await feed(third, 2 * third);                   // while the heartbeat waits and the new worker loads
        waited = await partialAfter(2 * third / 16000 - 0.2);
        if (waited !== "partial") return { waited, events };
        r2.debug.terminateWorker();
        await feed(2 * third, x.length);
        const final = await s.finish();
        r2.close();
        return { final: { text: final.text, words: final.words, tokens: final.tokens }, committed,
                 restarts: s.restarts, events: events.map(([name, message, attempt]) => [name, attempt]),
                 messages: events.map(([, message]) => message) };
    }""", {"samples": native["samples"]})
    assert "final" in got, got
    want = native["stream"]
    assert got["final"] == {"text": want["text"], "words": want["words"], "tokens": want["tokens"]}
    assert got["committed"] == want["words"][:len(got["committed"])] and got["committed"], got["committed"]
    assert got["restarts"] == 2
    assert got["events"] == [["restart", 1], ["restarted", 1], ["restart", 2], ["restarted", 2]], got
    assert "it stopped responding" in got["messages"][0] and "was restarted in" in got["messages"][1]


def test_a_worker_that_dies_under_a_worklet_stream_without_reconnect_fails_it_with_the_reason(page, native):
    """A stream whose port went to a worklet that cannot feed a new worker (no
    onReconnect) cannot go on: finish() and pendingBelow() reject with why (code "worker"),
    not with "closed", and the message says why no restart was possible."""
    got = page.evaluate(with_code_of("""async ({ samples }) => {
        const r2 = await window.api.Recognizer.load({ silenceMs: 3000, debug: true });
        const s = r2.stream({ sampleRate: 16000 });
        const port = s.takePort();
        const block = Float32Array.from(samples).slice(0, 16000);
        port.postMessage({ kind: "audio", samples: block }, [block.buffer]);
        const first = await Promise.race([
            new Promise((done) => s.addEventListener("partial", () => done("partial"), { once: true })),
            new Promise((done) => r2.addEventListener("error", (e) => done(`error before any partial: ${e.detail.code}: ${e.detail.message}`), { once: true })),
            new Promise((done) => setTimeout(() => done("no partial in 120 s"), 120000)),
        ]);
        if (first !== "partial") return { first };
        let event = null;
        r2.addEventListener("error", (e) => { event = e.detail; });
        r2.debug.terminateWorker();
        const finish = s.finish();
        port.postMessage({ kind: "end" });
        const out = { finish: await codeOf(() => finish), closed: r2.closed, event: event && event.code };
        try { await finish; } catch (e) { out.message = e.message; }
        return out;
    }"""), {"samples": native["samples"]})
    assert got == {"finish": "worker", "closed": True, "event": "worker",
                   "message": "it stopped responding; the stream could not go on in a new worker: its audio comes "
                              "from a worklet given no onReconnect (stream.takePort)"}


def test_audio_a_worklet_sends_past_max_pending_is_refused_said_and_counted(page, native):
    """Audio that reaches the worker on the stream's port (as an AudioWorklet sends it,
    no feed() to check it first) past maxPending is refused there, said by an "error" event with
    code "overrun" and counted in the final metrics; the stream goes on."""
    got = page.evaluate("""async ({ samples }) => {
        const x = Float32Array.from(samples);
        const s = r.stream({ sampleRate: 16000, maxPending: 1 });
        const errors = [];
        s.addEventListener("error", (e) => errors.push([e.detail.code, e.detail.message]));
        const port = s.takePort();
        for (let i = 0; i < 12; i++) {              // 6 s at once: the worker's bound is 1 + 1 s
            const block = x.slice((i % 12) * 8000, (i % 12) * 8000 + 8000);
            port.postMessage({ kind: "audio", samples: block }, [block.buffer]);
        }
        port.postMessage({ kind: "end" });
        const final = await s.finish();
        return { errors, refused: final.metrics.refused_seconds, audio: final.audio_seconds };
    }""", {"samples": native["samples"]})
    assert got["errors"] and got["errors"][0][0] == "overrun" and "not added" in got["errors"][0][1], got
    assert got["refused"] > 0 and got["audio"] + got["refused"] == pytest.approx(6.0, abs=0.05), got


@pytest.mark.parametrize("host, code, said", [
    ({"headers": {"Content-Security-Policy": "script-src 'self'"}}, "csp", "add 'wasm-unsafe-eval' to script-src"),
    ({"types": {".wasm": "application/octet-stream"}}, "server",
     "pyodide.asm.wasm could not be compiled: "),
], ids=["csp-without-wasm", "wasm-as-octet-stream"])
def test_a_host_that_forbids_webassembly_is_named_not_waited_on(browser, host, code, said):
    """A strict Content-Security-Policy without 'wasm-unsafe-eval' on every response (the page's
    and worker.mjs's), or .wasm served as application/octet-stream: load() rejects within 10 s
    with a PhononError whose code and message name the cause and the fix (before, Pyodide's
    loader waited forever at "Loading: runtime")."""
    import time
    from harness.server import StaticServer
    with StaticServer({"/": build_artifact("PHONON_PACKAGE"), "/test/": ROOT / "tests" / "data" / "api-page"},
                      **host) as server:
        page = browser.browser.new_context().new_page()
        try:
            page.goto(server.url + "/test/index.html")
            started = time.monotonic()
            got = page.evaluate("""async () => {
                const { Recognizer } = await import("/phonon.mjs");
                const timeout = new Promise((done) => setTimeout(() => done({ hung: true }), 10000));
                const load = Recognizer.load().then(() => ({ loaded: true }),
                                                    (e) => ({ name: e.name, code: e.code, message: e.message }));
                return Promise.race([load, timeout]);
            }""")
            waited = time.monotonic() - started
        finally:
            page.context.close()
    assert got.get("name") == "PhononError" and got["code"] == code, got
    assert said in got["message"], got["message"]
    assert ("'wasm-unsafe-eval'" if code == "csp" else "as application/wasm") in got["message"], got["message"]
    print(f"{code}: rejected in {waited:.1f} s: {got['message']}")


def test_listen_streams_the_microphone_through_the_shipped_worklet_as_native(browser, server):
    """r.listen(getUserMedia's stream): the package's AudioWorklet feeds the engine worker; the
    final equals the native stream over exactly the samples the worker was fed (listen()'s
    defaults: balanced at the live pace, native replaying the page's jumps), finish() stops
    the capture, and a second listen or a non-MediaStream is refused with a code."""
    from harness.site_check import native_stream
    page = browser.browser.new_context().new_page()
    page.set_default_timeout(180_000)
    try:
        page.goto(server.url + "/test/index.html")
        got = page.evaluate(with_code_of("""async (seconds) => {
            const { Recognizer } = await import("/phonon.mjs");
            const r = await Recognizer.load({ debug: true });
            const refused = await codeOf(() => r.listen(new Float32Array(8)));
            const media = await navigator.mediaDevices.getUserMedia({ audio: true });
            const stream = await r.listen(media);
            const second = await codeOf(() => r.listen(media));
            let partials = 0, fed = 0;
            stream.addEventListener("partial", (e) => { partials += 1; fed = e.detail.metrics.fed_seconds || 0; });
            // the fake microphone says the WAV once, in real time (slower on a loaded machine)
            const until = performance.now() + 60000;
            while (fed < seconds && performance.now() < until) await new Promise((ok) => setTimeout(ok, 200));
            const final = await stream.finish();
            media.getTracks().forEach((t) => t.stop());
            const captured = await r.debug.captured();
            const bytes = new Uint8Array(captured.buffer, captured.byteOffset, captured.byteLength);
            let binary = "";
            for (let i = 0; i < bytes.length; i += 8192) binary += String.fromCharCode(...bytes.subarray(i, i + 8192));
            r.close();
            return { refused, second, final, fed, rate: stream.sampleRate, state: stream.state, partials,
                     samples: btoa(binary) };
        }"""), WAV_SECONDS + 0.5)
    finally:
        page.context.close()
    assert got["refused"] == "state" and got["second"] == "busy", got
    assert got["state"] == "finished" and got["partials"] > 0
    samples = base64.b64decode(got["samples"])
    assert len(samples) / 4 / got["rate"] >= WAV_SECONDS, got["fed"]
    final = got["final"]
    want = native_stream(MODEL, samples, got["rate"], "balanced", final["jumps"])["final"]   # listen()'s defaults
    assert (final["text"], final["words"], final["tokens"]) == (want["text"], want["words"], want["tokens"])
    assert final["text"], "the model heard nothing of the WAV"


def test_the_example_page_from_a_sub_path_transcribes_a_file_and_the_microphone(browser, native):
    """The 30-line example (a plain <script type="module"> page, no bundler) with the package
    served from a sub-path: a file gives the native text, Listen/Stop the microphone's."""
    from harness.server import StaticServer
    with StaticServer({"/apps/speech/": build_artifact("PHONON_PACKAGE")}) as host:
        page = browser.browser.new_context().new_page()
        problems = []
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("console", lambda m: m.type == "error" and problems.append(m.text))
        page.goto(host.url + "/apps/speech/example.html")
        page.wait_for_function("document.getElementById('status').textContent.startsWith('Ready')", timeout=180_000, polling=POLL_MS)
        page.set_input_files("#file", str(WAV))
        page.wait_for_function("document.getElementById('text').textContent.length > 0", timeout=180_000, polling=POLL_MS)
        assert page.text_content("#text") == native["batch"]["text"]
        page.evaluate("document.getElementById('text').textContent = ''")
        page.click("#listen")
        page.wait_for_function("document.getElementById('listen').textContent === 'Stop'", polling=POLL_MS)
        page.wait_for_timeout(int(WAV_SECONDS * 1000) + 1500)       # the fake microphone says the WAV
        page.click("#listen")
        page.wait_for_function("document.getElementById('listen').textContent === 'Listen' && "
                               "document.getElementById('text').textContent.length > 0", timeout=180_000, polling=POLL_MS)
        # the fake device starts playing at getUserMedia, the worklet a moment later (more on a
        # loaded machine): the first words may be cut, so most of the words, not the first, count
        heard, said = page.text_content("#text").split(), native["batch"]["text"].split()
        assert len(set(heard) & set(said)) >= len(said) // 2, (heard, said)
        assert not problems, problems
        page.context.close()


@pytest.mark.parametrize("config, error_lines", [("tsconfig.json", []), ("tsconfig.misuse.json", [4, 5, 6, 8, 9, 10, 11, 12])])
def test_the_typescript_declarations(config, error_lines):
    """tsc (pinned) over a typed use of the API compiles clean against web/phonon.d.ts; over
    misuse.ts it reports an error on each line that misuses the API, and nowhere else."""
    import re
    tsc = build_artifact("PHONON_TYPESCRIPT_DIR") / "bin" / "tsc"
    proc = subprocess.run(["node", str(tsc), "-p", str(ROOT / "tests" / "data" / "api-types" / config)],
                          capture_output=True, text=True, timeout=300)
    lines = sorted({int(n) for n in re.findall(r"misuse\.ts\((\d+),", proc.stdout)})
    assert lines == error_lines, proc.stdout
    assert (proc.returncode == 0) == (not error_lines), proc.stdout


# A runtime file the host does not have (a partial upload, a wrong copy) or a worker that never
# runs: load() rejects with the file named, within LOAD_FAILS_WITHIN seconds, never hangs.
LOAD_FAILS_WITHIN = 30
MISSING = ["worker.mjs", "pyodide-boot.mjs", "start-snapshot.mjs", "pyodide/pyodide.asm.wasm",
           "pyodide/pyodide.asm.mjs", "pyodide/python_stdlib.zip", "wheel/", "models/"]


@pytest.mark.parametrize("missing", MISSING + ["a silent worker", "an HTML page for the wheel"])
def test_a_missing_runtime_file_or_a_silent_worker_rejects_load_naming_it(browser, tmp_path, missing):
    """The package with one file gone (and its compressed copies), or with a worker.mjs whose
    module never finishes: load() rejects with a PhononError naming that file, not a bare
    "failed to load" or Pyodide's "exit(1)", and never hangs."""
    import time
    from harness.server import StaticServer
    package, copy = build_artifact("PHONON_PACKAGE"), tmp_path / "phonon-web"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("*.br", "*.gz"))
    if missing == "a silent worker":                # its module never finishes evaluating
        (copy / "worker.mjs").unlink()
        (copy / "worker.mjs").write_text("await new Promise(() => {});\n")
        name = "worker.mjs"
    elif missing == "an HTML page for the wheel":   # a host's single-page-app fallback, with HTTP 200
        wheel = next((copy / "wheel").glob("*.whl"))
        wheel.write_text("<!doctype html>\n<html><body><div id=app></div></body></html>\n")
        name = wheel.name
    else:
        gone = next(p for p in sorted(copy.rglob("*")) if str(p.relative_to(copy)).startswith(missing))
        for p in copy.rglob(gone.name + "*"):
            p.unlink()
        name = gone.name
    with StaticServer({"/": copy, "/test/": ROOT / "tests" / "data" / "api-page"}) as server:
        page = browser.browser.new_context().new_page()
        try:
            page.goto(server.url + "/test/index.html")
            started = time.monotonic()
            got = page.evaluate("""async (seconds) => {
                const { Recognizer } = await import("/phonon.mjs");
                const timeout = new Promise((done) => setTimeout(() => done({ hung: true }), seconds * 1000));
                const load = Recognizer.load().then(() => ({ loaded: true }),
                                                    (e) => ({ name: e.name, code: e.code, message: e.message }));
                return Promise.race([load, timeout]);
            }""", LOAD_FAILS_WITHIN)
            waited = time.monotonic() - started
        finally:
            page.context.close()
    print(f"{missing}: {waited:.1f} s: {got}")
    assert got.get("name") == "PhononError", got
    assert name in got["message"], got
    if missing == "an HTML page for the wheel":
        assert "answered with an HTML page (" in got["message"] and "wheel/ included" in got["message"], got
