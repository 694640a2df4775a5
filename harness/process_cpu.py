"""CPU time of a process tree, from /proc: what a test module cost the machine, browsers,
drivers and servers included, while other pytest workers run beside it (tests/conftest.py
records it per module; harness/suite_report.py sums it).

Linux does not add a process's time to its parent's unless the parent waits for it, and
browsers leave theirs unreaped (a closed Chromium's renderers are not counted in any
survivor), so the tree is sampled: TreeCpuMeter reads /proc once a second in a thread and keeps
each process's latest user + system time; the total is the sum over every process seen. What a
process spends in its last second, or a process shorter than a second, is missed: a small
undercount, not a double count."""

from __future__ import annotations

import os
import threading
import time

TICKS = os.sysconf("SC_CLK_TCK")


def process_table() -> dict:
    """{pid: (parent pid, start time, CPU ticks: its own user + system)} of every process."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                text = f.read()
        except OSError:             # it exited while we looked
            continue
        # "pid (comm) state ppid ... utime stime cutime cstime ... starttime": comm may hold spaces
        fields = text[text.rindex(b")") + 2:].split()
        table[int(entry.name)] = (int(fields[1]), int(fields[19]), int(fields[11]) + int(fields[12]))
    return table


def descendants(table: dict, root: int) -> list:
    """`root` and every process below it in `table`."""
    children = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            found.append(pid)
            todo.extend(children.get(pid, ()))
    return found


class TreeCpuMeter:
    """seconds(): CPU seconds spent so far by this process and its descendants, sampled every
    `period` seconds from the first call on (and at each call)."""

    def __init__(self, root: int | None = None, period: float = 1.0):
        self.root = os.getpid() if root is None else root
        self.period = period
        self.latest = {}             # (pid, start time) -> its ticks when last seen
        self.lock = threading.Lock()
        self.thread = None

    def sample(self) -> int:
        table = process_table()
        with self.lock:
            for pid in descendants(table, self.root):
                _, started, ticks = table[pid]
                self.latest[(pid, started)] = ticks
            return sum(self.latest.values())

    def recent(self) -> float:
        """seconds() as of the thread's last sample (up to `period` old), without reading /proc:
        cheap enough to call around every test."""
        with self.lock:
            return sum(self.latest.values()) / TICKS

    def seconds(self) -> float:
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="tree-cpu-meter", daemon=True)
            self.thread.start()
        return self.sample() / TICKS

    def _run(self):
        while True:
            time.sleep(self.period)
            self.sample()
