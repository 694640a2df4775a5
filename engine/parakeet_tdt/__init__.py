"""The parakeet-tdt family (engine/family.py): NVIDIA's Parakeet-TDT graph - FastConformer
encoder, LSTM prediction network, TDT joint - as Phonon-2 (five-value linears) and NVIDIA's
checkpoints converted with int8 rows (modeltools/parakeet_hf.py) store it.

    layout.py      tensor names, kinds and shapes from the dimensions
    model_file.py  metadata keys and validate(): a GGUF -> ModelFile
    encoder.py     subsampling + conformer layers, as blocks asking the engine's executor
    decoder.py     prediction network, joint, TDT greedy decoding

The blocks declare the computation; the executor (engine/executors/) decides how it runs.
"""

from __future__ import annotations

from .decoder import TdtDecoding
from .encoder import Encoder
from .model_file import ARCHITECTURE, ModelFile, validate


class Network:
    """The family's network for one model on one set of kernels: encoder + TDT decoder."""

    def __init__(self, ex, model: ModelFile):
        """ex: the engine's executor (engine/executors/): how the work runs, not what it is."""
        self.k, self.model = ex.k, model
        self.encoder = Encoder(ex, model)
        self.decoding = TdtDecoding(ex.unsplit, model)

    def encode(self, features, T: int, on_layer=None, cancelled=None) -> tuple:
        """log-mel [n_mels][T] -> (encoder output [T'][d_model] floats, T' = ceil(T / 8))."""
        return self.encoder(features, T, on_layer, cancelled=cancelled)

    def decode(self, enc, T: int, cancelled=None) -> list:
        """Encoder output [T][d_model] -> TDT greedy tokens (engine.text.Token)."""
        return self.decoding(enc, T, cancelled=cancelled)


__all__ = ["ARCHITECTURE", "ModelFile", "Network", "validate"]
