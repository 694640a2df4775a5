"""Host-side fv5-b5x3t7-v1 packing (numpy; used by the converter, tests and benchmarks).

Layout: docs/b5x3t7.md. The browser engine never packs: it only decodes, in C.

    codes [O][K] uint8 level codes 0..4 ({-hi, -lo, 0, +lo, +hi})
    -> panel codes [O/8][K/2][16]        (lane j: row 2p + (j >= 8), column 8*kb + j % 8)
    -> code vectors [O/8][T][16]         (three panel vectors per 7-bit code, base 5)
    -> stored vectors [O/8][7*(T//8) + T%8][16]  (eight codes in seven bytes)
"""

from __future__ import annotations

from engine.kernels import fv5_block_bytes

LEVELS = 5


def _check_codes(codes, np):
    if codes.ndim != 2:
        raise ValueError(f"codes must be 2-D (O, K), got shape {codes.shape}")
    O, K = codes.shape
    if O <= 0 or K <= 0 or O % 8 or K % 8:
        raise ValueError(f"codes shape ({O}, {K}): O and K must be positive multiples of 8")
    if codes.dtype != np.uint8:
        raise ValueError(f"codes must be uint8, got {codes.dtype}")
    if codes.size and int(codes.max()) >= LEVELS:
        raise ValueError(f"level codes must be 0..4, found {int(codes.max())}")
    return O, K


def panel_codes(codes):
    """(O, K) level codes -> (O/8, K/2, 16) codes in panel order."""
    import numpy as np
    O, K = _check_codes(np.asarray(codes), np)
    # [block, row pair p, parity, kb, lane] -> [block, kb, p, parity, lane]
    c = np.asarray(codes).reshape(O // 8, 4, 2, K // 8, 8)
    return c.transpose(0, 3, 1, 2, 4).reshape(O // 8, K // 2, 16)


def pack_b5x3t7(codes) -> bytes:
    """Pack (O, K) uint8 level codes 0..4 into the bytes of the `.fv5t7` tensor
    ([O/8][fv5_block_bytes(K)], blocks in row-block order)."""
    import numpy as np
    codes = np.asarray(codes)
    O, K = _check_codes(codes, np)
    panel = panel_codes(codes).astype(np.uint16)            # (B, V, 16), V = K/2
    blocks, V = panel.shape[0], panel.shape[1]
    T = (V + 2) // 3
    padded = np.zeros((blocks, 3 * T, 16), np.uint16)       # vectors >= K/2 count as code 0
    padded[:, :V] = panel
    code = padded[:, 0::3] + 5 * padded[:, 1::3] + 25 * padded[:, 2::3]   # (B, T, 16) < 125
    full = T // 8
    grouped = code[:, : 8 * full].reshape(blocks, full, 8, 16)
    bit_m = (grouped[:, :, 7:8, :] >> np.arange(7, dtype=np.uint16)[None, None, :, None]) & 1
    stored_full = grouped[:, :, :7, :] | (bit_m << 7)       # (B, full, 7, 16)
    stored = np.concatenate(
        [stored_full.reshape(blocks, 7 * full, 16), code[:, 8 * full:]], axis=1).astype(np.uint8)
    assert stored.shape[1] * 16 == fv5_block_bytes(K)
    return stored.tobytes()


def unpack_b5x3t7(packed, O: int, K: int):
    """Inverse of pack_b5x3t7: bytes -> (O, K) uint8 level codes (raises on corrupt codes)."""
    import numpy as np
    if O <= 0 or K <= 0 or O % 8 or K % 8:
        raise ValueError(f"shape ({O}, {K}): O and K must be positive multiples of 8")
    per_block = fv5_block_bytes(K)
    buf = np.frombuffer(bytes(packed), np.uint8)
    if buf.size != (O // 8) * per_block:
        raise ValueError(f"packed size {buf.size} != {(O // 8) * per_block} for ({O}, {K})")
    blocks, V = O // 8, K // 2
    T = (V + 2) // 3
    full = T // 8
    stored = buf.reshape(blocks, per_block // 16, 16).astype(np.uint16)
    head = stored[:, : 7 * full].reshape(blocks, full, 7, 16)
    code7 = ((head >> 7) << np.arange(7, dtype=np.uint16)[None, None, :, None]).sum(axis=2)
    codes = np.concatenate([head & 0x7F, code7[:, :, None, :]], axis=2).reshape(blocks, 8 * full, 16)
    codes = np.concatenate([codes, stored[:, 7 * full:]], axis=1)          # (B, T, 16)
    if codes.size and int(codes.max()) >= 125:
        raise ValueError("corrupt packed data: a code vector lane >= 125")
    digits = np.stack([codes % 5, (codes // 5) % 5, codes // 25], axis=2).reshape(blocks, 3 * T, 16)
    if np.any(digits[:, V:]):
        raise ValueError("corrupt packed data: non-zero padding digits")
    panel = digits[:, :V].reshape(blocks, K // 8, 4, 2, 8)                 # [B, kb, p, parity, lane]
    return panel.transpose(0, 2, 3, 1, 4).reshape(O, K).astype(np.uint8)
