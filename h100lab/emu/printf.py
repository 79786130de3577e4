"""Device-side ``printf``: NVRTC lowers ``printf(fmt, ...)`` to ``vprintf(fmt, args)``, where ``args`` is a
buffer in the thread's local memory holding each argument at its natural alignment — integers of 4 bytes
(8 with ``l``/``ll``), ``double`` for every floating conversion (C's default argument promotion), 8-byte
pointers for ``%s`` and ``%p`` (CUDA C++ Programming Guide §"Formatted Output").
"""
from __future__ import annotations

import re

import numpy as np

__all__ = ["format_printf"]

_SPEC = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?(hh|h|ll|l|z|j|t|L)?([diouxXeEfFgGaAcspn%])")


def _cstring(launch, w, addr: int, limit: int = 4096) -> str:
    from .lower_mem import load
    out = bytearray()
    a = addr
    while len(out) < limit:
        b = int(load(w, "generic", np.array([a], np.uint64), np.array([0]), 1, "printf string")[0, 0])
        if b == 0:
            break
        out.append(b)
        a += 1
    return out.decode(errors="replace")


def format_printf(launch, w, lane: int, fmt_addr: int, buf_addr: int) -> str:
    """The text one lane's ``printf`` prints."""
    from .lower_mem import load

    fmt = _cstring(launch, w, fmt_addr)
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        pos = -(-pos // n) * n
        raw = load(w, "generic", np.array([buf_addr + pos], np.uint64), np.array([lane]), n, "printf arguments")
        pos += n
        return raw.reshape(-1).tobytes()

    def repl(m):
        flags, wd, prec, length, conv = m.groups()
        if conv == "%":
            return "%"
        if conv in "diouxXc":
            n = 8 if length in ("l", "ll", "z", "j", "t") else 4
            v = int.from_bytes(take(n), "little", signed=conv in "di")
            if conv == "c":
                return chr(v & 0xFF)
            return ("%" + (flags or "") + (wd or "") + ("." + prec if prec else "") + conv) % v
        if conv in "eEfFgGaA":
            v = float(np.frombuffer(take(8), np.float64)[0])
            c = conv if conv not in "aA" else "e"
            return ("%" + (flags or "") + (wd or "") + ("." + prec if prec else "") + c) % v
        if conv == "s":
            p = int.from_bytes(take(8), "little")
            return _cstring(launch, w, p) if p else "(null)"
        if conv == "p":
            return f"0x{int.from_bytes(take(8), 'little'):x}"
        return m.group(0)

    return _SPEC.sub(repl, fmt)
