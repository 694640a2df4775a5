"""The messages of web/ are named in one place: web/messages.mjs for the page, the engine worker,
the capture worklet and the demo's service worker, web/kernel-protocol.mjs for the kernel workers.
No file spells out a message kind of its own; every name used exists; every kind is used; the
service worker (a classic script, it cannot import) says exactly the kinds messages.mjs names;
and the capture ring's read and write (messages.mjs) keep every sample, in order, across the
ring's end, counting what a full ring drops."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "web"
PROTOCOLS = {"messages.mjs", "kernel-protocol.mjs"}

# A message kind as code spells it: {kind: "x"}, case "x": (in a switch on a kind), kind === "x".
LITERAL_KIND = re.compile(r'(?:\bkind:\s*|\bkind\s*[!=]==\s*)"([a-z-]+)"')
SWITCH_ON_KIND = re.compile(r"switch \((?:\w+\.)*kind\) \{(.*?)\n  \}", re.S)
NAMED_KIND = re.compile(r"\b(TO_WORKER|TO_PAGE|FEED|CAPTURE|SERVICE_WORKER|KERNEL)\.([A-Z_]+)\b")


def code_of(path: Path) -> str:
    """A module's code, comments out (they show messages as examples)."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(encoding="utf-8"), flags=re.S)
    return "\n".join(line.split(" // ", 1)[0] for line in text.splitlines() if not line.strip().startswith("//"))


def groups() -> dict:
    """{group: {NAME: "kind"}} of both protocol modules."""
    found = {}
    for name in PROTOCOLS:
        text = (WEB / name).read_text(encoding="utf-8")
        for group, body in re.findall(r"export const (\w+) = Object\.freeze\(\{(.*?)\n\}\);", text, re.S):
            found[group] = dict(re.findall(r"\b([A-Z_]+): \"([a-z-]+)\"", body))
    return found


def modules() -> list:
    return [p for p in sorted(WEB.rglob("*.mjs")) if p.name not in PROTOCOLS]


def test_no_module_spells_out_a_message_kind():
    found = []
    for path in modules():
        code = code_of(path)
        found += [f"{path.name}: {kind!r}" for kind in LITERAL_KIND.findall(code)]
        for body in SWITCH_ON_KIND.findall(code):
            found += [f"{path.name}: case {kind!r}" for kind in re.findall(r'\bcase\s+"([a-z-]+)"', body)]
    assert not found, "message kinds spelled out instead of named in web/messages.mjs or kernel-protocol.mjs: " + ", ".join(found)


def test_every_named_kind_exists_and_is_used():
    known = groups()
    assert {"TO_WORKER", "TO_PAGE", "FEED", "CAPTURE", "SERVICE_WORKER", "KERNEL"} <= set(known)
    used = {(g, n) for path in modules() for g, n in NAMED_KIND.findall(code_of(path))}
    unknown = sorted(f"{g}.{n}" for g, n in used if n not in known.get(g, {}))
    assert not unknown, f"names not in the protocol modules: {unknown}"
    unused = sorted(f"{g}.{n}" for g, names in known.items() for n in names if (g, n) not in used)
    assert not unused, f"kinds nothing sends or reads: {unused}"


def test_the_live_files_import_their_kinds_from_the_protocol():
    for name in ("phonon.mjs", "worker.mjs", "worker/stream.mjs", "capture-worklet.mjs", "app.mjs"):
        assert re.search(r'^import \{[^}]*\} from "\.\.?/messages\.mjs";', (WEB / name).read_text(), re.M), name
    for name in ("kernel-pool.mjs", "kernel-worker.mjs"):
        assert 'from "./kernel-protocol.mjs"' in (WEB / name).read_text(), name


def test_the_service_worker_says_the_kinds_messages_names():
    spelled = set(re.findall(r'\bkind(?::\s*|\s*===\s*)"([a-z-]+)"', code_of(WEB / "sw.js.j2")))
    assert spelled == set(groups()["SERVICE_WORKER"].values())


def test_the_capture_ring_keeps_every_sample_in_order_and_counts_what_it_drops(tmp_path):
    """Written in pieces that wrap the ring's end, drained in between: the samples read are the
    samples written; a write that does not fit is dropped whole and counted; ringSkip marks all
    read. Run in Node on messages.mjs itself."""
    script = tmp_path / "ring.mjs"
    script.write_text(f"""
import {{ RING, openRing, ringDrain, ringDropped, ringSkip, ringWrite }} from {json.dumps((WEB / "messages.mjs").as_uri())};
const ring = openRing(new SharedArrayBuffer(RING.HEADER_BYTES + 4 * 16));
const got = [], wrote = [];
let next = 0;
for (const n of [5, 7, 9, 3, 16, 1, 11]) {{
  const x = Float32Array.from({{ length: n }}, () => next++);
  if (ringWrite(ring, x)) wrote.push(...x);
  if (n !== 9) ringDrain(ring, (s) => got.push(...s));
}}
const full = ringWrite(ring, new Float32Array(20));
ringWrite(ring, Float32Array.of(-1, -2));
ringSkip(ring);
let after = 0;
ringDrain(ring, (s) => {{ after += s.length; }});
console.log(JSON.stringify({{ got, wrote, full, dropped: ringDropped(ring), after }}));
""")
    out = json.loads(subprocess.run(["node", str(script)], capture_output=True, text=True, check=True).stdout)
    assert out["got"] == out["wrote"] and len(out["wrote"]) == 5 + 7 + 9 + 3 + 16 + 1 + 11
    assert out["full"] is False and out["dropped"] == 20 and out["after"] == 0
