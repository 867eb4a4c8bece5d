"""LIR nodes: program, definitions, blocks, statements, values and atoms (immutable dataclasses).

The LIR is typed, monomorphic, in A-normal form and first-order: every intermediate value is
named by a `Let`, every operand is an atom, closures are explicit (`MakeClosure` of a lifted
`FunctionDef` with an `env`), control flow is structured (`If`, one-level `Match`), tensor
computation lives in separate `Kernel`s, and non-scalar constants are hoisted into `ConstDef`s.

Rules every pass must establish and every backend may rely on (checked by verify.verify):
- Names: constants, kernels and functions share one namespace; ADT names another; constructor
  names are scoped by their ADT. Within a function every binder (env, params, Let vars, match
  binders) has a distinct name, even across sibling branches.
- Scoping: a Let var is visible after its statement to the end of its block (and in nested blocks);
  match binders only in their case body. A block's value is its `result` atom.
- Types: atoms carry their types; a Let var's type equals the value's type (`typeof.type_of`); an
  If's branches and a Match's cases/default all produce the Let var's type.
- Calls: `Call` targets a function with `env=None` (a closure body may `Call` itself: a self call
  reuses the current env, the common shape of local loops); `MakeClosure` targets a function
  with an env (possibly empty) and captures one atom per env param; `ClosureCall` calls a
  ClosureT value. A global used as a first-class value becomes a `MakeClosure` of a wrapper.
- Tail calls: `tail=True` only on a Call/ClosureCall whose Let is in tail position (walk.tail_lets).
- Match: one constructor level over an ADT value; every constructor at most once; without a
  default the cases are exhaustive (match compilation adds a default with `Fail` otherwise).
- Kernels: tensor params, tensor or tuple-of-tensor result, a type-checked Relay body calling
  registered ops on its params and 0-d constants only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import Span, TranspileError
from ..relay.op.registry import OpPattern
from ..relay.ty import TensorType

__all__ = [
    "LIRError",
    "Var",
    "ConstRef",
    "Literal",
    "Param",
    "AtomValue",
    "KernelCall",
    "Call",
    "ClosureCall",
    "MakeClosure",
    "MakeTuple",
    "Proj",
    "MakeAdt",
    "AdtField",
    "RefNew",
    "RefGet",
    "RefSet",
    "If",
    "Match",
    "Case",
    "Fail",
    "Let",
    "Block",
    "CtorDef",
    "AdtDef",
    "ConstDef",
    "Kernel",
    "FunctionDef",
    "Program",
    "ATOMS",
    "VALUES",
]


class LIRError(TranspileError):
    """An ill-formed LIR program (a bug in a pass or in a hand-built program); lists every problem."""

    def __init__(self, problems, span: Span | None = None):
        self.problems = list(problems)
        if len(self.problems) == 1:
            message = f"invalid LIR: {self.problems[0]}"
        else:
            message = f"invalid LIR ({len(self.problems)} problems):\n" + "\n".join(f"  {p}" for p in self.problems)
        super().__init__(message, span)


def _frozen(cls):
    return dataclass(frozen=True, slots=True)(cls)


# ---------------------------------------------------------------- atoms


@_frozen
class Var:
    """A local variable; names are unique within a function (params, env, lets, match binders)."""

    name: str
    type: object


@_frozen
class ConstRef:
    """A reference to a hoisted `ConstDef` of the program."""

    name: str
    type: object


@_frozen
class Literal:
    """A 0-d tensor literal (bool, int or float Python value) so scalar code stays readable."""

    value: object
    type: TensorType

    def __post_init__(self):
        if isinstance(self.value, np.generic):
            object.__setattr__(self, "value", self.value.item())

    def numpy(self) -> np.ndarray:
        return np.array(self.value, dtype=self.type.dtype)


ATOMS = (Var, ConstRef, Literal)


@_frozen
class Param:
    name: str
    type: object

    def var(self) -> Var:
        return Var(self.name, self.type)


# ---------------------------------------------------------------- values (right-hand sides of Let)


@_frozen
class AtomValue:
    atom: object


@_frozen
class KernelCall:
    kernel: str
    args: tuple

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))


@_frozen
class Call:
    """Direct call of a global FunctionDef (env None), or a closure body's call of itself."""

    func: str
    args: tuple
    tail: bool = False

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))


@_frozen
class ClosureCall:
    closure: object
    args: tuple
    tail: bool = False

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))


@_frozen
class MakeClosure:
    """A closure of FunctionDef `func` (which has an env) capturing `captured` (one atom per env param)."""

    func: str
    captured: tuple

    def __post_init__(self):
        object.__setattr__(self, "captured", tuple(self.captured))


@_frozen
class MakeTuple:
    fields: tuple

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))


@_frozen
class Proj:
    tuple_value: object
    index: int


@_frozen
class MakeAdt:
    adt: str
    ctor: str
    fields: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))


@_frozen
class AdtField:
    """Field `index` of `value`, which the producer guarantees was built by constructor `ctor`."""

    value: object
    ctor: str
    index: int


@_frozen
class RefNew:
    value: object


@_frozen
class RefGet:
    ref: object


@_frozen
class RefSet:
    """Stores `value` into `ref`; its result is the unit value (empty tuple)."""

    ref: object
    value: object


@_frozen
class Block:
    """Statements executed in order, then the block's value: `result`."""

    stmts: tuple
    result: object

    def __post_init__(self):
        object.__setattr__(self, "stmts", tuple(self.stmts))


@_frozen
class If:
    """`cond` is a Tensor[(), bool] atom; the value is the result of the branch taken."""

    cond: object
    then: Block
    else_: Block


@_frozen
class Case:
    """`ctor(binders...) => body`; a None binder ignores that field."""

    ctor: str
    binders: tuple
    body: Block

    def __post_init__(self):
        object.__setattr__(self, "binders", tuple(self.binders))


@_frozen
class Match:
    """One constructor level of pattern matching; `default` runs when no case names the constructor."""

    scrutinee: object
    cases: tuple
    default: Block | None = None

    def __post_init__(self):
        object.__setattr__(self, "cases", tuple(self.cases))


@_frozen
class Fail:
    """Raises a run-time error (e.g. an incomplete match); typed as the value expected in its place."""

    message: str
    type: object


VALUES = (
    AtomValue,
    KernelCall,
    Call,
    ClosureCall,
    MakeClosure,
    MakeTuple,
    Proj,
    MakeAdt,
    AdtField,
    RefNew,
    RefGet,
    RefSet,
    If,
    Match,
    Fail,
)


@_frozen
class Let:
    """The only statement: bind the value's result (unit for effects) to a fresh variable."""

    var: Var
    value: object
    span: Span | None = field(default=None, compare=False)


# ---------------------------------------------------------------- definitions


@_frozen
class CtorDef:
    """A constructor of a monomorphic ADT; `relay_name` is what crosses the Python boundary (ADTValue)."""

    name: str
    tag: int
    fields: tuple = ()
    relay_name: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))
        if self.relay_name is None:
            object.__setattr__(self, "relay_name", self.name)


@_frozen
class AdtDef:
    name: str
    constructors: tuple

    def __post_init__(self):
        object.__setattr__(self, "constructors", tuple(self.constructors))

    def constructor(self, name: str) -> CtorDef | None:
        for ctor in self.constructors:
            if ctor.name == name:
                return ctor
        return None

    def constructor_of(self, relay_name: str) -> CtorDef | None:
        """The constructor the Relay program calls `relay_name` (LIR names are sanitized, Relay's are not)."""
        for ctor in self.constructors:
            if ctor.relay_name == relay_name:
                return ctor
        return None


@dataclass(frozen=True, slots=True, eq=False)
class ConstDef:
    """A hoisted constant; `value` is a read-only array whose shape and dtype match `type`."""

    name: str
    value: np.ndarray
    type: TensorType

    def __post_init__(self):
        value = self.value
        if isinstance(value, np.ndarray) and value.flags.writeable:
            value = value.copy()
            value.flags.writeable = False
            object.__setattr__(self, "value", value)

    def __eq__(self, other):
        return (
            isinstance(other, ConstDef)
            and self.name == other.name
            and self.type == other.type
            and np.array_equal(self.value, other.value)
        )

    def __hash__(self):
        return hash((self.name, self.type))


@_frozen
class Kernel:
    """A fused group of primitive operators: a type-checked Relay Function over tensor params.

    `body` only calls registered operators on its parameters and 0-d constants; its parameters are
    named like `params`. `pattern` is the group's master-op kind; `ops` the operator names in
    evaluation order (see walk.kernel_ops), used for readable names like fused_dense_bias_add_relu.
    """

    name: str
    params: tuple
    result: object
    body: object
    pattern: OpPattern
    ops: tuple

    def __post_init__(self):
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "ops", tuple(self.ops))


@_frozen
class FunctionDef:
    """A global function. `env` is None for ordinary functions (called directly with `Call`) and
    a tuple of captured-variable params for lifted closure bodies (built with `MakeClosure`,
    called with `ClosureCall`; the env may be empty for a lambda without free variables).
    `relay_name` is the Relay global this function came from."""

    name: str
    params: tuple
    ret: object
    body: Block
    env: tuple | None = None
    relay_name: str = ""
    span: Span | None = field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "params", tuple(self.params))
        if self.env is not None:
            object.__setattr__(self, "env", tuple(self.env))

    @property
    def is_closure(self) -> bool:
        return self.env is not None

    @property
    def closure_type(self):
        from .types import ClosureT

        return ClosureT(tuple(p.type for p in self.params), self.ret)


@_frozen
class Program:
    adts: tuple
    constants: tuple
    kernels: tuple
    functions: tuple
    entry: str = "main"
    _index: dict = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        for name in ("adts", "constants", "kernels", "functions"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        index = {}
        for kind in ("adts", "constants", "kernels", "functions"):
            table = {}
            for item in getattr(self, kind):
                table.setdefault(item.name, item)  # duplicates are the verifier's to report
            index[kind] = table
        object.__setattr__(self, "_index", index)

    def _get(self, kind: str, name: str, what: str):
        item = self._index[kind].get(name)
        if item is None:
            raise KeyError(f"the program has no {what} named {name!r}")
        return item

    def function(self, name: str) -> FunctionDef:
        return self._get("functions", name, "function")

    def kernel(self, name: str) -> Kernel:
        return self._get("kernels", name, "kernel")

    def adt(self, name: str) -> AdtDef:
        return self._get("adts", name, "ADT")

    def constant(self, name: str) -> ConstDef:
        return self._get("constants", name, "constant")

    def find_function(self, name: str) -> FunctionDef | None:
        return self._index["functions"].get(name)

    def find_kernel(self, name: str) -> Kernel | None:
        return self._index["kernels"].get(name)

    def find_adt(self, name: str) -> AdtDef | None:
        return self._index["adts"].get(name)

    def find_constant(self, name: str) -> ConstDef | None:
        return self._index["constants"].get(name)

    @property
    def entry_function(self) -> FunctionDef:
        return self.function(self.entry)

    def __str__(self):
        from .printer import print_program

        return print_program(self)
