"""The parakeet-tdt family (engine/family.py): NVIDIA's Parakeet-TDT graph - FastConformer
encoder, LSTM prediction network, TDT joint - as Phonon-2 (five-value linears) and NVIDIA's
checkpoints converted with int8 rows (modeltools/parakeet_hf.py) store it.

    layout.py      tensor names, kinds and shapes from the dimensions
    model_file.py  metadata keys and validate(): a GGUF -> ModelFile
    encoder.py     subsampling + conformer layers on the C kernels (threads / kernel workers)
    decoder.py     prediction network, joint, TDT greedy decoding
"""

from __future__ import annotations

from .decoder import Joint, PredictionNetwork, tdt_greedy
from .encoder import Encoder
from .model_file import ARCHITECTURE, ModelFile, validate


class Network:
    """The family's network for one model on one set of kernels: encoder + TDT decoder."""

    def __init__(self, k, model: ModelFile, team=None):
        self.k, self.model = k, model
        self.encoder = Encoder(k, model, team)
        self.prediction = PredictionNetwork(k, model)
        self.joint = Joint(k, model)
        self.max_symbols = model.file.get("parakeet.tdt.max_symbols_per_step", "uint32")

    def encode(self, features, T: int, float_acts: bool = False, on_layer=None, cancelled=None) -> tuple:
        """log-mel [n_mels][T] -> (encoder output [T'][d_model] floats, T' = ceil(T / 8))."""
        return self.encoder(features, T, float_acts, on_layer, cancelled=cancelled)

    def decode(self, enc, T: int, float_acts: bool = False, cancelled=None) -> list:
        """Encoder output [T][d_model] -> TDT greedy tokens (engine.text.Token)."""
        return tdt_greedy(self.k, self.prediction, self.joint, enc, T, self.model.durations,
                          self.max_symbols, float_acts, cancelled=cancelled)


__all__ = ["ARCHITECTURE", "ModelFile", "Network", "validate"]
