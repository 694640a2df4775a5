"""The documents' tables, generated from the benchmarks' results (results/<name>.json,
harness/results.py) between markers:

    <!-- generated: behind -->
    ... (written by `python3 build.py docs`; do not edit) ...
    <!-- /generated: behind -->

`python3 build.py docs` rewrites every generated part; `python3 build.py docs --check` fails,
naming the part, when a document differs from what its result gives (tests/test_readme.py runs
it), so a figure cannot drift from the run behind it.

    render_documents(check=True)        # -> [(document, name)] that differ
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from harness.results import RESULTS, ROOT

DOCUMENTS = [ROOT / "BENCHMARKS.md", ROOT / "README.md", ROOT / "models" / "MODEL_CARD.md", ROOT / "tests" / "README.md"]
MARKED = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /generated: (?P=name) -->)", re.S)


# -- the generated parts --------------------------------------------------------------------------

def measured(result: dict) -> str:
    """The start every table's text shares: when, at which commit, on which machine."""
    return (f"Measured {result['date']} at commit {result['commit']} on {result['cpu']} ({result['cores']} cores; "
            f"{', '.join(result['cpu_flags'])})")


def behind_table(result: dict) -> str:
    """harness/bench_behind.py's rows."""
    lines = [f"{measured(result)}, {result['browser']}: `{result['command']}`.", "",
             "| how | model | workers | audio s | compute / audio | most behind s | deferred s | catch-up s | "
             "commit lag p50 / p95 s | native tokens |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["figures"]["rows"]:
        lines.append(f"| {r['how']} | {r['model']} | {r['workers']} | {r['audio_seconds']} | {r['compute_per_audio']} | "
                     f"{r['max_pending_seconds']} | {r['deferred_seconds']} | {r['catch_up_seconds']} | "
                     f"{r['commit_lag_p50_seconds']} / {r['commit_lag_p95_seconds']} | "
                     f"{'yes' if r['native_tokens'] else 'NO'} ({r['tokens']:,}) |")
    return "\n".join(lines) + "\n"


def returning(row: dict) -> str:
    if "returning_s" not in row:
        return "–"
    return f"{row['returning_s']} ({(row.get('returning_start') or {}).get('snapshot', '?')})"


def engines_table(result: dict) -> str:
    """harness/bench_engines.py's rows: one per engine."""
    f = result["figures"]
    mib = lambda n: "–" if n is None else f"{n / 2**20:.0f}"          # noqa: E731
    rows = f["rows"]
    lines = [f"{measured(result)}: `{result['command']}`, {f['wall_seconds']} s in all. "
             f"Start-up: the median of {f['startups']} fresh pages; two-commands.wav "
             f"({rows[0]['default_audio_seconds']} s, the default model): the median of {f['repeats']} runs after a "
             f"warm-up; full-size: {rows[0]['full_model']} ({rows[0]['full_model_bytes']:,} bytes) on {f['seconds']:g} s "
             f"of speech-like signal, loaded in a fresh page, the median of {f['full_repeats']} runs after a warm-up. RTFx: audio seconds per second of the engine's compute (in brackets: of "
             "the transcribe() call's wall time). Memory in MiB: the engine worker's wasm heap (+ the kernel workers' "
             "wasm memory) after the last transcription; page JS heap: performance.memory.", "",
             "| engine | SharedArrayBuffer | tier | workers by default | start-up s | returning visit s | two-commands RTFx | "
             "full-size RTFx, 1 worker | full-size RTFx, 2 workers | full-size load s (1 / 2 workers) | "
             "wasm MiB: default / full 1 / full 2 workers | page JS heap MiB | native tokens |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    wire = rows[0].get("first_visit_bytes")
    if wire:            # results before the returning visit was measured have neither
        lines[0] += (" Returning visit: the same page navigated again once the worker kept its start-up snapshot "
                     "(in brackets: how Python started). A first visit's bytes (the package, from its manifest): "
                     + ", ".join(f"{name} {n / 1e6:.2f} MB" for name, n in wire.items()) + ".")
    for r in rows:
        full = [r.get(f"full_{n}") for n in (1, 2)]
        rtfx = ["–" if x is None else f"{x['rtfx']} ({x['wall_rtfx']})" for x in full]
        load = " / ".join("–" if x is None else str(x["load_s"]) for x in full)
        heap = " / ".join(["–" if x is None else mib(x["heap_bytes"]) + (f" + {mib(x['kernel_heap_bytes'])}"
                                                                         if x["kernel_heap_bytes"] else "")
                           for x in [{"heap_bytes": r["default_heap_bytes"], "kernel_heap_bytes": 0}, *full]])
        page = "–" if r["default_page_heap_bytes"] is None else f"{r['default_page_heap_bytes'] / 2**20:.1f}"
        native = all(x["native_tokens"] for x in [{"native_tokens": r["default_native_tokens"]}, *full] if x)
        lines.append(f"| {r['version']}{' (' + r['label'] + ')' if r.get('label') else ''} | "
                     f"{'yes' if r['sab'] else 'no'} | {r['tier']} | {r['default_workers']} | {r['startup_s']} | "
                     f"{returning(r)} | "
                     f"{r['default_rtfx']:.0f} ({r['default_wall_rtfx']:.0f}) | {rtfx[0]} | {rtfx[1]} | {load} | {heap} | {page} | "
                     f"{'yes' if native else 'NO'} |")
    return "\n".join(lines) + "\n"


def webgpu_rows(f: dict) -> list:
    """harness/bench_webgpu.py's figures as table lines: the adapter, then one row per model and
    runtime."""
    mib = lambda n: f"{n / 2**20:.1f}"          # noqa: E731
    yes = lambda ok: "yes" if ok else "NO"        # noqa: E731
    # a device lost mid-run: the CPU computed the rest, so equal bits would prove nothing of the GPU
    on_device = lambda r, text: text if not r.get("device_lost") else f"{text} (DEVICE LOST: the CPU's)"  # noqa: E731
    lines = [f"Adapter: {f['adapter_text']}."]
    if f.get("browser"):
        lines.append(f"Browser: {f['browser']['adapter_text']}.")
    lines += ["", "| runtime | model | audio s | GPU encode s: first / then | CPU encode s, tier with 1 thread: first / "
              "then | GPU time / CPU time | "
              "submissions | dispatches | uploaded MiB | read back MiB | GPU buffers MiB: at load / after encode "
              "(model file) | digest = native scalar | tokens = native scalar |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in f["rows"] + f.get("browser", {}).get("rows", []):
        cpu = r.get("cpu_encode_seconds")
        cpu_then = "–" if r.get("repeats") == 0 else cpu
        cpu_text = "–" if cpu is None else f"{r['cpu_first_encode_seconds']} / {cpu_then} ({r['cpu_tier']})"
        ratio = "–" if cpu is None else f"{r['gpu_encode_seconds'] / cpu:.0f}"
        first = r.get("gpu_first_encode_seconds", r.get("first_encode_seconds"))
        then = "–" if r.get("repeats") == 0 else r["gpu_encode_seconds"]
        buffers = ("–" if "buffer_bytes" not in r else
                   f"{mib(r['buffer_bytes_at_load'])} / {mib(r['buffer_bytes'])} ({mib(r['model_bytes'])})")
        lines.append(f"| {r['runtime']} | {r['model']} | {r['audio_seconds']} | {first} / {then} | {cpu_text} | "
                     f"{ratio} | {r['submissions']:,} | {r['dispatches']:,} | {mib(r['uploaded_bytes'])} | "
                     f"{mib(r['read_bytes'])} | {buffers} | {on_device(r, yes(r['native_digest']))} | "
                     f"{yes(r['native_tokens'])} ({r['tokens']}) |")
    return lines


def webgpu_kernel_tables(f: dict) -> list:
    """Per native GPU row that was profiled: its kernels' cost-model operations and GPU times."""
    from harness.webgpu_cost import table
    lines = []
    for r in f["rows"]:
        if not r.get("kernels"):
            continue
        cost = r["cost"]
        clock = "timestamp queries" if r.get("timestamps") else "each pass submitted alone and waited for"
        lines += ["", f"{r['model']} model, {r['audio_seconds']} s: one more encode with every pass timed "
                  f"({clock}; {r['profiled_encode_seconds']} s wall) beside the cost model's integer operations "
                  f"(harness/webgpu_cost.py): GEMM integer products and staging {cost['gemm_products'] / 1e9:.1f} G, "
                  f"GEMM epilogues {cost['gemm_epilogues'] / 1e9:.1f} G, the rest {cost['other'] / 1e9:.1f} G, "
                  f"{cost['total'] / 1e9:.1f} G in all.", "", *table(r["kernels"])]
    return lines


def webgpu_table(result: dict) -> str:
    """harness/bench_webgpu.py's rows, the adapter named, then the per-kernel tables."""
    f = result["figures"]
    head = (f"{measured(result)}: `{result['command']}`, {f['wall_seconds']} s in all. Per encode "
            "(the shaders compiled before): wall time on the GPU executor and on the best native CPU tier with one "
            "thread in the same process, the first encode (it also uploads the positional table, kept after) "
            "and the median of the later ones (– where only one ran); the executor's counters of the last encode; the bytes "
            "of every GPU buffer created (weights, scratch, uniforms) after load and after the encodes. The browser "
            "row: checks/jobs.py gpu_digest.")
    return "\n".join([head, "", *webgpu_rows(f), *webgpu_kernel_tables(f)]) + "\n"


def webgpu_versus_table(result: dict) -> str:
    """harness/webgpu_versus.py's per-kernel GPU times, an older commit beside this one."""
    from harness.webgpu_versus import side_by_side
    f = result["figures"]
    clock = "timestamp queries" if f["new"]["timestamps"] else "each pass waited for"
    head = (f"{measured(result)}: `{result['command']}`. The {f['model']} model on {f['audio_seconds']} s of speech-like "
            f"audio, each tree in {f.get('rounds', 1)} processes (alternating) on the same adapter, "
            f"{f.get('repeats', 1)} encodes each after a warm-up, every pass timed ({clock}); ms summed per kernel "
            f"over an encode, each kernel's least.")
    return "\n".join([head, "", *side_by_side(f["old"], f["new"], f["old_commit"][:7], f["new_commit"])]) + "\n"


def webgpu_estimates_table(result: dict) -> str:
    """harness/webgpu_estimates.py's figures: the estimates per GPU class beside the measured CPU
    encode, the assumptions, and that CPU encode beside an older commit's."""
    from harness.webgpu_estimates import DISPATCH_SECONDS, EFFICIENCY, table
    f = result["figures"]
    ops = f["ops"]
    head = (f"{measured(result)}: `{result['command']}`. The cost model's integer operations for one encode of the "
            f"{ops['model']} model on {ops.get('audio_seconds', f['audio_seconds'])} s ({ops['dispatches']:,} dispatches, recorded on "
            f"{ops['adapter']}, not run), turned into time with stated assumptions: {EFFICIENCY:.0%} of each class's "
            f"peak integer rate sustained and {DISPATCH_SECONDS * 1e6:g} µs per dispatch; 32-bit integer multiplies "
            "(slower than adds on many GPUs), memory traffic and the serial chains' latency are not priced. "
            f"The CPU figure: the encoder alone on {f['audio_seconds']} s of features in Chromium {result['browser']}, tier "
            f"wasm_relaxed_simd, one worker, on this machine (the least of {len(f['new']['runs'])} sessions' medians "
            f"of {f['repeats']}): a laptop's own CPU would give its own figure.")
    lines = [head, "", *table(f)]
    if "old" in f:
        lines += ["", f"The relaxed-SIMD encode side by side, sessions alternating: {f['new']['seconds']} s here, "
                  f"{f['old']['seconds']} s at {f['old_commit']} (this checkout / {f['old_commit']} = "
                  f"{f['new']['seconds'] / f['old']['seconds']:.3f}; sessions: {f['new']['runs']} and "
                  f"{f['old']['runs']})."]
    return "\n".join(lines) + "\n"


def suite_table(result: dict) -> str:
    """harness/suite_report.py's figures: the run, then each module's cost and the slowest tests."""
    f = result["figures"]
    total = sum(m["seconds"] for m in f["modules"])
    cpu = sum(m.get("cpu_seconds", 0.0) for m in f["modules"])
    outcomes = ", ".join(f"{n:,} {what}" for what, n in sorted(f["outcomes"].items()))
    lines = [f"Measured {result['date']} at commit {f['commit']} on {result['cpu']} ({f['cores']} cores; "
             f"{', '.join(result['cpu_flags'])}): `{f['command']}` with {f['workers']} workers, {outcomes}; pytest "
             f"{f['wall_seconds'] / 60:.1f} min wall, the cores busy {f['busy_cpu_seconds']:,.0f} s of "
             f"{f['wall_seconds'] * f['cores']:,.0f} s. Seconds: each test's setup + call + teardown, summed per "
             f"module ({total:,.0f} s in all, more than the wall time: the workers run side by side, each slower "
             "than alone)."]
    if cpu:
        lines[0] += (f" CPU s: the module's worker and everything it started (browsers, drivers, servers), "
                     f"sampled from /proc ({cpu:,.0f} s in all; pytest's start and collection and the last "
                     "second of each process are not in it): what the module costs, whatever ran beside it.")
    lines += ["", "| module | tests | skipped | seconds | share |" + (" CPU s |" if cpu else ""),
              "|---|---|---|---|---|" + ("---|" if cpu else "")]
    for m in f["modules"]:
        lines.append(f"| {m['module']} | {m['tests']} | {m['skipped'] or ''} | {m['seconds']:,.1f} | "
                     f"{100 * m['seconds'] / max(total, 1e-9):.1f}% |"
                     + (f" {m.get('cpu_seconds', 0.0):,.1f} |" if cpu else ""))
    lines += ["", "The slowest tests:", "", "| test | seconds |", "|---|---|"]
    lines += [f"| {t['test']} | {t['seconds']:,.1f} |" for t in f["slowest"]]
    if f.get("costliest"):
        lines += ["", "The costliest tests (CPU seconds of the worker's process tree from the test's setup to its "
                  "teardown, +-1 s: a module's fixtures count in the test that first uses them):", "",
                  "| test | CPU s | seconds |", "|---|---|---|"]
        lines += [f"| {t['test']} | {t['cpu_seconds']:,.1f} | {t['seconds']:,.1f} |" for t in f["costliest"]]
    return "\n".join(lines) + "\n"


def soak_table(result: dict) -> str:
    """harness/bench_soak.py's rows (a long session through the engine worker's Python side)."""
    f = result["figures"]
    s = f["slopes"]
    r5 = s["last_over_minute5"]
    lines = [f"{measured(result)}: `{result['command']}`. {f['model']}, {f['tier']}, {f['minutes']} minutes of audio "
             f"in {f['chunk_seconds']} s chunks, a poll after each; {f['wall_seconds']} s wall time.", "",
             "| audio min | polls without a decode | poll ms median / p90 | message bytes median / max | "
             "heap MB | committed words | committed text KB | transcript store KB |",
             "|---|---|---|---|---|---|---|---|"]
    for r in f["rows"]:
        lines.append(f"| {r['minute']} | {r['polls_without_decode']} | {r['poll_ms_median']:.3f} / {r['poll_ms_p90']:.3f} | "
                     f"{r['message_bytes_median']} / {r['message_bytes_max']} | {r['heap_bytes'] / 1e6:.2f} | "
                     f"{r['committed_words']:,} | {r['committed_text_bytes'] / 1e3:.1f} | "
                     f"{r['transcript_store_bytes'] / 1e3:.1f} |")
    same = f.get("same_tokens_as_engine_stream")
    lines += ["", f"Last row against minute {r5['minute']}: poll median x{r5['poll_ms_median']}, message median "
              f"x{r5['message_bytes_median']} (largest x{r5['message_bytes_max']}). Slopes per hour of audio (least "
              f"squares, rows after the first): poll {s['poll_ms_median_per_hour']} ms, message "
              f"{s['message_bytes_median_per_hour']} bytes, heap {s['heap_bytes_per_hour'] / 1e6:.3f} MB. Heap at "
              f"the end minus the committed text: {s['heap_over_text_bytes'] / 1e6:.2f} MB. Final tokens equal a "
              f"second stream fed in 20 ms chunks (`engine stream`'s way): "
              f"{'yes' if same else 'NO' if same is not None else 'not compared'} ({f['words']:,} words)."]
    return "\n".join(lines) + "\n"


def soak_browser_table(result: dict) -> str:
    """harness/bench_soak_browser.py's runs (a long session in each browser engine, through the
    JavaScript API): the first and last rows and the slopes, an engine a line."""
    lines = ["| engine | browser | audio min (pace) | poll ms median: first / last row | message B median: "
             "first / last | worker heap MB: first / last | page heap MB: first / last | slopes per hour: poll ms, "
             "message B, worker heap MB, page heap MB | words | tokens = native | measured |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    mb = lambda v: "-" if v is None else f"{v / 1e6:.1f}"
    per_hour_mb = lambda v: "-" if v is None else f"{v / 1e6:.2f}"
    for f in result["figures"]["runs"]:
        a, z, s = f["rows"][1] if len(f["rows"]) > 2 else f["rows"][0], f["rows"][-1], f["slopes"]
        lines.append(f"| {f['engine']} | {f['version']} | {f['minutes']} (x{f['pace']}) | "
                     f"{a['poll_ms_median']:.2f} / {z['poll_ms_median']:.2f} | {a['message_bytes_median']} / "
                     f"{z['message_bytes_median']} | {mb(a['worker_heap_bytes'])} / {mb(z['worker_heap_bytes'])} | "
                     f"{mb(a['page_heap_bytes'])} / {mb(z['page_heap_bytes'])} | {s['poll_ms_median_per_hour']}, "
                     f"{s['message_bytes_median_per_hour']}, {per_hour_mb(s['heap_bytes_per_hour'])}, "
                     f"{per_hour_mb(s['page_heap_bytes_per_hour'])} | {f['words']:,} | "
                     f"{'yes' if f['same_tokens_as_engine_stream'] else 'NO'} | {f['date']}, {f['commit']}, "
                     f"{f['cpu']} ({f['cores']} cores): `{f['command']}` |")
    lines += ["", "First row: the second (the first period holds the start-up). The worker heap is its wasm "
              "memory, which grows in pages and never shrinks; the page heap is Chromium's live JS heap after "
              "gc() (the other engines report none)."]
    return "\n".join(lines) + "\n"


def live_table(result: dict) -> str:
    """results/live.json (harness/bench_live.py): each runtime with today's schedule and the live one."""
    f = result["figures"]
    lines = [f"Measured {result['date']} at commit {result['commit']} on {f['cpu']}"
             + (f", {result['browser']}" if result.get("browser") else "")
             + f": `{result['command']}`, {f['audio_seconds']} s of speech, {f['model']} paying, {f['placing_model']} placing.",
             "",
             "| where | schedule | compute / audio s | decoded audio / audio s | most waiting s | waiting p50 / p95 s | "
             "first partial s | commit lag p50 / p95 s | after end s | jumps |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    schedules = {("fast", "exact"): "today's (fast, exact pace)", ("balanced", "live"): "live (balanced, live pace)"}
    for x in f["rows"]:
        plural = "s" if x["workers"] > 1 else ""
        where = (f"native, {x['tier']}, 1 thread" if x["runtime"] == "native"
                 else f"Chromium, wasm_relaxed_simd, {x['workers']} worker{plural}")
        schedule = schedules.get((x["latency"], x["pace"]), f"{x['latency']}, {x['pace']} pace")
        lines.append(f"| {where} | {schedule} | {x['compute_per_audio']:.2f} | {x['decoded_audio_per_second']:.2f} | "
                     f"{x['max_pending_seconds']:.1f} | {x['waiting']['p50']:.1f} / {x['waiting']['p95']:.1f} | "
                     f"{x['first_partial_seconds']:.2f} | {x['commit_lag']['p50']:.1f} / {x['commit_lag']['p95']:.1f} | "
                     f"{x['finish_seconds']:.1f} | {x['jumps']} |")
    return "\n".join(lines) + "\n"


RENDERERS = {"soak-native": soak_table, "soak-browser": soak_browser_table, "behind": behind_table, "engines": engines_table, "webgpu": webgpu_table,
             "webgpu-versus": webgpu_versus_table, "live": live_table, "webgpu-estimates": webgpu_estimates_table, "suite": suite_table}


def rendered(name: str, folder: Path = RESULTS) -> str:
    path = folder / f"{name}.json"
    if name not in RENDERERS:
        raise KeyError(f"no renderer for the generated part {name!r} (harness/documents.py RENDERERS)")
    if not path.exists():
        raise FileNotFoundError(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: the result "
                                f"behind the generated part {name!r} is missing")
    return RENDERERS[name](json.loads(path.read_text()))


def render_documents(check: bool = False, documents=None, folder: Path = RESULTS) -> list:
    """Rewrite (or with check, only compare) every generated part; -> [(document, name)] that
    differed from what their results give."""
    differ = []
    for doc in documents or DOCUMENTS:
        text = doc.read_text()

        def replace(m, doc=doc):
            body = rendered(m.group("name"), folder)
            if body != m.group("body"):
                differ.append((doc, m.group("name")))
            return m.group(1) + body + m.group(4)
        new = MARKED.sub(replace, text)
        if not check and new != text:
            doc.write_text(new)
    return differ


def main(argv=None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    differ = render_documents(check=check)
    for doc, name in differ:
        where = doc.relative_to(ROOT)
        print(f"{where}: the generated part {name!r} differs from results/{name}.json"
              + ("" if check else " (rewritten)"))
    return 1 if check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
