"""Property-based fuzzing (hypothesis) of both parsers: any mutation or truncation of a valid
file either loads or fails with the parser's own error - never another exception, a crash or
an output file left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modeltools.convert import ConversionError, convert, read_config
from modeltools.fermion import ContainerError
from engine.gguf_file import GGUFError
from engine.family import load

DATA = Path(__file__).resolve().parent / "data" / "tiny"
CONTAINER = (DATA / "model.fermion").read_bytes()
CONFIG = read_config(DATA / "config.json")


def mutations(size: int):
    # half the edits land in the first 4 KiB, where the headers and indexes are parsed
    position = st.one_of(st.integers(0, min(size, 4096) - 1), st.integers(0, size - 1))
    edit = st.tuples(position, st.integers(0, 255))
    return st.tuples(st.lists(edit, max_size=6), st.one_of(st.none(), st.integers(0, size)))


def mutate(data: bytes, plan) -> bytes:
    edits, cut = plan
    out = bytearray(data)
    for pos, value in edits:
        out[pos] = value
    return bytes(out[:cut] if cut is not None else out)


@pytest.fixture(scope="module")
def tiny_gguf_bytes(tmp_path_factory) -> bytes:
    out = tmp_path_factory.mktemp("fuzz") / "tiny.gguf"
    convert(DATA / "model.fermion", CONFIG, out, "notice", "tiny")
    return out.read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=mutations(len(CONTAINER)))
def test_container_parser_fails_cleanly(tmp_path, plan):
    src, out = tmp_path / "model.fermion", tmp_path / "out.gguf"
    src.write_bytes(mutate(CONTAINER, plan))
    try:
        convert(src, CONFIG, out, "n", "tiny")
    except (ContainerError, ConversionError):
        assert not out.exists()
    out.unlink(missing_ok=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_gguf_parser_fails_cleanly(tiny_gguf_bytes, data):
    plan = data.draw(mutations(len(tiny_gguf_bytes)))
    try:
        load(bytearray(mutate(tiny_gguf_bytes, plan))).close()
    except GGUFError:
        pass
