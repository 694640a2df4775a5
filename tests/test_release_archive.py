"""The real release's shapes: the byte-plane archive (`bps_manifest.json` +
`model.fermion.bps`), 2-D subsampling pointwise tables, and config.json's two pin forms."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from modeltools import bps
from modeltools.convert import (ConversionError, check_artifact, convert, extract_archive, model_id,
                            read_config, verify)
from modeltools.synth import float16_spans, write_release_archive, write_tar_zst

DATA = Path(__file__).resolve().parent / "data" / "tiny"
POINTWISE = ("encoder.subsampling.layers.3.weight", "encoder.subsampling.layers.6.weight")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "tiny.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), out, "test notice", "tiny")
    return out


# ---------------------------------------------------------------------------------------------
# the byte-plane transform

@pytest.mark.parametrize("spans", [
    [],                                                   # nothing transformed
    [(0, 8, 2)],                                          # one span at the start
    [(3, 3, 2), (5, 17, 4), (17, 29, 3), (40, 48, 8)],   # empty span, gaps, touching spans, odd item
    [(0, 60, 1)],                                         # item size 1 is the identity
])
def test_split_and_join_are_inverse(spans):
    original = bytes(np.random.default_rng(5).integers(0, 256, 77, dtype=np.uint8))
    stored, meta = bps.split_planes(original, 9, spans)
    assert len(stored) == len(original)
    if any(i > 1 and e > s for s, e, i in spans):
        assert stored != original
    out = io.BytesIO()
    bps.join_planes(stored, meta, out)
    assert out.getvalue() == original


def test_planes_are_stored_byte_position_first():
    stored, _ = bps.split_planes(bytes([1, 2, 3, 4, 5, 6]), 0, [(0, 6, 2)])
    assert stored == bytes([1, 3, 5, 2, 4, 6])


@pytest.mark.parametrize("change, message", [
    (lambda m: m.update(plan=[[0, 8, 2], [4, 12, 2]]), "overlaps, is out of order"),
    (lambda m: m.update(plan=[[0, 7, 2]]), "not whole 2-byte items"),
    (lambda m: m.update(plan=[[0, 8, 0]]), "item size 0"),
    (lambda m: m.update(plan=[[0, 10_000, 2]]), "leaves the"),
    (lambda m: m.update(plan=[[0, 8]]), "not \\[start, end, itemsize\\]"),
    (lambda m: m.update(plan=None), "no plan list"),
    (lambda m: m.update(base=-1), "'base'"),
    (lambda m: m.update(payload_bytes=5), "is not the original size"),
    (lambda m: m.update(original_bytes=m["original_bytes"] + 1, payload_bytes=m["payload_bytes"] + 1),
     "bytes stored"),
])
def test_bad_plans_are_named_before_any_data_is_touched(change, message):
    stored, meta = bps.split_planes(bytes(64), 4, [(0, 8, 2), (10, 20, 2)])
    change(meta)
    out = io.BytesIO()
    with pytest.raises(bps.TransformError, match=message):
        bps.join_planes(stored, meta, out)
    assert out.getvalue() == b""


# ---------------------------------------------------------------------------------------------
# the release-shaped archive through the converter

def test_release_shaped_archive_gives_the_same_model(tiny_gguf, tmp_path):
    archive = tmp_path / "phonon-2-tiny.bps.tar.zst"
    write_release_archive(archive, DATA / "config.json", DATA / "model.fermion")
    base, spans = float16_spans((DATA / "model.fermion").read_bytes())
    assert base > 8 and len(spans) > 20                   # the float16 records are transformed
    out = tmp_path / "extract"
    out.mkdir()
    container, config = extract_archive(archive, out)
    assert container.read_bytes() == (DATA / "model.fermion").read_bytes()
    assert config.read_bytes() == (DATA / "config.json").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.fermion"]
    converted = tmp_path / "from-release.gguf"
    convert(container, read_config(config), converted, "test notice", "tiny")
    assert converted.read_bytes() == tiny_gguf.read_bytes()


def release_members(tmp_path: Path) -> list:
    """The members of a release-shaped archive as (name, bytes), to tamper with."""
    import tarfile

    import zstandard
    archive = tmp_path / "good.bps.tar.zst"
    write_release_archive(archive, DATA / "config.json", DATA / "model.fermion")
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(archive.read_bytes())).read()
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        return [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]


def extract_members(tmp_path: Path, members: list):
    archive = tmp_path / "bad.bps.tar.zst"
    write_tar_zst(archive, members)
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    return extract_archive(archive, out)


def edit_manifest(members: list, change) -> list:
    manifest = json.loads(members[0][1])
    files = {f["path"]: f for f in manifest["files"]}
    change(files)
    manifest["files"] = list(files.values())
    return [(members[0][0], json.dumps(manifest).encode())] + members[1:]


def test_a_damaged_plane_is_caught_by_the_manifest_digest(tmp_path):
    members = release_members(tmp_path)
    name, stored = members[2]
    assert name == "model.fermion.bps"
    damaged = bytearray(stored)
    damaged[len(damaged) // 2] ^= 1
    members[2] = (name, bytes(damaged))
    with pytest.raises(ConversionError, match="model.fermion sha256 .* does not match bps_manifest.json"):
        extract_members(tmp_path, members)


@pytest.mark.parametrize("change, message", [
    (lambda files: files["config.json"].update(original_sha256="0" * 64), "config.json sha256"),
    (lambda files: files["config.json"].update(original_bytes=3), "config.json is .* bytes; bps_manifest.json says 3"),
    (lambda files: files["model.fermion"].pop("transform"), "has no transform for model.fermion"),
    (lambda files: files["model.fermion"]["transform"].update(plan=[[0, 4, 2], [2, 6, 2]]), "overlaps"),
    (lambda files: files.pop("config.json"), "config.json is not listed in bps_manifest.json"),
])
def test_manifest_disagreements_are_named(tmp_path, change, message):
    members = edit_manifest(release_members(tmp_path), change)
    with pytest.raises(ConversionError, match=message):
        extract_members(tmp_path, members)


def test_byte_planes_without_a_manifest_first_are_refused(tmp_path):
    members = release_members(tmp_path)
    with pytest.raises(ConversionError, match="does not start with bps_manifest.json"):
        extract_members(tmp_path, members[1:])
    with pytest.raises(ConversionError, match="does not start with bps_manifest.json"):
        extract_members(tmp_path, members[1:2] + members[:1] + members[2:])


def test_a_manifest_that_is_not_json_is_named(tmp_path):
    members = release_members(tmp_path)
    with pytest.raises(ConversionError, match="bps_manifest.json is not valid JSON"):
        extract_members(tmp_path, [(members[0][0], b"{not json")] + members[1:])


def test_cli_converts_the_release_shaped_archive(tmp_path):
    from modeltools.__main__ import main
    archive = tmp_path / "phonon-2-tiny.bps.tar.zst"
    write_release_archive(archive, DATA / "config.json", DATA / "model.fermion")
    out = tmp_path / "cli.gguf"
    assert main(["convert", "phonon2", "--archive", str(archive), "--out", str(out), "--verify"]) == 0
    assert out.stat().st_size > 0


# ---------------------------------------------------------------------------------------------
# 2-D pointwise tables: the same values as 4-D

def with_2d_pointwise(data: bytes) -> bytes:
    (h,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8: 8 + h])
    changed = 0
    for entry in header["index"]:
        if entry["n"] in POINTWISE:
            assert entry["shape"][2:] == [1, 1]
            entry["shape"] = entry["shape"][:2]
            changed += 1
    assert changed == 2
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(raw)) + raw + data[8 + h:]


def test_2d_pointwise_tables_convert_to_the_same_model(tiny_gguf, tmp_path):
    container = tmp_path / "model.fermion"
    container.write_bytes(with_2d_pointwise((DATA / "model.fermion").read_bytes()))
    out = tmp_path / "2d.gguf"
    convert(container, read_config(DATA / "config.json"), out, "test notice", "tiny")
    assert out.read_bytes() == tiny_gguf.read_bytes()
    assert "bit-identical" in verify(container, out)


def test_other_shapes_of_the_pointwise_tables_are_still_refused(tmp_path):
    data = (DATA / "model.fermion").read_bytes()
    (h,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8: 8 + h])
    for entry in header["index"]:
        if entry["n"] == POINTWISE[0]:
            c = entry["shape"][0]
            entry["shape"] = [c, c, 1]                      # same count, not a 1x1 conv layout
    raw = json.dumps(header).encode()
    container = tmp_path / "model.fermion"
    container.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + h:])
    with pytest.raises(ConversionError, match="layout expects"):
        convert(container, read_config(DATA / "config.json"), tmp_path / "x.gguf", "n", "tiny")


# ---------------------------------------------------------------------------------------------
# config.json: the snapshot form (artifact) and the extracted form (fermion)

def test_both_config_forms_pin_the_container(tmp_path):
    container = tmp_path / "model.fermion"
    shutil.copy(DATA / "model.fermion", container)
    digest, size = sha(container.read_bytes()), container.stat().st_size
    snapshot = {"model_type": "parakeet_tdt_five_value", "model_id": "FermionResearch/Phonon-2",
                "artifact": {"filename": "phonon-2.bps.tar.zst", "sha256": "ab" * 32,
                             "container_bytes": size, "container_sha256": digest}}
    extracted = {"fermion": {"container_sha256": digest}}
    for config in (snapshot, extracted, {}):
        check_artifact(config, container)
    snapshot["artifact"]["container_sha256"] = "0" * 64
    with pytest.raises(ConversionError, match="does not match config.json's artifact"):
        check_artifact(snapshot, container)
    extracted["fermion"]["container_sha256"] = "0" * 64
    with pytest.raises(ConversionError, match="does not match config.json's fermion"):
        check_artifact(extracted, container)
    with pytest.raises(ConversionError, match="config.json's fermion says 1"):
        check_artifact({"fermion": {"container_bytes": 1}}, container)
    both = {"artifact": {"container_sha256": digest}, "fermion": {"container_sha256": "0" * 64}}
    with pytest.raises(ConversionError, match="fermion"):
        check_artifact(both, container)


def test_model_id_from_either_form():
    assert model_id({"artifact": {"model_id": "a/b"}}) == "a/b"
    assert model_id({"model_id": "FermionResearch/Phonon-2"}) == "FermionResearch/Phonon-2"
    assert model_id({"fermion": {}}) is None


def test_cli_checks_the_extracted_form(tmp_path):
    from modeltools.__main__ import main
    config = json.loads((DATA / "config.json").read_text())
    config.pop("artifact")
    config["fermion"] = {"container_sha256": "1" * 64}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "x.gguf"
    assert main(["convert", "phonon2", "--container", str(DATA / "model.fermion"),
                 "--config", str(path), "--out", str(out)]) != 0
    assert not out.exists()
    config["fermion"]["container_sha256"] = sha((DATA / "model.fermion").read_bytes())
    path.write_text(json.dumps(config))
    assert main(["convert", "phonon2", "--container", str(DATA / "model.fermion"),
                 "--config", str(path), "--out", str(out)]) == 0


def test_plain_members_behind_a_manifest_are_checked_and_used(tiny_gguf, tmp_path):
    """The form public unpackers of Phonon-2 expect: bps_manifest.json first, then config.json,
    model.fermion (stored as it is) and packed_manifest.json."""
    plain = {name: (DATA / name).read_bytes() for name in ("config.json", "model.fermion")}
    plain["packed_manifest.json"] = b"{}\n"
    files = [{"path": n, "original_bytes": len(b), "stored_bytes": len(b), "original_sha256": sha(b)}
             for n, b in plain.items()]
    manifest = json.dumps({"files": files}).encode()
    container, config = extract_members(tmp_path, [("bps_manifest.json", manifest)] + list(plain.items()))
    converted = tmp_path / "plain.gguf"
    convert(container, read_config(config), converted, "test notice", "tiny")
    assert converted.read_bytes() == tiny_gguf.read_bytes()
    files[1]["original_sha256"] = "0" * 64
    manifest = json.dumps({"files": files}).encode()
    with pytest.raises(ConversionError, match="model.fermion sha256 .* does not match bps_manifest.json"):
        extract_members(tmp_path, [("bps_manifest.json", manifest)] + list(plain.items()))
