"""Peano naturals (the Prelude's `nat`: zero | succ(nat)) as Python ints, Relay values and expressions."""

from __future__ import annotations

from ...errors import TranspileError

__all__ = ["get_type", "count", "make_nat_value", "make_nat_expr", "add_nat_definitions"]


def get_type(prelude, name):
    """(GlobalTypeVar, *constructors) of the type `name` in the prelude's module."""
    return prelude.mod.get_type(name)


def _nat(prelude):
    try:
        return prelude.mod.get_type("nat")
    except KeyError:
        raise TranspileError("the module has no type nat: create it with relay.Prelude(mod)") from None


def count(prelude, n) -> int:
    """The Python int a nat value (a ConstructorValue from an executor) stands for."""
    from ..backend.values import ConstructorValue

    _, zero, succ = _nat(prelude)
    total, value = 0, n
    while True:
        if not isinstance(value, ConstructorValue):
            raise TranspileError(f"count expects a nat ConstructorValue, got {type(value).__name__}")
        if value.tag == zero.tag and value.constructor.name_hint == zero.name_hint:
            return total
        if value.constructor.name_hint != succ.name_hint:
            raise TranspileError(f"count expects a nat value, got constructor {value.constructor.name_hint}")
        total += 1
        (value,) = value.fields


def make_nat_value(prelude, n: int):
    """The nat value for the int `n` >= 0, as a ConstructorValue (to pass to an executor)."""
    from ..backend.values import ConstructorValue

    if n < 0:
        raise TranspileError(f"a nat is never negative, got {n}")
    _, zero, succ = _nat(prelude)
    value = ConstructorValue(zero.tag, [], zero)
    for _ in range(n):
        value = ConstructorValue(succ.tag, [value], succ)
    return value


def make_nat_expr(prelude, n: int):
    """The Relay expression succ(succ(... zero())) for the int `n` >= 0."""
    if n < 0:
        raise TranspileError(f"a nat is never negative, got {n}")
    _, zero, succ = _nat(prelude)
    expr = zero()
    for _ in range(n):
        expr = succ(expr)
    return expr


def add_nat_definitions(prelude) -> None:
    """Makes sure the prelude's module has nat and its functions (tvm 0.6 added them on request;
    transpile's Prelude always defines them, so this only checks)."""
    _nat(prelude)
    for name in ("nat_add", "nat_double"):
        prelude.mod.get_global_var(name)
