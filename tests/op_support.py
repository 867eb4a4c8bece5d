"""Helpers shared by the operator tests: type shorthands, running a relation, and running a small function."""

from __future__ import annotations

import pytest

import transpile
from transpile import relay
from transpile.relay.op.registry import RelationError, get, normalize_attrs
from transpile.relay.ty import TensorType


def T(shape, dtype="float32"):  # noqa: N802 (reads like the type it builds)
    return TensorType(shape, dtype)


def rel(name, *arg_types, **attrs):
    """The result type operator `name`'s relation gives for these argument types and attributes."""
    opdef = get(name)
    return opdef.type_rel(list(arg_types), normalize_attrs(opdef, attrs))


def rel_error(name, *arg_types, **attrs) -> str:
    """The message of the RelationError operator `name`'s relation raises."""
    with pytest.raises(RelationError) as info:
        rel(name, *arg_types, **attrs)
    return str(info.value)


def run(body, params, *args, backend="interpreter"):
    """`fn(params) { body }` compiled on `backend` and called with `args`."""
    return transpile.compile(relay.IRModule.from_expr(relay.Function(params, body)), backend=backend)(*args)
