"""The little IR (LIR): the typed, monomorphic, first-order, A-normal-form contract between passes and backends.

A `Program` holds monomorphic ADT definitions, hoisted constants, kernels (fused groups of
primitive operators kept as type-checked Relay functions) and functions whose bodies are
blocks of `Let` statements over atoms. `print_program` renders it (`transpile emit -b lir`),
`verify` checks it (after every pass in tests and debug mode), `walk` helps passes rewrite it.
"""

from __future__ import annotations

from .nodes import (
    ATOMS,
    VALUES,
    AdtDef,
    AdtField,
    AtomValue,
    Block,
    Call,
    Case,
    ClosureCall,
    ConstDef,
    ConstRef,
    CtorDef,
    Fail,
    FunctionDef,
    If,
    Kernel,
    KernelCall,
    Let,
    LIRError,
    Literal,
    MakeAdt,
    MakeClosure,
    MakeTuple,
    Match,
    Param,
    Program,
    Proj,
    RefGet,
    RefNew,
    RefSet,
    Var,
)
from .printer import print_program, stmt_text, value_text
from .typeof import type_of
from .types import UNIT, AdtT, ClosureT, RefT, TensorType, TupleT, from_relay_type, is_scalar, is_tensor, type_text
from .verify import problems_of, verify
from .walk import (
    atoms_of,
    fresh_name,
    iter_lets,
    kernel_ops,
    map_atoms,
    map_blocks,
    map_functions,
    replace_sub_blocks,
    sub_blocks,
    tail_lets,
    transform_blocks,
)
from .kernels import kernel_from_function

__all__ = [
    # types
    "TensorType",
    "TupleT",
    "AdtT",
    "ClosureT",
    "RefT",
    "UNIT",
    "is_scalar",
    "is_tensor",
    "type_text",
    "from_relay_type",
    # program and definitions
    "Program",
    "AdtDef",
    "CtorDef",
    "ConstDef",
    "Kernel",
    "FunctionDef",
    "Param",
    # blocks, statements, atoms
    "Block",
    "Let",
    "Var",
    "ConstRef",
    "Literal",
    "ATOMS",
    # values
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
    "VALUES",
    # tools
    "LIRError",
    "type_of",
    "verify",
    "problems_of",
    "print_program",
    "stmt_text",
    "value_text",
    "kernel_from_function",
    "sub_blocks",
    "replace_sub_blocks",
    "atoms_of",
    "map_atoms",
    "iter_lets",
    "map_blocks",
    "transform_blocks",
    "map_functions",
    "tail_lets",
    "kernel_ops",
    "fresh_name",
]
