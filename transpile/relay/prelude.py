"""The Relay Prelude (List, Option, Tree, nat and their functions) and the other std/*.rly library files."""

from __future__ import annotations

import threading
from pathlib import Path

from ..errors import TranspileError
from .expr import Constructor, GlobalVar
from .module import IRModule
from .prelude_dynamic import DynamicTensorArrayLookups, TensorArrayOps
from .prelude_static import StaticTensorArrayLookups, StaticTensorArrayOps, get_tensor_array_shape
from .ty import GlobalTypeVar

__all__ = [
    "Prelude",
    "PRELUDE_PATH",
    "PRELUDE_FUNCTIONS",
    "PRELUDE_TYPES",
    "STD_FILES",
    "import_std_file",
    "StaticTensorArrayOps",
    "TensorArrayOps",
    "get_tensor_array_shape",
]

STD_DIR = Path(__file__).resolve().parent / "std"
PRELUDE_PATH = STD_DIR / "prelude.rly"

# tvm's std file name -> our file. tvm kept nat in nat.rly; ours is part of prelude.rly because
# the nat functions are over List.
STD_FILES = {
    "prelude.rly": PRELUDE_PATH,
    "nat.rly": PRELUDE_PATH,
    "core.rly": STD_DIR / "core.rly",
    "gradient.rly": STD_DIR / "gradient.rly",
}


class UnknownStdFileError(TranspileError):
    """import_from_std named a file Relay's standard library does not have."""

# Every global function prelude.rly defines; each is also an attribute of Prelude.
PRELUDE_FUNCTIONS = (
    "id",
    "compose",
    "flip",
    "hd",
    "tl",
    "nth",
    "length",
    "update",
    "map",
    "foldl",
    "foldr",
    "foldr1",
    "sum",
    "concat",
    "filter",
    "zip",
    "rev",
    "map_accuml",
    "map_accumr",
    "unfoldr",
    "unfoldl",
    "tmap",
    "size",
    "iterate",
    "nat_add",
    "nat_double",
    "nat_nth",
    "nat_update",
    "nat_iterate",
)

# Type name -> (attribute of the type, attributes of its constructors in definition order),
# the attribute names tvm 0.6's Prelude used.
PRELUDE_TYPES = {
    "List": ("l", ("cons", "nil")),
    "Option": ("optional", ("some", "none")),
    "Tree": ("tree", ("rose",)),
    "nat": ("nat", ("z", "s")),
}

# tvm 0.6 called the nat functions `add` and `double`.
_ALIASES = {"add": "nat_add", "double": "nat_double"}

_cache_lock = threading.Lock()
_parsed_files: dict[Path, IRModule] = {}


def _parsed_std_file(path: Path) -> IRModule:
    """A std file parsed once per process; its (immutable) definitions are shared by every importer."""
    with _cache_lock:
        module = _parsed_files.get(path)
        if module is None:
            from .parser import parse

            module = parse(path.read_text(encoding="utf-8"), source_name=str(path))
            _parsed_files[path] = module
        return module


def _prelude_module() -> IRModule:
    return _parsed_std_file(PRELUDE_PATH)


def _merge_missing(mod: IRModule, source: IRModule) -> None:
    """Adds the definitions of `source` that `mod` does not have yet (an import is idempotent)."""
    for gtv, data in source.type_definitions.items():
        if gtv not in mod.type_definitions:
            mod.add_type_data(gtv, data)
    for name, gtv in source.extern_types.items():
        mod.extern_types.setdefault(name, gtv)
    for gv, func in source.functions.items():
        if gv not in mod:
            mod.add(gv, func)


def import_std_file(mod: IRModule, file_name: str) -> None:
    """Adds one file of Relay's standard library to `mod` in place (see IRModule.import_from_std)."""
    path = STD_FILES.get(Path(str(file_name)).name)
    if path is None:
        known = ", ".join(sorted(STD_FILES))
        raise UnknownStdFileError(f"Relay's standard library has no file {file_name!r} (it has {known})")
    _merge_missing(mod, _parsed_std_file(path))


def import_text_file(mod: IRModule, path) -> None:
    """Adds the definitions of a Relay text file to `mod` in place (those it already has stay)."""
    from .parser import parse

    path = Path(path)
    if not path.is_file():
        raise TranspileError(f"cannot import {str(path)!r}: no such file")
    _merge_missing(mod, parse(path.read_text(encoding="utf-8"), source_name=str(path), init_module=mod))


class Prelude(StaticTensorArrayLookups, DynamicTensorArrayLookups):
    """Adds the Prelude's types and functions to `mod` (in place; a new module when None).

    Definitions the module already has (e.g. from an earlier Prelude) are left as they are. As
    in tvm, the module is type-checked afterwards, so `p.mod[p.map].checked_type` is known.
    """

    def __init__(self, mod: IRModule | None = None):
        self.mod = mod if mod is not None else IRModule()
        self._load()

    def _load(self) -> None:
        self.mod.import_from_std("prelude.rly")
        for type_name, (type_attr, ctor_attrs) in PRELUDE_TYPES.items():
            gtv, *ctors = self.get_type(type_name)
            setattr(self, type_attr, gtv)
            for attr, ctor in zip(ctor_attrs, ctors):
                setattr(self, attr, ctor)
        for name in PRELUDE_FUNCTIONS:
            setattr(self, name, self.get_global_var(name))
        for alias, name in _ALIASES.items():
            setattr(self, alias, self.get_global_var(name))
        self._load_tensor_array_types()

    @staticmethod
    def get_name(canonical: str, dtype: str) -> str:
        """tvm's name of a per-dtype definition: `tensor_float32_t` for tensor_t, else `<canonical>_<dtype>`."""
        if canonical == "tensor_t":
            return f"tensor_{dtype}_t"
        return f"{canonical}_{dtype}"

    def get_global_var(self, name: str, dtype: str | None = None) -> GlobalVar:
        """The GlobalVar of a Prelude function (or any function of the module) by name (tvm: name and dtype)."""
        if dtype is not None:
            return self.tensor_array_global_var(name, dtype)
        return self.mod.get_global_var(name)

    def get_type(self, name: str, dtype: str | None = None):
        """(GlobalTypeVar, *constructors) of an ADT of the module, e.g. get_type("List").

        With a dtype (tvm's form), the GlobalTypeVar of the per-dtype type, e.g. ("tensor_t", "int32").
        """
        if dtype is not None:
            return self.tensor_array_type(name, dtype)
        return self.mod.get_type(name)

    def get_global_type_var(self, name: str) -> GlobalTypeVar:
        return self.mod.get_global_type_var(name)

    def get_ctor(self, type_name: str, ctor_name: str, dtype: str | None = None) -> Constructor:
        """A constructor of an ADT, e.g. get_ctor("List", "Cons") (tvm: type, canonical name, dtype)."""
        if dtype is not None:
            ctor_name = self.get_name(ctor_name, dtype)
        _, *ctors = self.mod.get_type(type_name)
        for ctor in ctors:
            if ctor.name_hint == ctor_name:
                return ctor
        names = ", ".join(c.name_hint for c in ctors)
        raise KeyError(f"type {type_name} has no constructor {ctor_name} (its constructors: {names})")

    def load_prelude(self) -> None:
        """tvm's name for (re)loading; loading is idempotent."""
        self._load()
