"""The Phonon-2 family's tensors: names, kinds and shapes, from a handful of dimensions.

Names are transformers' `ParakeetForTDT` state-dict names (docs/gguf-layout.md), the names the
release's `model.fermion` uses. Standard library only: the converter, the synthetic-model
generator and the loader (natively and in Pyodide) all read this one table.

Record kinds: fv5 (five-value weights: the encoder's linears; the container spells the kind
"five_value", modeltools/fermion.py), int6, int8, fp16.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Dims:
    """Dimensions of a Parakeet-TDT model (Phonon-2: the defaults)."""

    d_model: int = 1024
    n_layers: int = 24
    n_heads: int = 8
    ff_dim: int = 4096
    conv_kernel: int = 9
    sub_channels: int = 256
    n_mels: int = 128
    pred_hidden: int = 640
    pred_layers: int = 2
    joint_hidden: int = 640
    vocab_size: int = 8192          # tokens, blank excluded (blank id = vocab_size)
    n_durations: int = 5            # TDT durations 0..n-1

    @property
    def sub_freq(self) -> int:
        """Mel bins after three stride-2 convs (128 -> 16)."""
        f = self.n_mels
        for _ in range(3):
            f = (f - 1) // 2 + 1
        return f

    def as_dict(self) -> dict:
        return asdict(self)

    def check(self):
        for name, value in self.as_dict().items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"dimension {name} must be a positive int, got {value!r}")
            limit = MAX_LAYERS if name in ("n_layers", "pred_layers") else MAX_DIM
            if value > limit:
                raise ValueError(f"dimension {name} = {value} is over the limit {limit}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not a multiple of n_heads {self.n_heads}")
        for name in ("d_model", "ff_dim"):
            if getattr(self, name) % 8:
                raise ValueError(f"{name} {getattr(self, name)} must be a multiple of 8 (fv5 blocks)")


PHONON2 = Dims()
MAX_DIM = 65536        # the kernels' limit (kernels/common.h PK_MAX_DIM)
MAX_LAYERS = 256

# The 11 integer tables of the release: the subsampling's pointwise convs and output linear,
# the prediction network and the joint's matrices. Which ones are int6 or int8 in the release
# is not known; the converter accepts either kind for each, and the synthetic models use both.
INT_TABLES = (
    "encoder.subsampling.layers.3.weight",
    "encoder.subsampling.layers.6.weight",
    "encoder.subsampling.linear.weight",
    "decoder.embedding.weight",
    "decoder.lstm.weight_ih_l0", "decoder.lstm.weight_hh_l0",
    "decoder.lstm.weight_ih_l1", "decoder.lstm.weight_hh_l1",
    "decoder.decoder_projector.weight",
    "encoder_projector.weight",
    "joint.head.weight",
)


def fv5_linears(d: Dims, layer: int) -> list:
    """(tensor name, [rows, cols]) of one conformer layer's 11 fv5 linears."""
    p = f"encoder.layers.{layer}."
    D, F = d.d_model, d.ff_dim
    return [
        (p + "feed_forward1.linear1.weight", [F, D]),
        (p + "feed_forward1.linear2.weight", [D, F]),
        (p + "self_attn.q_proj.weight", [D, D]),
        (p + "self_attn.k_proj.weight", [D, D]),
        (p + "self_attn.v_proj.weight", [D, D]),
        (p + "self_attn.o_proj.weight", [D, D]),
        (p + "self_attn.relative_k_proj.weight", [D, D]),
        (p + "conv.pointwise_conv1.weight", [2 * D, D]),
        (p + "conv.pointwise_conv2.weight", [D, D]),
        (p + "feed_forward2.linear1.weight", [F, D]),
        (p + "feed_forward2.linear2.weight", [D, F]),
    ]


def layer_float_tensors(d: Dims, layer: int) -> list:
    """(tensor name, shape) of one layer's float16 records, in container order."""
    p = f"encoder.layers.{layer}."
    D, H = d.d_model, d.n_heads
    out = []
    for norm in ("norm_feed_forward1", "norm_self_att", "norm_conv", "norm_feed_forward2", "norm_out"):
        out += [(p + norm + ".weight", [D]), (p + norm + ".bias", [D])]
    out += [(p + "self_attn.bias_u", [H, D // H]), (p + "self_attn.bias_v", [H, D // H])]
    out += [(p + "conv.depthwise_conv.weight", [D, 1, d.conv_kernel])]
    out += [(p + f"conv.norm.{k}", [D]) for k in ("weight", "bias", "running_mean", "running_var")]
    out += [(p + "conv.norm.num_batches_tracked", [])]
    return out


def records(d: Dims, int_kinds: dict | None = None) -> list:
    """The container's records in order: (record name, kind, shape). An fv5 record's name lacks
    the ".weight" its tensor has. `int_kinds` maps int-table names to int6/int8
    (default int8)."""
    d.check()
    int_kinds = int_kinds or {}
    C, D, P, J = d.sub_channels, d.d_model, d.pred_hidden, d.joint_hidden
    V = d.vocab_size

    def table(name, shape):
        return (name, int_kinds.get(name, "int8"), shape)

    out = [
        ("encoder.subsampling.layers.0.weight", "fp16", [C, 1, 3, 3]),
        ("encoder.subsampling.layers.0.bias", "fp16", [C]),
        ("encoder.subsampling.layers.2.weight", "fp16", [C, 1, 3, 3]),
        ("encoder.subsampling.layers.2.bias", "fp16", [C]),
        table("encoder.subsampling.layers.3.weight", [C, C, 1, 1]),
        ("encoder.subsampling.layers.3.bias", "fp16", [C]),
        ("encoder.subsampling.layers.5.weight", "fp16", [C, 1, 3, 3]),
        ("encoder.subsampling.layers.5.bias", "fp16", [C]),
        table("encoder.subsampling.layers.6.weight", [C, C, 1, 1]),
        ("encoder.subsampling.layers.6.bias", "fp16", [C]),
        table("encoder.subsampling.linear.weight", [D, C * d.sub_freq]),
        ("encoder.subsampling.linear.bias", "fp16", [D]),
    ]
    for layer in range(d.n_layers):
        out += [(name[: -len(".weight")], "fv5", shape) for name, shape in fv5_linears(d, layer)]
        out += [(name, "fp16", shape) for name, shape in layer_float_tensors(d, layer)]
    out += [table("decoder.embedding.weight", [V + 1, P])]
    for layer in range(d.pred_layers):
        out += [table(f"decoder.lstm.weight_ih_l{layer}", [4 * P, P]),
                table(f"decoder.lstm.weight_hh_l{layer}", [4 * P, P]),
                (f"decoder.lstm.bias_ih_l{layer}", "fp16", [4 * P]),
                (f"decoder.lstm.bias_hh_l{layer}", "fp16", [4 * P])]
    out += [table("decoder.decoder_projector.weight", [J, P]), ("decoder.decoder_projector.bias", "fp16", [J]),
            table("encoder_projector.weight", [J, D]), ("encoder_projector.bias", "fp16", [J]),
            table("joint.head.weight", [V + 1 + d.n_durations, J]),
            ("joint.head.bias", "fp16", [V + 1 + d.n_durations])]
    return out


def tensor_name(record_name: str, kind: str) -> str:
    """The state-dict name of a record (fv5 records get ".weight")."""
    return record_name + ".weight" if kind == "fv5" else record_name


def stored_shape_fits(shape: list, expected: list) -> bool:
    """A record's stored shape against the layout's: equal, or a 1x1 convolution's weight
    stored 2-D ([out, in] for [out, in, 1, 1]: the same values in the same order). The
    container spec says pointwise-conv weights are stored 2-D, so the release may store the
    subsampling's pointwise tables either way."""
    return list(shape) == list(expected) or (
        len(expected) == 4 and list(expected[2:]) == [1, 1] and list(shape) == list(expected[:2]))


def layout_shapes(dims: Dims) -> dict:
    """{record name: the layout's shape} (the shape the converter writes to the GGUF)."""
    return {name: list(shape) for name, _, shape in records(dims)}


def dims_from_records(index: list) -> Dims:
    """Recover Dims from a container index ([{"n", "k", "shape"}, ...]) and check that the
    index holds exactly the family's records for those dims (names, kinds, shapes; the
    order is not checked: the release's order is not known here)."""
    shape = {r["n"]: list(r["shape"]) for r in index}

    def need(name, rank=2):
        if name not in shape:
            raise ValueError(f"container has no record {name!r}")
        if len(shape[name]) < rank:
            raise ValueError(f"record {name!r} has shape {shape[name]}, which this layout cannot use")
        return shape[name]

    n_layers = 0
    while f"encoder.layers.{n_layers}.feed_forward1.linear1" in shape and n_layers <= MAX_LAYERS:
        n_layers += 1
    if n_layers == 0:
        raise ValueError("container has no encoder layers (no encoder.layers.0.feed_forward1.linear1)")
    ff_dim, d_model = need("encoder.layers.0.feed_forward1.linear1")
    n_heads = need("encoder.layers.0.self_attn.bias_u")[0]
    conv_kernel = need("encoder.layers.0.conv.depthwise_conv.weight", rank=3)[2]
    sub_channels = need("encoder.subsampling.layers.0.weight")[0]
    sub_in = need("encoder.subsampling.linear.weight")[1]
    pred_hidden = need("decoder.embedding.weight")[1]
    vocab_size = need("decoder.embedding.weight")[0] - 1
    pred_layers = 0
    while f"decoder.lstm.weight_ih_l{pred_layers}" in shape and pred_layers <= MAX_LAYERS:
        pred_layers += 1
    joint_hidden = need("joint.head.weight")[1]
    n_durations = need("joint.head.weight")[0] - vocab_size - 1
    if sub_channels <= 0 or sub_in % sub_channels:
        raise ValueError(f"encoder.subsampling.linear.weight width {sub_in} is not a multiple of "
                         f"the {sub_channels} subsampling channels")
    freq = sub_in // sub_channels        # mel bins after three stride-2 convs: ceil(n_mels / 8)
    n_mels = 128 if Dims(n_mels=128).sub_freq == freq else 8 * freq   # the release has 128
    dims = Dims(d_model=d_model, n_layers=n_layers, n_heads=n_heads, ff_dim=ff_dim,
                conv_kernel=conv_kernel, sub_channels=sub_channels, n_mels=n_mels,
                pred_hidden=pred_hidden, pred_layers=pred_layers, joint_hidden=joint_hidden,
                vocab_size=vocab_size, n_durations=n_durations)
    dims.check()
    expected = {name: (kind, shp) for name, kind, shp in records(dims)}
    got = {r["n"]: (r["k"], list(r["shape"])) for r in index}
    missing = [n for n in expected if n not in got]
    unexpected = [n for n in got if n not in expected]
    if missing or unexpected:
        raise ValueError(f"container records do not match the Parakeet-TDT layout for {dims}: "
                         f"missing {missing[:3]}{'...' if len(missing) > 3 else ''}, "
                         f"unexpected {unexpected[:3]}{'...' if len(unexpected) > 3 else ''}")
    for name, (ekind, eshape) in expected.items():
        kind, shp = got[name]
        kinds_ok = kind == ekind or (ekind == "int8" and kind in ("int6", "int8"))
        if not kinds_ok or not stored_shape_fits(shp, eshape):
            raise ValueError(f"record {name!r} is {kind} {shp}; the layout expects "
                             f"{'int6/int8' if ekind == 'int8' else ekind} {eshape}")
    return dims
