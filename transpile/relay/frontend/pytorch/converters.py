"""The table of ATen operator converters, and the per-node context a converter receives.

A converter is `fn(ctx: NodeContext) -> value` registered with `@converter("aten.relu.default")`
under the operator's overload name (`str(node.target)`; Python callables in the graph, such as
`operator.getitem` on a multi-output node, are named `operator.getitem`). It reads the node's
arguments by their schema names (`ctx.arg("stride")`, defaults filled in), builds registry
operators through `ctx.b` (a `GraphBuilder`), and raises `ctx.unsupported("why")` for a
configuration it cannot express.

SUPPORTED.md (next to this file) lists the ATen operators of the reference models (torchvision
and transformers) and the known gaps.

A value is a Relay `Expr` for a tensor, a Python list for an operator with several results
(`native_layer_norm`, `split`…; `operator.getitem` picks one), a Python number for a symbolic
size that is static, or None for an operator with no result.
"""

from __future__ import annotations

from typing import Callable

from ....errors import TranspileError
from ... import expr as E
from ..common import GraphBuilder

__all__ = [
    "converter",
    "lookup_converter",
    "supported_ops",
    "target_name",
    "NodeContext",
    "NodeUnsupported",
    "relay_dtype",
]

_CONVERTERS: dict[str, Callable] = {}


def converter(*targets: str):
    """Register the decorated function as the converter of the ATen overloads (or Python callables) `targets`."""

    def register(fn):
        for target in targets:
            if target in _CONVERTERS:
                raise ValueError(f"PyTorch converter for {target} registered twice")
            _CONVERTERS[target] = fn
        return fn

    return register


def _ensure_loaded() -> None:
    from . import ops  # noqa: F401  (the op modules register themselves on import)


def lookup_converter(target: str) -> Callable | None:
    _ensure_loaded()
    return _CONVERTERS.get(target)


def supported_ops() -> list[str]:
    """The operator names with a converter, sorted."""
    _ensure_loaded()
    return sorted(_CONVERTERS)


def target_name(target) -> str:
    """The table key of a call_function node's target: `aten.relu.default`, `operator.getitem`, …"""
    import torch

    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.name()}"
    module = (getattr(target, "__module__", None) or "").lstrip("_")
    name = getattr(target, "__name__", None) or repr(target)
    return f"{module}.{name}" if module else name


# torch dtype name -> Relay dtype; what is missing here (bfloat16, complex, float8…) cannot be imported.
_DTYPES = {
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "bool": "bool",
}


def relay_dtype(torch_dtype, where: str = "") -> str:
    """The Relay dtype of a torch.dtype; NodeUnsupported when Relay has no such tensor type."""
    name = str(torch_dtype).replace("torch.", "")
    dtype = _DTYPES.get(name)
    if dtype is None:
        raise NodeUnsupported(f"{where + ': ' if where else ''}dtype {name} has no Relay tensor type")
    return dtype


class NodeUnsupported(TranspileError):
    """A converter cannot express this node's configuration (raised through `ctx.unsupported`)."""


class NodeContext:
    """What a converter sees of one FX node of the exported graph."""

    def __init__(self, builder: GraphBuilder, node, target: str, arguments: dict, importer):
        self.b = builder
        self.node = node
        self.target = target
        self.name = node.name
        self._arguments = arguments  # schema name -> converted value, defaults filled in
        self.importer = importer

    # ------------------------------------------------------------------ arguments
    def arg(self, name: str, default=None):
        """The argument `name` (schema name, or position for Python callables), converted; `default` when absent/None."""
        value = self._arguments.get(name)
        return default if value is None else value

    def has_arg(self, name: str) -> bool:
        return self._arguments.get(name) is not None

    def tensor(self, name: str) -> E.Expr:
        """The tensor argument `name`; an error when it is missing or not a tensor."""
        value = self._arguments.get(name)
        if not isinstance(value, E.Expr):
            raise self.b.error(f"argument {name!r} must be a tensor, got {type(value).__name__}")
        return value

    def ints(self, name: str, default=None) -> list[int]:
        """An int-list argument (a single int is a list of one); sizes folded at import must be static here."""
        value = self.arg(name, default)
        if value is None:
            return None
        values = value if isinstance(value, (list, tuple)) else [value]
        return [self.static_int(v, name) for v in values]

    def static_int(self, value, what: str) -> int:
        if isinstance(value, E.Expr):
            data = self.b.value_of(value)
            if data is None or data.size != 1:
                raise self.unsupported(f"{what} depends on a dynamic size")
            return int(data.reshape(()).item())
        return int(value)

    # ------------------------------------------------------------------ what PyTorch says about the result
    @property
    def out_meta(self):
        """The node's example value (a FakeTensor, a list of them, a SymInt…), or None."""
        return self.node.meta.get("val")

    @property
    def out_dtype(self) -> str:
        meta = self.out_meta
        if isinstance(meta, (list, tuple)):
            meta = meta[0]
        if meta is None or not hasattr(meta, "dtype"):
            raise self.b.error("the node carries no example value to read its dtype from (export it with torch.export)")
        return relay_dtype(meta.dtype, self.target)

    def output_used(self, index: int) -> bool:
        """Whether result `index` of a multi-result node is read by any other node."""
        import operator

        for user in self.node.users:
            if user.op == "call_function" and user.target is operator.getitem:
                if user.args[1] == index and user.users:
                    return True
            elif user.op != "call_function" or user.target is not operator.getitem:
                return True
        return False

    # ------------------------------------------------------------------ failures
    def unsupported(self, detail: str) -> NodeUnsupported:
        return NodeUnsupported(detail)
