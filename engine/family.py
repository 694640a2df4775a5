"""Model families: what `general.architecture` in a GGUF selects, and what the engine asks of it.

A family is a package under engine/ (engine/parakeet_tdt/ is the only one so far) that exports:

    ARCHITECTURE = "parakeet-tdt"            # the general.architecture it reads
    validate(f: GGUFFile) -> model           # checks metadata and every tensor; GGUFError if not
    Network(executor, model)                 # the network, run by an executor (engine/executors/):
        .encode(features, T, on_layer, cancelled) -> (encoder output, frames)
        .decode(encoder output, frames, cancelled) -> [engine.text.Token]

and whose `model` carries .file (the GGUFFile), .name, .notice, .vocabulary and .frontend()
(the log-mel settings and tables; engine/audio.py's time grid is shared by all families).
Within a family, a weights-format key picks how its linears are stored
(parakeet.weights.format: five-value or int8 rows). Adding a family: a new package, one line in
FAMILIES, and its converter in modeltools/ (ARCHITECTURE.md). Standard library only.
"""

from __future__ import annotations

import importlib
import os

from .gguf_file import GGUFError, GGUFFile

FAMILIES = {"parakeet-tdt": "engine.parakeet_tdt"}       # general.architecture -> package


class Cancelled(Exception):
    """A decode noticed cancel() between encoder layers or decode steps."""


def family(architecture: str):
    """The package that runs `architecture`; GGUFError naming the known ones otherwise."""
    if architecture not in FAMILIES:
        raise GGUFError(f"general.architecture is {architecture!r}; this engine runs "
                        f"{', '.join(map(repr, FAMILIES))}")
    return importlib.import_module(FAMILIES[architecture])


def load(source):
    """Open (a path) or wrap (a buffer) a GGUF and validate it as a model of its family."""
    f = GGUFFile.open(source) if isinstance(source, (str, os.PathLike)) else GGUFFile(source)
    try:
        return family(f.get("general.architecture", "string")).validate(f)
    except GGUFError:
        f.close()
        raise


def network(model, executor):
    """The family network for a loaded model on an executor (engine.transcribe.Engine builds one)."""
    return family(model.architecture).Network(executor, model)


def fingerprint(model) -> dict:
    """sha256 of every tensor (dtype, shape, bytes) and of the metadata, to compare what two
    runtimes loaded. Standard library only."""
    import hashlib
    import json
    tensors = {}
    for name, t in model.file.tensors.items():
        h = hashlib.sha256(f"{t.dtype}{list(t.shape)}".encode())
        h.update(t.data)
        tensors[name] = h.hexdigest()
    meta = json.dumps({k: model.file.metadata[k] for k in sorted(model.file.metadata)},
                      sort_keys=True, ensure_ascii=False)
    return {"metadata": hashlib.sha256(meta.encode()).hexdigest(), "tensors": tensors,
            "dims": model.dims.as_dict()}
