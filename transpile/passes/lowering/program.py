"""Program-wide lowering state: the shared name space, LIR types and ADT instances, hoisted constants, functions."""

from __future__ import annotations

import hashlib

import numpy as np

from ...errors import TranspileError, UnsupportedFeatureError
from ...lir import AdtDef, ConstDef, ConstRef, CtorDef, FunctionDef, Literal, Program, fresh_name
from ...lir.types import from_relay_type
from ...relay import ty as rty
from ...relay.typing.subst import substitute
from .kernels import KernelTable
from .names import MAX_NAME, sanitize, type_name_part

__all__ = ["LoweringError", "ProgramBuilder", "is_primitive"]


class LoweringError(TranspileError):
    """The Relay program is not in the form lowering expects (an earlier pass was skipped or broke its contract)."""


def is_primitive(func) -> bool:
    attrs = getattr(func, "attrs", None)
    return bool(attrs is not None and attrs.get("Primitive", 0))


_LITERAL_KINDS = ("b", "i", "u", "f")


class ProgramBuilder:
    """Collects the definitions of one LIR program while its functions are lowered.

    Constants, kernels and functions share one name space (`self.names`); ADT names live in
    their own. Relay global names are reserved first so lifted closures and wrappers never
    take them.
    """

    def __init__(self, mod):
        self.mod = mod
        self.names: set[str] = set()
        self.global_names: dict[str, str] = {}  # Relay global name -> LIR function name
        self.signatures: dict[str, tuple] = {}  # LIR function name -> (param types, ret type)
        self.functions: list[FunctionDef] = []
        self.kernel_globals: dict[str, str] = {}  # Relay global with Primitive=1 -> kernel name
        self.kernels = KernelTable(self)
        self._adt_names: dict[object, str] = {}
        self._adt_taken: set[str] = set()
        self._adts: dict[str, AdtDef | None] = {}
        self._type_cache: dict[object, object] = {}
        self._constants: list[ConstDef] = []
        self._const_by_key: dict[tuple, list] = {}  # sampled key -> [(ConstDef, ConstRef)]
        self._const_by_node: dict[int, object] = {}
        self._wrappers: dict[tuple, str] = {}
        self.lifted: dict[tuple, tuple] = {}  # (id of a local Relay Function, recursive) -> (node, name)

    # ------------------------------------------------------------ names

    def reserve_global(self, relay_name: str) -> str:
        name = fresh_name(sanitize(relay_name, "fn"), self.names)
        self.global_names[relay_name] = name
        return name

    def fresh(self, base: str) -> str:
        base = sanitize(base, "fn")[:MAX_NAME]
        return fresh_name(base, self.names)

    # ------------------------------------------------------------ types and ADT instances

    def lir_type(self, relay_type, span=None):
        """The LIR type of a monomorphic Relay type; ADT instances get (and define) their names."""
        cached = self._type_cache.get(relay_type)
        if cached is not None:
            return cached
        try:
            result = from_relay_type(relay_type, self.adt_name)
        except ValueError as err:
            raise LoweringError(f"cannot lower type: {err} (run monomorphization first)", span) from None
        self._type_cache[relay_type] = result
        return result

    def type_of(self, expr):
        ty = getattr(expr, "checked_type_", None)
        if ty is None:
            ty = getattr(expr, "type_annotation", None)
        if ty is None:
            raise LoweringError(
                f"{type(expr).__name__} has no inferred type (run type inference first)", getattr(expr, "span", None)
            )
        return self.lir_type(ty, getattr(expr, "span", None))

    def adt_name(self, relay_type) -> str:
        """The name of an ADT instance (`List_int32`); defines the instance on first use."""
        if isinstance(relay_type, rty.GlobalTypeVar):
            relay_type = rty.TypeCall(relay_type, [])
        name = self._adt_names.get(relay_type)
        if name is not None:
            return name
        base = type_name_part(relay_type)
        if len(base) > MAX_NAME:
            base = base[:MAX_NAME].rstrip("_")
        name = fresh_name(base, self._adt_taken)
        self._adt_names[relay_type] = name
        self._adts[name] = None  # reserved now: recursive ADTs name themselves in their fields
        self._adts[name] = self._define_adt(name, relay_type)
        return name

    def _define_adt(self, name: str, instance) -> AdtDef:
        gtv = instance.func
        data = self.mod.type_definitions.get(gtv)
        if data is None:
            raise UnsupportedFeatureError(f"type {gtv.name_hint} has no definition (extern types cannot be lowered)")
        if len(data.type_vars) != len(instance.args):
            raise LoweringError(
                f"type {gtv.name_hint} takes {len(data.type_vars)} type argument(s), found {len(instance.args)}"
            )
        mapping = dict(zip(data.type_vars, instance.args))
        ctors = []
        taken: set[str] = set()  # `a-b` and `a_b` both sanitize to `a_b`: one ADT needs distinct names
        for ctor in data.constructors:
            fields = tuple(self.lir_type(substitute(t, mapping)) for t in ctor.inputs)
            ctors.append(CtorDef(fresh_name(sanitize(ctor.name_hint, "Ctor"), taken), ctor.tag, fields, ctor.name_hint))
        return AdtDef(name, tuple(ctors))

    def adt(self, name: str) -> AdtDef:
        return self._adts[name]

    # ------------------------------------------------------------ constants

    def constant_atom(self, constant):
        """A Literal for a finite 0-d bool/int/float constant, else a reference to a hoisted ConstDef."""
        known = self._const_by_node.get(id(constant))
        if known is not None:
            return known[1]
        data = constant.data
        ty = rty.TensorType(tuple(int(d) for d in data.shape), data.dtype.name)
        atom = None
        if data.ndim == 0 and data.dtype.kind in _LITERAL_KINDS:
            value = data.item()
            if not (isinstance(value, float) and not np.isfinite(value)):
                atom = Literal(value, ty)
        if atom is None:
            atom = self._hoist(data, ty)
        # Keep the node alive with its atom so its id is never reused while cached.
        self._const_by_node[id(constant)] = (constant, atom)
        return atom

    def _hoist(self, data: np.ndarray, ty) -> ConstRef:
        # Hashing every byte of big weights costs seconds (GPT-2): a strided sample makes the key,
        # and equal keys are told apart by comparing the arrays.
        flat = data.reshape(-1)
        step = max(1, flat.size // 4096)
        sample = np.ascontiguousarray(flat[::step]).tobytes()
        key = (ty.dtype, ty.shape, hashlib.blake2b(sample).digest())
        candidates = self._const_by_key.setdefault(key, [])
        for const, ref in candidates:
            if np.array_equal(const.value, data):
                return ref
        name = fresh_name(f"c{len(self._constants)}", self.names)
        const = ConstDef(name, data, ty)
        self._constants.append(const)
        ref = ConstRef(name, ty)
        candidates.append((const, ref))
        return ref

    # ------------------------------------------------------------ functions

    def add_function(self, func: FunctionDef) -> None:
        self.functions.append(func)
        self.signatures[func.name] = (tuple(p.type for p in func.params), func.ret)

    def wrapper(self, key: tuple, build) -> str:
        """The name of a memoized wrapper function; `build(name)` makes it on first request."""
        name = self._wrappers.get(key)
        if name is None:
            name = self._wrappers[key] = build()
        return name

    def program(self, entry: str) -> Program:
        adts = tuple(adt for adt in self._adts.values() if adt is not None)
        return Program(adts, tuple(self._constants), self.kernels.kernels(), tuple(self.functions), entry)
