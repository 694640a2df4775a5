"""What an adapter is, from its info (GPUAdapterInfo's vendor, architecture, device,
description): its name for people, and whether it is a CPU emulation (which would only be
slower than the wasm kernels beside it).
"""

from __future__ import annotations


CPU_EMULATIONS = ("swiftshader", "llvmpipe", "lavapipe")


def adapter_name(info: dict) -> str:
    """"google swiftshader", "nvidia ampere", ...: the adapter's vendor and architecture (else
    its description or device)."""
    words = [info.get("vendor", ""), info.get("architecture", "")]
    name = " ".join(w for w in words if w) or info.get("description", "") or info.get("device", "")
    return name or "an unnamed adapter"


def cpu_emulation(info: dict) -> str | None:
    """The CPU emulation an adapter is (SwiftShader, llvmpipe, lavapipe), else None."""
    text = " ".join(str(v) for v in info.values()).lower()
    return next((name for name in CPU_EMULATIONS if name in text), None)
