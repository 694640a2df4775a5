"""Model files: the container reader and record codecs, the converter and its
--verify, the GGUF loader, and what each does with corrupt input."""

from __future__ import annotations

import hashlib
from array import array
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from modeltools import fermion
from modeltools.convert import ConversionError, convert, extract_archive, read_config, verify
from modeltools.fermion import ContainerError
from engine.gguf_file import GGUFError, GGUFFile
from engine.family import fingerprint, load
from modeltools.synth import TINY, vocabulary, write_archive

DATA = Path(__file__).resolve().parent / "data" / "tiny"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "tiny.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), out, "test notice", "tiny")
    return out


# ---------------------------------------------------------------------------------------------
# record codecs: exact round trips on awkward shapes

@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 7), (8, 13), (16, 40), (5, 1024)])
def test_five_value_round_trip(rows, cols):
    rng = np.random.default_rng(rows * cols)
    codes = rng.integers(0, 5, (rows, cols)).astype(np.uint8)
    codes[0] = 2                                          # a row of zeros
    lo = rng.uniform(0, 1, rows).astype(np.float16)
    hi = (lo.astype(np.float32) + rng.uniform(0, 1, rows)).astype(np.float16)
    hi[-1] = lo[-1]                                       # lo == hi
    data = fermion.encode_five_value(codes, lo, hi)
    got, glo, ghi = fermion.decode_five_value("w", data, rows, cols)
    np.testing.assert_array_equal(got, codes)
    assert glo.tobytes() == lo.tobytes() and ghi.tobytes() == hi.tobytes()


@pytest.mark.parametrize("nnz", [0, 8, 16, 9, 15])
def test_five_value_flag_byte_counts(nnz):
    """nnz a multiple of 8 and not: the flag section is ceil(nnz/8) bytes."""
    codes = np.full((2, 10), 2, np.uint8)
    codes.reshape(-1)[:nnz] = 4
    data = fermion.encode_five_value(codes, np.zeros(2, np.float16), np.ones(2, np.float16))
    assert len(data) == 2 * 2 + -(-nnz // 8) + 8
    np.testing.assert_array_equal(fermion.decode_five_value("w", data, 2, 10)[0], codes)


@pytest.mark.parametrize("kind, shape", [("int6", [3, 5]), ("int6", [8, 8]), ("int6", [1, 1]),
                                         ("int8", [4, 3]), ("int8", [2, 2, 1, 1])])
def test_int_round_trip(kind, shape):
    rng = np.random.default_rng(len(shape))
    limit = 32 if kind == "int6" else 128
    values = rng.integers(-limit, limit, shape).astype(np.int8)
    scales = rng.uniform(0, 1, shape[0]).astype(np.float16)
    data = fermion.encode_int(kind, values, scales)
    got, gs = fermion.decode_int("t", kind, data, shape)
    np.testing.assert_array_equal(got, values)
    assert gs.tobytes() == scales.tobytes()


def test_trit_byte_over_242_is_named():
    data = bytearray(fermion.encode_five_value(np.full((1, 5), 2, np.uint8), [0.0], [1.0]))
    data[0] = 243
    with pytest.raises(ContainerError, match=r"sign byte 243 >= 243 \(row 0, byte 0\)"):
        fermion.decode_five_value("enc.w", bytes(data), 1, 5)


def test_flag_count_disagreeing_with_nnz_is_named():
    data = fermion.encode_five_value(np.full((1, 16), 4, np.uint8), [0.0], [1.0])   # 16 non-zeros
    shorter = data[:4] + data[5:]                       # drop one flag byte
    with pytest.raises(ContainerError, match="with 16 non-zero signs it needs"):
        fermion.decode_five_value("enc.w", shorter, 1, 16)


# ---------------------------------------------------------------------------------------------
# conversion and --verify

def test_convert_verify_and_load(tiny_gguf):
    report = verify(DATA / "model.fermion", tiny_gguf)
    assert report.startswith("22 five-value + 11 int records bit-identical")
    assert report.endswith("85 records consumed")
    model = load(tiny_gguf)
    try:
        assert model.dims == TINY
        assert model.vocabulary == vocabulary(TINY.vocab_size)
        assert model.blank_id == TINY.vocab_size and model.durations == [0, 1, 2, 3, 4]
        assert model.notice == "test notice"
        t = model.tensor("encoder.layers.0.self_attn.q_proj.weight.fv5t7")
        assert t.dtype == "I8" and t.shape == (4, 96)         # 32 rows; K = 32: T = 6 -> 96 bytes/block
    finally:
        model.close()


def test_conversion_is_byte_reproducible(tiny_gguf, tmp_path):
    again = tmp_path / "again.gguf"
    convert(DATA / "model.fermion", read_config(DATA / "config.json"), again, "test notice", "tiny")
    assert sha(again) == sha(tiny_gguf)


def test_archive_path_gives_the_same_file(tiny_gguf, tmp_path):
    archive = tmp_path / "phonon-2-tiny.bps.tar.zst"
    write_archive(archive, [DATA / "config.json", DATA / "model.fermion"])
    out = tmp_path / "extract"
    out.mkdir()
    container, config = extract_archive(archive, out)
    assert container.read_bytes() == (DATA / "model.fermion").read_bytes()
    converted = tmp_path / "from-archive.gguf"
    convert(container, read_config(config), converted, "test notice", "tiny")
    assert sha(converted) == sha(tiny_gguf)


def test_cli_converts_and_verifies(tmp_path):
    from modeltools.__main__ import main
    out = tmp_path / "cli.gguf"
    assert main(["convert", "phonon2", "--container", str(DATA / "model.fermion"),
                 "--config", str(DATA / "config.json"), "--out", str(out), "--verify"]) == 0
    assert out.exists()


def test_folded_batch_norm_matches_unfolded():
    from modeltools.convert import fold_batch_norm
    rng = np.random.default_rng(0)
    C, k, T = 6, 9, 20
    w = rng.standard_normal((C, 1, k)).astype(np.float16)
    gamma, beta, mean = (rng.standard_normal(C).astype(np.float16) for _ in range(3))
    var = rng.uniform(0.5, 2, C).astype(np.float16)
    x = rng.standard_normal((C, T + k - 1))
    conv = np.stack([np.convolve(x[c], w[c, 0, ::-1].astype(np.float64), "valid") for c in range(C)])
    bn = (conv - mean[:, None]) / np.sqrt(var[:, None].astype(np.float64) + 1e-5) * gamma[:, None] + beta[:, None]
    fw, fb = fold_batch_norm(w, gamma, beta, mean, var)
    folded = np.stack([np.convolve(x[c], fw[c, 0, ::-1].astype(np.float64), "valid") for c in range(C)]) + fb[:, None]
    np.testing.assert_allclose(folded, bn, rtol=1e-5, atol=1e-5)


def test_mel_filterbank_properties():
    from modeltools.convert import hann_window, slaney_mel_filterbank
    fb = slaney_mel_filterbank()
    assert fb.shape == (128, 257) and (fb >= 0).all()
    # slaney norm: each triangle has area 1 in Hz (sum * bin width 31.25 Hz ~ 1 for wide filters)
    assert abs(fb[-1].sum() * 31.25 - 1) < 0.05
    assert fb[:, 0].sum() == 0 and (fb.sum(axis=1) > 0).all()
    w = hann_window(400)
    assert w[0] == 0 and w[-1] == 0 and abs(w[199] - w[200]) < 1e-6 and w.max() <= 1


# ---------------------------------------------------------------------------------------------
# corrupt containers: clear errors, nothing written

def container_bytes() -> bytes:
    return (DATA / "model.fermion").read_bytes()


def convert_bytes(tmp_path: Path, data: bytes):
    src = tmp_path / "model.fermion"
    src.write_bytes(data)
    out = tmp_path / "out.gguf"
    try:
        convert(src, read_config(DATA / "config.json"), out, "n", "tiny")
    finally:
        assert not out.exists() and not Path(str(out) + ".partial").exists()


def boundaries(data: bytes) -> list:
    (h,) = struct.unpack_from("<Q", data)
    cuts = [0, 1, 7, 8, 9, 8 + h - 1, 8 + h]
    offset = 8 + h
    for entry in json.loads(data[8: 8 + h])["index"]:
        cuts += [offset + 1, offset + entry["b"] // 2, offset + entry["b"] - 1]
        offset += entry["b"]
    return sorted(set(c for c in cuts if c < len(data)))


def test_truncation_at_every_section_boundary(tmp_path):
    data = container_bytes()
    cuts = boundaries(data)
    assert len(cuts) > 200
    for cut in cuts:
        with pytest.raises((ContainerError, ConversionError)):
            convert_bytes(tmp_path, data[:cut])


def rewrite_header(data: bytes, change) -> bytes:
    (h,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8: 8 + h])
    change(header)
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data[8 + h:]


@pytest.mark.parametrize("change, message", [
    (lambda h: h.update(format="fermion-five-value-parakeet-v2"), "format is"),
    (lambda h: h["index"].append(dict(h["index"][0])), "appears twice"),
    (lambda h: h["index"][0].update(k="int4"), "unknown kind"),
    (lambda h: h["index"][0].update(shape=[8, 0, 3, 3]), "non-positive dimension"),
    (lambda h: h["index"][1].update(b=h["index"][1]["b"] + 2), "layout needs"),
    (lambda h: h["index"][0].update(n="encoder.subsampling.layers.0.weightX"), "no record"),
    (lambda h: h.pop("index"), "index"),
])
def test_bad_headers(tmp_path, change, message):
    with pytest.raises((ContainerError, ConversionError), match=message):
        convert_bytes(tmp_path, rewrite_header(container_bytes(), change))


def test_bad_json_and_header_lengths(tmp_path):
    data = container_bytes()
    (h,) = struct.unpack_from("<Q", data)
    flipped = bytearray(data)
    flipped[8] = ord("[") ^ 0x55
    for bad, message in ((bytes(flipped), "not valid UTF-8 JSON|not an object"),
                         (struct.pack("<Q", 0) + data[8:], "header length 0"),
                         (struct.pack("<Q", 3_000_000) + data[8:], "header length 3000000"),
                         (struct.pack("<Q", len(data)) + data[8:], "runs past the end"),
                         (data + b"\0", "1 trailing bytes")):
        with pytest.raises(ContainerError, match=message):
            convert_bytes(tmp_path, bad)


def test_trit_byte_in_a_record_stops_conversion(tmp_path):
    data = bytearray(container_bytes())
    (h,) = struct.unpack_from("<Q", data)
    index = json.loads(data[8: 8 + h])["index"]
    offset = 8 + h + sum(e["b"] for e in index[: [e["k"] for e in index].index("five_value")])
    data[offset] = 250
    with pytest.raises(ContainerError, match="sign byte 250"):
        convert_bytes(tmp_path, bytes(data))


def test_pinned_artifact_mismatch_stops(tmp_path):
    from modeltools.convert import check_artifact
    config = read_config(DATA / "config.json")
    copy = tmp_path / "model.fermion"
    shutil.copy(DATA / "model.fermion", copy)
    check_artifact(config, copy)
    config["artifact"]["container_sha256"] = "0" * 64
    with pytest.raises(ConversionError, match="does not match config.json's artifact"):
        check_artifact(config, copy)


def test_release_pins_apply_to_the_release_name(tmp_path):
    from modeltools.convert import check_release_pins
    archive = tmp_path / "phonon-2.bps.tar.zst"
    archive.write_bytes(b"x" * 10)
    with pytest.raises(ConversionError, match="archive_bytes is 10, pins.json says 163516338"):
        check_release_pins(archive, DATA / "model.fermion", {}, {"archive_bytes": 163516338})
    check_release_pins(tmp_path / "phonon-2-tiny.bps.tar.zst", DATA / "model.fermion", {},
                       {"archive_bytes": 163516338})         # not the release: pins do not apply


def test_archive_with_links_or_missing_members(tmp_path):
    import io
    import tarfile

    import zstandard
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("model.fermion")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    archive = tmp_path / "bad.tar.zst"
    archive.write_bytes(zstandard.ZstdCompressor().compress(raw.getvalue()))
    with pytest.raises(ConversionError, match="not a regular file"):
        extract_archive(archive, tmp_path)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("config.json")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    archive.write_bytes(zstandard.ZstdCompressor().compress(raw.getvalue()))
    with pytest.raises(ConversionError, match="archive has no model.fermion"):
        extract_archive(archive, tmp_path)
    archive.write_bytes(b"not zstd at all")
    with pytest.raises(ConversionError, match="not a readable .tar.zst"):
        extract_archive(archive, tmp_path)


# ---------------------------------------------------------------------------------------------
# corrupt GGUF files: clear errors from the loader

def info_fields(data: bytes, name: str) -> dict:
    """Byte positions of a tensor info's type and offset fields (for patching)."""
    key = struct.pack("<Q", len(name)) + name.encode()
    pos = data.index(key) + len(key)
    n_dims = struct.unpack_from("<I", data, pos)[0]
    type_pos = pos + 4 + 8 * n_dims
    return {"dims": pos + 4, "type": type_pos, "offset": type_pos + 4}


def patched(data: bytes, pos: int, fmt: str, value) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, pos, value)
    return bytes(out)


def test_gguf_structural_corruption(tiny_gguf):
    data = tiny_gguf.read_bytes()
    f = GGUFFile(data)
    names = list(f.tensors)
    first, second = f.tensors[names[0]], f.tensors[names[1]]
    p1, p2 = info_fields(data, names[1]), info_fields(data, names[2])
    cases = [
        (b"GGUG" + data[4:], "bad magic"),
        (patched(data, 4, "<I", 2), "version 2"),
        (patched(data, 8, "<Q", 1 << 40), "tensor count"),
        (patched(data, 16, "<Q", 1 << 40), "metadata count"),
        (patched(data, p1["offset"], "<Q", (second.offset - first.offset) + 8), "not aligned"),
        (patched(data, p1["offset"], "<Q", 1 << 40), "run past the end"),
        (patched(data, p1["offset"], "<Q", 0), "overlap"),
        (patched(data, p2["type"], "<I", 14), "type 14 is not one this engine reads"),
        (patched(data, p1["dims"], "<Q", 0), "dimension is zero"),
    ]
    for bad, message in cases:
        with pytest.raises(GGUFError, match=message):
            load(bytearray(bad))


def test_gguf_truncated_anywhere(tiny_gguf):
    data = tiny_gguf.read_bytes()
    last_end = max(t.offset + t.nbytes for t in GGUFFile(data).tensors.values())
    # (bytes after the last tensor are alignment padding: cutting those is not corruption)
    for cut in list(range(0, 400, 7)) + [len(data) // 2, last_end - 1]:
        with pytest.raises(GGUFError):
            load(bytearray(data[:cut]))


def rewrite(src: Path, out: Path, set_kv=None, drop_kv=(), drop_tensor=(), retype_tensor=None):
    """Copy a GGUF through the gguf package with metadata or tensor changes."""
    import gguf
    f = GGUFFile.open(src)
    writer = gguf.GGUFWriter(str(out), f.metadata["general.architecture"])
    typemap = {"string": writer.add_string, "uint32": writer.add_uint32, "float32": writer.add_float32,
               "int32": writer.add_int32}
    for key, value in f.metadata.items():
        if key in drop_kv or key in ("general.architecture", "GGUF.version"):
            continue
        kind = f.types[key]
        if set_kv and key in set_kv:
            kind, value = set_kv[key]
        if kind.startswith("array"):
            writer.add_array(key, value)
        else:
            typemap[kind](key, value)
    for name, t in f.tensors.items():
        if name in drop_tensor:
            continue
        dtype = {"F32": np.float32, "F16": np.float16, "I8": np.int8}[t.dtype]
        arr = np.frombuffer(t.data, dtype).reshape(t.shape)
        if retype_tensor == name:
            arr = arr.astype(np.float32) if dtype != np.float32 else arr.astype(np.float16)
        if dtype == np.int8:
            writer.add_tensor(name, arr, raw_dtype=gguf.GGMLQuantizationType.I8)
        else:
            writer.add_tensor(name, arr)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    f.close()
    return out


@pytest.mark.parametrize("change, message", [
    (dict(set_kv={"parakeet.weights.format": ("string", "fv5-pair16-v1")}), "fv5-pair16-v1.*accepts 'fv5-b5x3t7-v1', 'int8-rows-v1'"),
    (dict(set_kv={"parakeet.weights.format": ("string", "int8-rows-v1")}), "'encoder.layers.0.*weight.q8' is missing"),
    (dict(set_kv={"parakeet.frontend.hop_length": ("uint32", 320)}), "time grid is 16000 Hz, hop 320"),
    (dict(set_kv={"parakeet.frontend.sample_rate": ("uint32", 8000)}), "time grid is 8000 Hz"),
    (dict(set_kv={"parakeet.blank_id": ("uint32", 3)}), "blank_id is 3"),
    (dict(set_kv={"parakeet.tdt.durations": ("array", [])}), "durations|element type"),
    (dict(set_kv={"parakeet.tdt.durations": ("array", [0, -1, 2, 3, 4])}), "negative duration"),
    (dict(set_kv={"parakeet.encoder.d_model": ("int32", 32)}), "d_model' is int32, expected uint32"),
    (dict(set_kv={"parakeet.tokenizer.pieces": ("array", ["a", "b"])}), "2 pieces"),
    (dict(drop_kv=("parakeet.notice",)), "'parakeet.notice' is missing"),
    (dict(drop_tensor=("joint.head.bias",)), "'joint.head.bias' is missing"),
    (dict(retype_tensor="joint.head.bias"), "'joint.head.bias' is F32, expected F16"),
    (dict(set_kv={"general.architecture": ("string", "llama")}), "architecture"),
])
def test_gguf_semantic_errors_name_the_key_or_tensor(tiny_gguf, tmp_path, change, message):
    if change.get("set_kv", {}).get("general.architecture"):
        data = tiny_gguf.read_bytes().replace(b"parakeet-tdt", b"llamallama12", 1)
        with pytest.raises(GGUFError, match=message):
            load(bytearray(data))
        return
    bad = rewrite(tiny_gguf, tmp_path / "bad.gguf", **change)
    with pytest.raises(GGUFError, match=message):
        load(bad)


def test_loader_accepts_a_gguf_package_copy(tiny_gguf, tmp_path):
    """The loader follows GGUF's rules, not this writer's layout: a rewrite by the gguf
    package (same content, its own ordering and padding) loads to the same tensors."""
    copy = rewrite(tiny_gguf, tmp_path / "copy.gguf")
    a, b = load(tiny_gguf), load(copy)
    try:
        assert fingerprint(a)["tensors"] == fingerprint(b)["tensors"]
    finally:
        a.close()
        b.close()


def test_loader_is_zero_copy_and_writable(tiny_gguf):
    model = load(tiny_gguf)
    try:
        t = model.tensor("joint.head.bias")
        assert not t.data.readonly            # private mapping: ctypes passes it without a copy
        assert t.data.obj is model.file.view.obj
    finally:
        model.close()


def test_general_architecture_chooses_the_family(tiny_gguf, monkeypatch):
    """engine/family.py: the file's general.architecture picks the package that validates it
    and builds its network; Engine runs any family through that seam alone. A stand-in family
    (every 80 ms frame louder than the clip's mean log-mel becomes one token) under another
    architecture name transcribes through the ordinary Engine."""
    import sys
    import types

    from engine import family
    from engine.parakeet_tdt import validate as parakeet_validate
    from engine.text import Token
    from engine.transcribe import Engine

    toy = types.ModuleType("toy_loudness_family")
    toy.ARCHITECTURE = "toy-loudness"

    def validate(f):
        model = parakeet_validate(f)             # the stand-in reads the same keys and tensors
        model.architecture = "toy-loudness"
        return model

    class Network:
        def __init__(self, executor, model):
            self.n_mels = model.dims.n_mels

        def encode(self, features, T, on_layer=None, cancelled=None):
            frames = [sum(features[m * T + t] for m in range(self.n_mels) for t in range(t0, min(T, t0 + 8)))
                      for t0 in range(0, T, 8)]
            return frames, len(frames)

        def decode(self, enc, T, cancelled=None):
            mean = sum(enc) / T
            return [Token(5, t, 1) for t in range(T) if enc[t] > mean]

    toy.validate, toy.Network = validate, Network
    monkeypatch.setitem(sys.modules, "toy_loudness_family", toy)
    monkeypatch.setitem(family.FAMILIES, "toy-loudness", "toy_loudness_family")
    data = bytearray(tiny_gguf.read_bytes().replace(b"parakeet-tdt", b"toy-loudness", 1))
    engine = Engine(family.load(data), "scalar", 1)
    assert type(engine.network) is Network
    samples = array("f", [0.0] * 8000 + [0.3 * ((i * 7919) % 200 - 100) / 100 for i in range(8000)])
    tokens = engine.transcribe(samples)["tokens"]
    assert tokens and all(t["id"] == 5 for t in tokens)
    assert min(t["frame"] for t in tokens) >= 5            # the silent first half makes no token
    with pytest.raises(GGUFError, match="'parakeet-tdt', 'toy-loudness'"):
        family.load(bytearray(tiny_gguf.read_bytes().replace(b"parakeet-tdt", b"llamallama12", 1)))
