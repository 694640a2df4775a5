"""A WebGPU device for the harness's GPU benchmarks (bench_webgpu, webgpu_cost, webgpu_versus,
webgpu_estimates) and the models they encode: wgpu's high-performance adapter, named, with its
timestamp queries where it has them; NoAdapter says why there is none."""

from __future__ import annotations

from pathlib import Path

from engine.audio import load_audio
from engine.executors.webgpu.adapter import adapter_name, cpu_emulation
from engine.kernels import Kernels

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "models" / "phonon-small.gguf"
WAV = ROOT / "samples" / "two-commands.wav"
SIZES = ("default", "full", "tiny")
ADAPTER_KEYS = ("vendor", "architecture", "device", "description", "adapter_type", "backend_type")


class NoAdapter(RuntimeError):
    """No wgpu, or no WebGPU adapter on this machine."""


def open_device():
    """(device, adapter info as a dict) of wgpu's high-performance adapter, with the
    "timestamp-query" feature where the adapter has it (per-kernel GPU times:
    harness/webgpu_profile.py); NoAdapter says why not."""
    try:
        import wgpu
    except ImportError as e:
        raise NoAdapter(f"PyPI wgpu is not installed ({e}; build.py setup installs it)") from None
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as e:         # noqa: BLE001 - no Vulkan loader or driver
        raise NoAdapter(f"no WebGPU adapter: {e} (build.py setup installs mesa-vulkan-drivers)") from None
    if adapter is None:
        raise NoAdapter("no WebGPU adapter (build.py setup installs mesa-vulkan-drivers: lavapipe)")
    info = {key: str(adapter.info.get(key, "")) for key in ADAPTER_KEYS}
    features = ["timestamp-query"] if "timestamp-query" in adapter.features else []
    return adapter.request_device_sync(required_features=features), info


def model_and_audio(size: str, seconds: float = 10) -> tuple:
    """(model path, audio) of a --size: "full" the full-size synthetic model on `seconds` of
    speech-like audio, "default" models/phonon-small.gguf on samples/two-commands.wav, "tiny"
    the tiny synthetic model on the same sample."""
    if size == "full":
        from harness.bench_e2e import full_model, speechlike
        return full_model(), speechlike(seconds)
    audio = load_audio(Kernels("scalar"), WAV.read_bytes())
    if size == "tiny":
        from harness.bench_e2e import tiny_model
        return tiny_model(), audio
    return DEFAULT_MODEL, audio


def describe(info: dict) -> str:
    """"llvmpipe (LLVM 15.0.6, 256 bits), Mesa 22.3.6 (LLVM 15.0.6), Vulkan, type CPU" and, on an
    emulation, what it is."""
    name = info.get("device") or adapter_name(info)
    parts = [name, info.get("description"), info.get("backend_type"),
             f"adapter type {info['adapter_type']}" if info.get("adapter_type") else ""]
    text = ", ".join(p for p in parts if p)
    emulation = cpu_emulation(info)
    if emulation:
        text += (f" - a CPU emulation ({emulation}): the GPU figures are this CPU running the shaders, "
                 "not a GPU's")
    return text
