"""The Relay Prelude: List, Option, Tree and nat with their functions, loaded from std/prelude.rly."""

from __future__ import annotations

import threading
from pathlib import Path

from .expr import Constructor, GlobalVar
from .module import IRModule
from .ty import GlobalTypeVar

__all__ = ["Prelude", "PRELUDE_PATH", "PRELUDE_FUNCTIONS", "PRELUDE_TYPES"]

PRELUDE_PATH = Path(__file__).resolve().parent / "std" / "prelude.rly"

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
_cached_module: IRModule | None = None


def _prelude_module() -> IRModule:
    """prelude.rly parsed once per process; its (immutable) definitions are shared by every Prelude."""
    global _cached_module
    with _cache_lock:
        if _cached_module is None:
            from .parser import parse

            text = PRELUDE_PATH.read_text(encoding="utf-8")
            _cached_module = parse(text, source_name=str(PRELUDE_PATH))
        return _cached_module


class Prelude:
    """Adds the Prelude's types and functions to `mod` (in place; a new module when None).

    Definitions the module already has (e.g. from an earlier Prelude) are left as they are.
    """

    def __init__(self, mod: IRModule | None = None):
        self.mod = mod if mod is not None else IRModule()
        self._load()

    def _load(self) -> None:
        source = _prelude_module()
        for gtv, data in source.type_definitions.items():
            if gtv not in self.mod.type_definitions:
                self.mod.add_type_data(gtv, data)
        for gv, func in source.functions.items():
            if gv not in self.mod:
                self.mod.add(gv, func)
        for type_name, (type_attr, ctor_attrs) in PRELUDE_TYPES.items():
            gtv, *ctors = self.get_type(type_name)
            setattr(self, type_attr, gtv)
            for attr, ctor in zip(ctor_attrs, ctors):
                setattr(self, attr, ctor)
        for name in PRELUDE_FUNCTIONS:
            setattr(self, name, self.get_global_var(name))
        for alias, name in _ALIASES.items():
            setattr(self, alias, self.get_global_var(name))

    def get_global_var(self, name: str) -> GlobalVar:
        """The GlobalVar of a Prelude function (or any function of the module) by name."""
        return self.mod.get_global_var(name)

    def get_type(self, name: str) -> tuple:
        """(GlobalTypeVar, *constructors) of an ADT of the module, e.g. get_type("List")."""
        return self.mod.get_type(name)

    def get_global_type_var(self, name: str) -> GlobalTypeVar:
        return self.mod.get_global_type_var(name)

    def get_ctor(self, type_name: str, ctor_name: str) -> Constructor:
        """A constructor of an ADT, e.g. get_ctor("List", "Cons")."""
        _, *ctors = self.get_type(type_name)
        for ctor in ctors:
            if ctor.name_hint == ctor_name:
                return ctor
        names = ", ".join(c.name_hint for c in ctors)
        raise KeyError(f"type {type_name} has no constructor {ctor_name} (its constructors: {names})")

    def load_prelude(self) -> None:
        """tvm's name for (re)loading; loading is idempotent."""
        self._load()
