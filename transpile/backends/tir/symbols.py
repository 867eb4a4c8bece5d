"""Which kernels a compiled caller object calls, under which symbols: the undefined symbols of an ELF object.

TVM compiles `T.call_cpacked("k", ...)` in a unit without `k` into a call of an external function
`k`, but it looks for an existing declaration under the FFI name `__tvm_ffi_k` and so declares `k`
again at every further call site; LLVM renames each repeat `k.1`, `k.49`, ... So the symbols a
caller object needs for kernel `k` are `k` and any `k.<n>`; the library resolves each to `k`'s FFI
symbol (build.program_c).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from ...errors import TranspileError

__all__ = ["undefined_symbols", "kernel_calls"]

_SHT_SYMTAB = 2
_SHN_UNDEF = 0
_REPEAT = re.compile(r"(?P<base>.+?)(?:\.\d+)*")


def undefined_symbols(path: Path) -> set[str]:
    """The names an ELF relocatable object refers to but does not define."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise TranspileError(f"{path} is not an ELF object: the tir backend links ELF objects only")
    wide = data[4] == 2  # ELFCLASS64
    order = "<" if data[5] == 1 else ">"
    if wide:
        (shoff,) = struct.unpack_from(order + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
        section, symbol = order + "IIQQQQIIQQ", order + "IBBHQQ"
    else:
        (shoff,) = struct.unpack_from(order + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(order + "HH", data, 0x2E)
        section, symbol = order + "IIIIIIIIII", order + "IIIBBH"
    sections = [struct.unpack_from(section, data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != _SHT_SYMTAB or not entsize:
            continue
        strings_offset = sections[link][4]
        for start in range(offset, offset + size, entsize):
            fields = struct.unpack_from(symbol, data, start)
            name_offset, shndx = fields[0], (fields[3] if wide else fields[5])
            if shndx == _SHN_UNDEF and name_offset:
                end = data.index(b"\0", strings_offset + name_offset)
                names.add(data[strings_offset + name_offset : end].decode("utf-8", "replace"))
    return names


def kernel_calls(symbols, kernels) -> dict[str, str]:
    """Symbol -> kernel name, for every symbol that names one of `kernels`, possibly with LLVM's `.<n>` suffixes."""
    calls = {}
    for name in symbols:
        base = _REPEAT.fullmatch(name).group("base")
        if base in kernels:
            calls[name] = base
    return dict(sorted(calls.items()))
