"""What an adapter is, from its info (GPUAdapterInfo's vendor, architecture, device,
description): its name for people, whether it is a CPU emulation (which would only be
slower than the wasm kernels beside it), and whether its GPU multiplies packed int8 in one
instruction.
"""

from __future__ import annotations


CPU_EMULATIONS = ("swiftshader", "llvmpipe", "lavapipe")

# Vendors whose GPUs have no packed int8 dot instruction (Metal has none): there the browser's
# WGSL compiler replaces dot4I8Packed by a function that unpacks both operands for every
# product, while the GEMM's plain variant (kernels/webgpu/dot4_plain.wgsl) unpacks each word
# once per column word: 308 operations for the sub-tile's 32 products instead of about 480.
NO_PACKED_DOT_VENDORS = ("apple",)


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


def packed_dot_in_hardware(info: dict) -> bool:
    """False for an adapter whose vendor (GPUAdapterInfo.vendor) is known to have no packed
    int8 dot instruction; True otherwise (including an adapter that says nothing)."""
    return str(info.get("vendor", "")).lower() not in NO_PACKED_DOT_VENDORS
