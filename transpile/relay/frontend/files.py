"""Model files by suffix: `.onnx` (ONNX) and `.pt2` (a saved `torch.export` ExportedProgram) into Relay."""

from __future__ import annotations

import os
from pathlib import Path

from ..expr import Function, Var
from ..module import IRModule
from .common import FrontendError

__all__ = ["MODEL_SUFFIXES", "is_model_file", "import_model_file", "parse_shape_options", "with_printable_param_names"]

MODEL_SUFFIXES = {".onnx": "ONNX", ".pt2": "PyTorch ExportedProgram"}


def is_model_file(path) -> bool:
    return Path(path).suffix.lower() in MODEL_SUFFIXES


def import_model_file(path, shape: dict | None = None, freeze_params: bool = True):
    """`(IRModule, params)` of the model file at `path` (see MODEL_SUFFIXES)."""
    suffix = Path(path).suffix.lower()
    if not os.path.isfile(path):
        raise FrontendError(f"{path}: no such model file")
    if suffix == ".onnx":
        from .onnx import from_onnx

        return from_onnx(os.fspath(path), shape=shape, freeze_params=freeze_params)
    if suffix == ".pt2":
        if shape:
            raise FrontendError(f"{path}: --shape applies to ONNX models; an ExportedProgram fixes its own input shapes")
        from .pytorch import from_exported_program

        return from_exported_program(_load_exported_program(path), freeze_params=freeze_params)
    raise FrontendError(f"{path}: not a model file (expected one of {', '.join(MODEL_SUFFIXES)})")


def _load_exported_program(path):
    try:
        import torch
    except ImportError:
        raise FrontendError(f"{path}: reading a .pt2 ExportedProgram needs PyTorch (pip install torch)") from None
    try:
        return torch.export.load(os.fspath(path))
    except Exception as exc:  # zip/pickle/version errors of a foreign file
        raise FrontendError(f"{path}: not a readable torch.export program: {type(exc).__name__}: {exc}") from None


def parse_shape_options(options) -> dict:
    """`["data=1,3,224,224", "mask=1,?"]` as {name: [1, 3, 224, 224], ...}; `?` or -1 is an unknown dimension."""
    shapes = {}
    for option in options or ():
        name, sep, dims = option.rpartition("=")
        if not sep or not name:
            raise FrontendError(f"--shape {option!r}: expected NAME=D1,D2,... (e.g. data=1,3,224,224)")
        try:
            shape = [None if d.strip() in ("?", "-1") else int(d) for d in dims.split(",")] if dims.strip() else []
        except ValueError:
            raise FrontendError(f"--shape {option!r}: dimensions must be integers or ?") from None
        if any(d is not None and d < 0 for d in shape):
            raise FrontendError(f"--shape {option!r}: dimensions must not be negative")
        if name in shapes:
            raise FrontendError(f"--shape gives input {name!r} twice")
        shapes[name] = shape
    return shapes


def printable_name(name: str) -> str:
    """The name the Relay text printer gives a variable named `name` (before making it unique)."""
    hint = "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else "_" for ch in name or "")
    return hint if hint and hint[0].isalpha() else "v" + hint


def with_printable_param_names(mod: IRModule, params: dict, entry: str = "main"):
    """`mod` and `params` with `entry`'s parameters renamed to unique names the printer keeps as they are.

    ONNX and PyTorch names (`conv1.weight`, `input.1`, `0`) are not Relay identifiers; the printer
    would rewrite them, and weights saved under the original names would no longer match the
    printed parameters. Renaming first keeps the text and the .npz in step.
    """
    func = mod[entry]
    taken: set[str] = set()
    renamed, new_params, mapping = [], {}, {}
    for param in func.params:
        base = printable_name(param.name_hint)
        name, counter = base, 0
        while name in taken:
            counter += 1
            name = f"{base}_{counter}"
        taken.add(name)
        new = Var(name, param.type_annotation)
        mapping[param] = new
        renamed.append(new)
        if param.name_hint in params:
            new_params[name] = params[param.name_hint]
    from ..bind import bind

    body = bind(func.body, mapping)
    out = mod.copy() if hasattr(mod, "copy") else mod
    out[entry] = Function(renamed, body, func.ret_type, func.type_params, func.attrs)
    from ..typing import infer_type

    return infer_type(out), new_params
