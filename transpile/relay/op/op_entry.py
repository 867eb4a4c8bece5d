"""The registry seen through an `Op` node: TVM's Op properties, get_attr and its OpRegEntry setters.

`relay.op.get("add")` is the interned `Op` node the parser also produces; what TVM kept on the
Op (num_inputs, description, argument docs, support level, the attribute map) lives in its
`OpDef`, so the node reads and writes through to the registry rather than holding a copy.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import TranspileError
from .registry import OpPattern, RelationError, lookup

__all__ = ["OpEntryMixin", "OpArgument", "OpRegistrationError", "named_relation"]


class OpRegistrationError(TranspileError, ValueError):
    """An operator registration call that cannot be honoured (unknown operator or relation name)."""


@dataclass(frozen=True)
class OpArgument:
    """TVM's AttrFieldInfo for an operator input: name, type description, documentation."""

    name: str
    type_info: str
    description: str


# TVM's attribute-map keys and where each lives on an OpDef.
_ATTR_READERS = {
    "TOpPattern": lambda d: int(d.pattern),
    "TOpIsStateful": lambda d: bool(d.extras.get("stateful", False)),
    "FTVMCompute": lambda d: d.te_impl,
    "FPrimalGradient": lambda d: d.gradient,
}


def named_relation(rel_name: str, op_name: str):
    """One of TVM's stock type relations by the name add_type_rel accepts."""
    from .families.elemwise import broadcast_rel, identity_comp_rel, identity_rel

    makers = {
        "Identity": lambda: identity_rel(op_name),
        "IdentityCompRel": lambda: identity_comp_rel(op_name),
        "Broadcast": lambda: broadcast_rel(op_name),
        "BroadcastComp": lambda: broadcast_rel(op_name, out_dtype="bool"),
    }
    maker = makers.get(rel_name)
    if maker is None:
        known = ", ".join(sorted(makers))
        raise OpRegistrationError(
            f"{op_name}: no built-in type relation named {rel_name!r} (known: {known}); pass the relation function"
        )
    return maker()


class OpEntryMixin:
    """Methods of tvm.ir.Op, for the Relay `Op` node (which has only its `name`)."""

    __slots__ = ()

    @property
    def _opdef(self):
        opdef = lookup(self.name)
        if opdef is None:
            raise OpRegistrationError(f"operator {self.name} is not registered (relay.op.op.register adds one)")
        return opdef

    @property
    def num_inputs(self) -> int:
        count = self._opdef.num_inputs
        return -1 if count is None else count  # TVM's encoding of "variadic"

    @property
    def description(self) -> str:
        return self._opdef.description

    @property
    def arguments(self) -> tuple:
        return tuple(self._opdef.extras.get("arguments", ()))

    @property
    def support_level(self) -> int:
        return self._opdef.extras.get("support_level", 10)

    @property
    def attrs_type_key(self) -> str:
        return self._opdef.extras.get("attrs_type_key", "")

    def get_attr(self, attr_name: str):
        """A value of the operator attribute map (TOpPattern, TOpIsStateful, FTVMCompute...), None when unset."""
        opdef = self._opdef
        reader = _ATTR_READERS.get(attr_name)
        if reader is not None:
            return reader(opdef)
        return opdef.extras.get("attr_map", {}).get(attr_name)

    def has_attr(self, attr_name: str) -> bool:
        return self.get_attr(attr_name) is not None

    def set_attr(self, attr_name: str, value, plevel: int = 10) -> None:
        opdef = self._opdef
        if attr_name == "TOpPattern":
            opdef.pattern = OpPattern(int(value))
        elif attr_name == "TOpIsStateful":
            opdef.extras["stateful"] = bool(value)
        else:
            opdef.extras.setdefault("attr_map", {})[attr_name] = value

    def reset_attr(self, attr_name: str) -> None:
        opdef = self._opdef
        if attr_name == "TOpPattern":
            opdef.pattern = OpPattern.OPAQUE
        elif attr_name == "TOpIsStateful":
            opdef.extras.pop("stateful", None)
        else:
            opdef.extras.get("attr_map", {}).pop(attr_name, None)

    def set_num_inputs(self, count: int) -> None:
        self._opdef.num_inputs = None if count < 0 else int(count)

    def add_argument(self, name: str, type_info: str, description: str) -> None:
        self._opdef.extras.setdefault("arguments", []).append(OpArgument(name, type_info, description))

    def set_support_level(self, level: int) -> None:
        self._opdef.extras["support_level"] = int(level)

    def set_attrs_type_key(self, key: str) -> None:
        self._opdef.extras["attrs_type_key"] = key

    def add_type_rel(self, rel_name: str, type_rel_func=None) -> None:
        """Give the operator a type relation: a stock one by name, or `type_rel_func(arg_types, attrs)`."""
        opdef = self._opdef
        if type_rel_func is None:
            opdef.type_rel = named_relation(rel_name, self.name)
            opdef.extras.pop("user_relation", None)
            return

        def user_relation(arg_types, attrs):
            result = type_rel_func(list(arg_types), attrs)
            if result is None:
                raise RelationError(f"{self.name}: the type relation {rel_name!r} returned no type")
            return result

        opdef.type_rel = user_relation
        opdef.extras["user_relation"] = True  # its own exceptions reach the caller, as through TVM's FFI
