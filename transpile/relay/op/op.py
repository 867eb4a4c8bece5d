"""tvm.relay.op.op: look operators up as `Op` nodes and register new ones (type-level).

`register(name)` adds a registry entry with no relation and no implementation; the Op node's
setters (`set_num_inputs`, `add_type_rel`, ...) then complete it as TVM's OpRegEntry did. Such an
operator type-checks, prints and parses like any other; evaluating it fails with a clear error,
since no numpy or TE implementation was given.
"""

from __future__ import annotations

from .op_entry import OpRegistrationError
from .registry import OpDef, OpPattern, RelationError, lookup, register as _register_opdef

__all__ = ["get", "register", "register_pattern", "register_stateful", "register_gradient", "OpPattern", "Op"]


def __getattr__(name):
    # `Op` is the expression node class; resolved on use so this module stays importable from expr.py's package.
    if name == "Op":
        from ..expr import Op

        return Op
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get(op_name: str):
    """The `Op` node of a registered operator: the same object the parser produces for `op_name`."""
    from ..expr import Op

    if lookup(op_name) is None:
        raise OpRegistrationError(f"relay.op.get: operator {op_name!r} is not registered")
    return Op.get(op_name)


def _untyped_relation(op_name: str):
    def relation(arg_types, attrs):
        raise RelationError(f"{op_name} has no type relation yet (relay.op.get({op_name!r}).add_type_rel adds one)")

    return relation


def _unimplemented(op_name: str):
    def evaluate(args, attrs, out_type):
        raise OpRegistrationError(
            f"operator {op_name} was registered without an implementation, so it can be type-checked but not run"
        )

    return evaluate


def register(op_name: str, describe: str = ""):
    """Register a new operator by name (TVM's relay.op.register); fails if the name is taken."""
    if lookup(op_name) is not None:
        raise OpRegistrationError(f"Operator {op_name} is registered before")
    _register_opdef(
        OpDef(
            name=op_name,
            num_inputs=None,
            type_rel=_untyped_relation(op_name),
            pattern=OpPattern.OPAQUE,
            numpy_impl=_unimplemented(op_name),
            description=describe,
        )
    )
    return get(op_name)


def register_pattern(op_name: str, pattern, level: int = 10):
    """Set the operator's fusion pattern (an OpPattern or its integer)."""
    get(op_name).set_attr("TOpPattern", pattern, level)


def register_stateful(op_name: str, stateful: bool, level: int = 10):
    """Record whether the operator has side effects (TVM's TOpIsStateful)."""
    get(op_name).set_attr("TOpIsStateful", stateful, level)


def register_gradient(op_name: str, fgradient=None, level: int = 10):
    """Attach a gradient rule `fn(orig_call, output_grad) -> [grad per input]` (usable as a decorator)."""
    from .gradients import register_gradient as attach_gradient

    return attach_gradient(op_name, fgradient, override=True)
