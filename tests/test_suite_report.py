"""The suite's cost report (harness/suite_report.py, tests/README.md "Where the time goes"): a
JUnit XML and build.py test's run record give each module's seconds, summed from its tests'
setup + call + teardown; a selection or a failed run is refused, not reported as the suite; the
table renders; and the parallel run's order (tests/conftest.py module_costs) reads the costs
from the committed result."""

from __future__ import annotations

import json

import pytest

from harness import suite_report
from harness.documents import suite_table

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.test_fast" name="test_a" time="0.5"/>
<testcase classname="tests.test_fast" name="test_b" time="0.25"><skipped message="no adapter"/></testcase>
<testcase classname="tests.test_slow.TestGroup" name="test_c[firefox]" time="40.0"><properties>
<property name="cpu_seconds" value="12.5"/></properties></testcase>
<testcase classname="tests.test_slow" name="test_d" time="2.0"><properties>
<property name="module_cpu_seconds" value="61.5"/></properties></testcase>
</testsuite></testsuites>
"""
RUN = {"wall_seconds": 30.0, "busy_cpu_seconds": 55.0, "cores": 2, "workers": 4, "selection": [],
       "commit": "abc1234", "command": "python3 build.py test"}


def write(tmp_path, report=REPORT, run=RUN):
    (tmp_path / "r.xml").write_text(report)
    (tmp_path / "run.json").write_text(json.dumps(run))
    return ["--report", str(tmp_path / "r.xml"), "--run", str(tmp_path / "run.json")]


def test_modules_sum_their_tests_and_the_slowest_lead():
    figures = suite_report.summarise(suite_report.read_cases_text(REPORT), RUN)
    assert figures["modules"] == [{"module": "test_slow", "tests": 2, "skipped": 0, "seconds": 42.0, "cpu_seconds": 61.5},
                                  {"module": "test_fast", "tests": 2, "skipped": 1, "seconds": 0.8, "cpu_seconds": 0.0}]
    assert figures["outcomes"] == {"passed": 3, "skipped": 1}
    assert figures["slowest"][0] == {"test": "test_slow::test_c[firefox]", "seconds": 40.0}
    assert figures["costliest"] == [{"test": "test_slow::test_c[firefox]", "cpu_seconds": 12.5, "seconds": 40.0}]
    table = suite_table({"date": "D", "cpu": "CPU", "cpu_flags": ["avx2"], "figures": figures})
    assert "`python3 build.py test` with 4 workers, 3 passed, 1 skipped" in table
    assert "| test_slow | 2 |  | 42.0 | 98.1% | 61.5 |" in table and "| test_fast | 2 | 1 | 0.8 | 1.9% | 0.0 |" in table
    assert "(62 s in all;" in table
    assert "| test_slow::test_c[firefox] | 12.5 | 40.0 |" in table


def test_the_meter_counts_a_grandchild_nobody_it_knows_reaped(tmp_path):
    """A grandchild that burns CPU, outlives its parent and is reaped by init (as a closed
    browser's renderers are) is counted: no process in the tree ever adds its time to its
    own, so only sampling it while it ran sees it."""
    import subprocess
    import sys
    from harness.process_cpu import TreeCpuMeter
    meter = TreeCpuMeter(period=0.1)
    before = meter.seconds()
    burn = "import time; t = time.process_time()\nwhile time.process_time() - t < 2.0: pass"
    subprocess.run([sys.executable, "-c", f"import subprocess, sys, time; "
                    f"subprocess.Popen([sys.executable, '-c', {burn!r}]); time.sleep(1.2)"], check=True)
    # the parent has exited (reaped: its own time is ours now); its child burns on, orphaned.
    # On a loaded machine the orphan gets the CPU late: wait (up to 10 s) until the meter has
    # seen 0.3 s, rather than a fixed 0.2 s (the 2 s it burns bound the wait from above)
    import time
    deadline = time.monotonic() + 10
    while meter.seconds() - before < 0.3 and time.monotonic() < deadline:
        time.sleep(0.1)
    spent = meter.seconds() - before
    assert 0.3 <= spent < 2.5, spent     # without sampling: the parent alone, under 0.1 s


def test_a_selection_or_a_failed_run_is_not_the_suite(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_report, "write_result", lambda *a, **k: pytest.fail("wrote a result"))
    with pytest.raises(SystemExit, match="is of a selection"):
        suite_report.main(write(tmp_path, run=dict(RUN, selection=["--quick"])))
    failed = REPORT.replace('time="0.5"/>', 'time="0.5"><failure message="x"/></testcase>')
    with pytest.raises(SystemExit, match="1 failure"):
        suite_report.main(write(tmp_path, report=failed))


def test_a_whole_run_writes_the_result(tmp_path, monkeypatch):
    written = {}
    monkeypatch.setattr(suite_report, "write_result", lambda name, figures: written.setdefault(name, figures) and tmp_path)
    monkeypatch.setattr(suite_report, "ROOT", tmp_path.parent)
    assert suite_report.main(write(tmp_path)) == 0
    assert written["suite"]["wall_seconds"] == 30.0 and written["suite"]["modules"][0]["module"] == "test_slow"


def test_the_parallel_order_reads_the_committed_costs():
    from conftest import module_costs
    costs = module_costs()
    assert costs, "results/suite.json is missing or has no modules: regenerate it (tests/README.md)"
    assert len(costs) > 40                      # the suite's modules, measured
    assert all(isinstance(v, float | int) and v >= 0 for v in costs.values())
