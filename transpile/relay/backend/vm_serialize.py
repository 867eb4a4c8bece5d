"""Saving and loading a VM Executable, and its late-bound constants (TVM's Executable.save/load_exec).

An executable's code is its Relay program: the module's text with every non-scalar constant
printed as `meta[relay.Constant][i]`, and that constant pool stored beside it as tensors:

    b"TRANSPILE-VM-CODE\\n" | u64 header length | header (JSON: text, pool size, late-bound
    indices, backend) | the pool's tensors that are not late-bound, in TVM's parameter format
    (names "const_<i>")

Late-bound constants (TVM's move_late_bound_consts / get_late_bound_consts) are the pool entries of
at least `byte_limit` bytes; from then on the code leaves them out and an executable loaded from
that code runs once they are supplied again (load_late_bound_consts / ..._from_map).
"""

from __future__ import annotations

import json
import struct

import numpy as np

from ...errors import TranspileError
from ..params import load_param_dict, save_param_dict
from .runtime_module import Module, register_loader

__all__ = ["CODE_MAGIC", "constant_pool", "encode_code", "decode_code", "LateBoundConstantsError", "executable_module"]

CODE_MAGIC = b"TRANSPILE-VM-CODE\n"
_LENGTH = struct.Struct("<Q")
EXECUTABLE_TYPE_KEY = "VMExecutable"


class LateBoundConstantsError(TranspileError):
    """Late-bound constants that are missing, or a file/map that does not supply them."""


def constant_name(index: int) -> str:
    return f"const_{index}"


def constant_pool(module) -> tuple[str, list[np.ndarray]]:
    """The module's text without constant data, and its constants in `meta[relay.Constant][i]` order."""
    from ..deep import run_deep
    from ..printer import VERSION_HEADER, _body_text
    from ..printer.exprs import Printer

    def render():
        printer = Printer(show_types=False)
        body = _body_text(printer, module)
        if printer.meta.ref_sizes:
            kinds = ", ".join(sorted(printer.meta.ref_sizes))
            raise TranspileError(f"cannot save a VM executable whose program holds opaque metadata objects ({kinds})")
        return VERSION_HEADER + "\n" + body, [np.asarray(c.data) for c in printer.meta.constants]

    return run_deep(render)


def program_of(text: str, constants: list):
    """The module the code describes (every constant present)."""
    from ..parser import parse

    return parse(text, source_name="vm_executable", init_meta_table={"relay.Constant": list(constants)})


def encode_code(text: str, constants: list, late_bound: set[int], backend: str) -> bytes:
    header = {
        "format": 1,
        "text": text,
        "constants": len(constants),
        "late_bound": sorted(late_bound),
        "backend": backend,
    }
    header_bytes = json.dumps(header).encode()
    kept = {constant_name(i): c for i, c in enumerate(constants) if i not in late_bound}
    return CODE_MAGIC + _LENGTH.pack(len(header_bytes)) + header_bytes + save_param_dict(kept)


def decode_code(code) -> tuple[str, list, str]:
    """(text, constants with None for each late-bound one, backend) of bytes `encode_code` wrote."""
    code = bytes(code)
    if not code.startswith(CODE_MAGIC):
        raise TranspileError("the bytes are not a VM executable saved by transpile's Executable.save()")
    start = len(CODE_MAGIC)
    try:
        (length,) = _LENGTH.unpack_from(code, start)
        header = json.loads(code[start + _LENGTH.size : start + _LENGTH.size + length])
        count, text, backend = int(header["constants"]), str(header["text"]), str(header["backend"])
        late_bound = {int(i) for i in header["late_bound"]}
    except (struct.error, ValueError, KeyError, TypeError) as exc:
        raise TranspileError(f"the saved VM executable is damaged: {exc}") from None
    stored = load_param_dict(code[start + _LENGTH.size + length :], "the saved VM executable")
    constants = []
    for index in range(count):
        value = stored.get(constant_name(index))
        if value is None and index not in late_bound:
            raise TranspileError(f"the saved VM executable lacks its constant {constant_name(index)}")
        constants.append(value)
    return text, constants, backend


def late_bound_map(constants: list, byte_limit: int) -> dict[str, np.ndarray]:
    """The constants of at least `byte_limit` bytes, by name."""
    return {constant_name(i): c for i, c in enumerate(constants) if c is not None and c.nbytes >= int(byte_limit)}


def fill_late_bound(constants: list, supplied: dict, where: str) -> list:
    """`constants` with the missing entries taken from `supplied` ({name: array})."""
    filled = list(constants)
    for name, value in supplied.items():
        index = _index_of(name, len(constants), where)
        filled[index] = np.asarray(value)
    missing = [constant_name(i) for i, c in enumerate(filled) if c is None]
    if missing:
        raise LateBoundConstantsError(f"{where} does not supply the late-bound constant(s) {', '.join(missing)}")
    return filled


def _index_of(name, count: int, where: str) -> int:
    prefix = "const_"
    if isinstance(name, str) and name.startswith(prefix) and name[len(prefix) :].isdigit():
        index = int(name[len(prefix) :])
        if index < count:
            return index
    raise LateBoundConstantsError(f"{where} names a constant {name!r} the executable does not have")


def read_constants_file(path) -> dict:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise LateBoundConstantsError(f"cannot read late-bound constants from {path}: {exc.strerror}") from None
    return load_param_dict(data, str(path))


def write_constants_file(path, constants: dict) -> None:
    with open(path, "wb") as handle:
        handle.write(save_param_dict(constants))


def executable_module(exe) -> Module:
    """The runtime module of an Executable (TVM's `exe.mod`): its packed functions and export."""
    functions = {
        "save": exe.code,
        "get_lib": lambda: exe.lib,
        "get_bytecode": lambda: exe.bytecode,
        "get_constants": lambda: exe.constants,
        "get_function_arity": exe.get_function_arity,
        "get_function_param_name": lambda name, index: exe.get_function_params(name)[index],
        "move_late_bound_consts": exe.move_late_bound_consts,
        "get_late_bound_consts": exe.get_late_bound_consts,
        "load_late_bound_consts": exe.load_late_bound_consts,
        "load_late_bound_consts_from_map": exe.load_late_bound_consts_from_map,
    }
    return Module(EXECUTABLE_TYPE_KEY, functions, payload=exe.code, owner=exe)


def kernel_library(backend: str) -> Module:
    """The `lib` half of Executable.save(): transpile compiles kernels from the program itself (through
    the backend's build cache), so the library only records which backend runs the code."""
    return Module("transpile_kernels", {}, payload=lambda: json.dumps({"backend": backend}).encode())


def _load_executable(payload: bytes, path: str) -> Module:
    from .vm import Executable

    return Executable.load_exec(payload, None).mod


def _load_kernel_library(payload: bytes, path: str) -> Module:
    try:
        backend = str(json.loads(payload)["backend"])
    except (ValueError, KeyError, TypeError):
        raise TranspileError(f"{path}: a damaged transpile kernel library file") from None
    return kernel_library(backend)


register_loader(EXECUTABLE_TYPE_KEY, _load_executable)
register_loader("transpile_kernels", _load_kernel_library)
