"""Result types of LIR values, computed from the atoms' types and the program's definitions."""

from __future__ import annotations

from typing import Callable

from .nodes import (
    AdtField,
    AtomValue,
    Block,
    Call,
    ClosureCall,
    Fail,
    If,
    KernelCall,
    LIRError,
    MakeAdt,
    MakeClosure,
    MakeTuple,
    Match,
    Program,
    Proj,
    RefGet,
    RefNew,
    RefSet,
)
from .types import UNIT, AdtT, ClosureT, RefT, TupleT, type_text

__all__ = ["type_of", "value_type", "atom_type"]


def atom_type(atom):
    return atom.type


def _block_type(block: Block):
    return block.result.type


def value_type(value, program: Program, report: Callable[[str], None]):
    """The result type of `value`, or None after calling `report(problem)` when it has none."""
    if isinstance(value, AtomValue):
        return value.atom.type
    if isinstance(value, KernelCall):
        kernel = program.find_kernel(value.kernel)
        if kernel is None:
            return report(f"unknown kernel {value.kernel}")
        return kernel.result
    if isinstance(value, Call):
        func = program.find_function(value.func)
        if func is None:
            return report(f"unknown function @{value.func}")
        return func.ret
    if isinstance(value, ClosureCall):
        ty = value.closure.type
        if not isinstance(ty, ClosureT):
            return report(f"closure call of a value of type {type_text(ty)}, which is not a closure")
        return ty.ret
    if isinstance(value, MakeClosure):
        func = program.find_function(value.func)
        if func is None:
            return report(f"unknown function @{value.func}")
        return func.closure_type
    if isinstance(value, MakeTuple):
        return TupleT(tuple(f.type for f in value.fields))
    if isinstance(value, Proj):
        ty = value.tuple_value.type
        if not isinstance(ty, TupleT):
            return report(f"projection .{value.index} of a value of type {type_text(ty)}, which is not a tuple")
        if not 0 <= value.index < len(ty.fields):
            return report(f"projection .{value.index} out of range for a tuple of {len(ty.fields)} field(s)")
        return ty.fields[value.index]
    if isinstance(value, MakeAdt):
        if program.find_adt(value.adt) is None:
            return report(f"unknown ADT {value.adt}")
        return AdtT(value.adt)
    if isinstance(value, AdtField):
        ctor = _ctor_of(value.value.type, value.ctor, program, report)
        if ctor is None:
            return None
        if not 0 <= value.index < len(ctor.fields):
            return report(
                f"field .{value.index} out of range for constructor {ctor.name} with {len(ctor.fields)} field(s)"
            )
        return ctor.fields[value.index]
    if isinstance(value, RefNew):
        return RefT(value.value.type)
    if isinstance(value, RefGet):
        ty = value.ref.type
        if not isinstance(ty, RefT):
            return report(f"ref_get of a value of type {type_text(ty)}, which is not a reference")
        return ty.value
    if isinstance(value, RefSet):
        return UNIT
    if isinstance(value, If):
        return _block_type(value.then)
    if isinstance(value, Match):
        if value.cases:
            return _block_type(value.cases[0].body)
        if value.default is not None:
            return _block_type(value.default)
        return report("match without cases or default")
    if isinstance(value, Fail):
        return value.type
    return report(f"{type(value).__name__} is not an LIR value")


def _ctor_of(ty, ctor_name: str, program: Program, report):
    if not isinstance(ty, AdtT):
        return report(f"constructor {ctor_name} used on a value of type {type_text(ty)}, which is not an ADT")
    adt = program.find_adt(ty.name)
    if adt is None:
        return report(f"unknown ADT {ty.name}")
    ctor = adt.constructor(ctor_name)
    if ctor is None:
        return report(f"ADT {adt.name} has no constructor {ctor_name}")
    return ctor


def type_of(value, program: Program):
    """The result type of an LIR value; raises LIRError when the value is ill-formed."""
    problems: list[str] = []
    ty = value_type(value, program, problems.append)
    if problems:
        raise LIRError(problems)
    return ty
