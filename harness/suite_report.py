"""What the test suite costs, from a run of it: `python3 build.py test` leaves pytest's JUnit XML
in build/test-report.xml and the run's wall time, machine CPU time and worker count in
build/test-run.json; this turns the two into results/suite.json, whose table tests/README.md
shows (`python3 build.py docs` writes it, `--check` compares).

    python3 build.py test                       # any full run (not --quick, not -k)
    python3 -m harness.suite_report             # -> results/suite.json
    python3 build.py docs                       # -> tests/README.md's table

The time of a test is pytest's setup + call + teardown as the JUnit XML gives it, so a module's
sum includes its fixtures (browsers started, models converted, pages loaded). With workers in
parallel the sums add up to more than the wall time, and each test runs slower than alone: the
cores are shared by one worker more than there are cores. A module's CPU seconds (its worker's
process tree, browsers included: tests/conftest.py, harness/process_cpu.py) do not grow with
the load: they are what the module costs the machine, and what to cut when the suite is slow.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from .results import ROOT, write_result

REPORT = ROOT / "build" / "test-report.xml"
RUN = ROOT / "build" / "test-run.json"
SLOWEST = 15
COSTLIEST = 25                  # tests by CPU seconds (their own and their first use of module fixtures)


def read_cases(report: Path) -> list:
    """[{module, name, seconds, outcome}] of every test case in a JUnit XML report file."""
    return read_cases_text(report.read_text())


def read_cases_text(xml: str) -> list:
    """read_cases of the report's text."""
    cases = []
    for case in ET.fromstring(xml).iter("testcase"):
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = {"failure": "failed", "error": "error"}.get(tag, tag)
        module = case.get("classname", "").split(".")
        # classname is tests.test_x or tests.test_x.TestClass: the module is the test_ part
        name = next((p for p in module if p.startswith("test_")), ".".join(module))
        props = {p.get("name"): float(p.get("value")) for p in case.iter("property")}
        cases.append({"module": name, "name": case.get("name"), "seconds": float(case.get("time") or 0),
                      "outcome": outcome, "module_cpu_seconds": props.get("module_cpu_seconds"),
                      "cpu_seconds": props.get("cpu_seconds")})
    return cases


def summarise(cases: list, run: dict) -> dict:
    """The figures results/suite.json keeps: the run, each module's cost, the slowest tests and
    the costliest (CPU seconds, where the conftest recorded them: at least 1 s)."""
    outcomes = collections.Counter(c["outcome"] for c in cases)
    modules = collections.defaultdict(lambda: {"tests": 0, "skipped": 0, "seconds": 0.0, "cpu_seconds": 0.0})
    for c in cases:
        row = modules[c["module"]]
        row["tests"] += 1
        row["skipped"] += c["outcome"] == "skipped"
        row["seconds"] += c["seconds"]
        row["cpu_seconds"] += c.get("module_cpu_seconds") or 0.0
    ordered = sorted(modules.items(), key=lambda kv: -kv[1]["seconds"])
    slowest = sorted(cases, key=lambda c: -c["seconds"])[:SLOWEST]
    costliest = sorted((c for c in cases if c.get("cpu_seconds")), key=lambda c: -c["cpu_seconds"])[:COSTLIEST]
    return {**run, "outcomes": dict(outcomes),
            "modules": [{"module": m, **{k: round(v, 1) if k.endswith("seconds") else v for k, v in row.items()}}
                        for m, row in ordered],
            "slowest": [{"test": f"{c['module']}::{c['name']}", "seconds": round(c["seconds"], 1)} for c in slowest],
            "costliest": [{"test": f"{c['module']}::{c['name']}", "cpu_seconds": c["cpu_seconds"],
                           "seconds": round(c["seconds"], 1)} for c in costliest]}


def check_complete(run: dict, cases: list) -> None:
    """Only a whole run describes the suite: refuse a report of a selection."""
    if run.get("selection"):
        raise SystemExit(f"build/test-run.json is of a selection ({' '.join(run['selection'])}): "
                         "run the whole suite (`python3 build.py test`) first")
    failed = [c for c in cases if c["outcome"] in ("failed", "error")]
    if failed:
        raise SystemExit(f"the run had {len(failed)} failure(s), e.g. {failed[0]['module']}::{failed[0]['name']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.suite_report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", type=Path, default=REPORT, help="pytest's JUnit XML (build/test-report.xml)")
    parser.add_argument("--run", type=Path, default=RUN, help="build.py test's record of the run (build/test-run.json)")
    args = parser.parse_args(argv)
    for path in (args.report, args.run):
        if not path.exists():
            raise SystemExit(f"{path} is missing: run `python3 build.py test` first")
    run, cases = json.loads(args.run.read_text()), read_cases(args.report)
    check_complete(run, cases)
    path = write_result("suite", summarise(cases, run))
    print(f"wrote {path.relative_to(ROOT)}; `python3 build.py docs` puts its table into tests/README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
