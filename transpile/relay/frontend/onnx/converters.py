"""The table of ONNX operator converters, and the per-node context a converter receives.

A converter is `fn(ctx: NodeContext) -> Expr | list[Expr]` registered with `@converter("Conv")`.
It builds registry operators through `ctx.b` (a `GraphBuilder`), reads attributes with
`ctx.attr`, branches on `ctx.opset` where the operator's signature changed between opsets, and
raises `ctx.unsupported("why")` for a configuration it cannot express (the importer then lists
the node among the unsupported ones instead of failing on the first).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ....errors import TranspileError
from ... import expr as E
from ..common import GraphBuilder

__all__ = ["converter", "lookup_converter", "supported_ops", "NodeContext", "NodeUnsupported"]

# (domain, op_type) -> converter; domain "" is the default ONNX domain (also spelled "ai.onnx").
_CONVERTERS: dict[tuple[str, str], Callable] = {}


def converter(*op_types: str, domain: str = ""):
    """Register the decorated function as the converter of `op_types` in `domain`."""

    def register(fn):
        for op_type in op_types:
            key = (domain, op_type)
            if key in _CONVERTERS:
                raise ValueError(f"ONNX converter for {domain or 'ai.onnx'}::{op_type} registered twice")
            _CONVERTERS[key] = fn
        return fn

    return register


def _ensure_loaded() -> None:
    from . import ops  # noqa: F401  (the op modules register themselves on import)


def lookup_converter(domain: str, op_type: str) -> Callable | None:
    _ensure_loaded()
    return _CONVERTERS.get((_canonical_domain(domain), op_type))


def supported_ops(domain: str = "") -> list[str]:
    """The ONNX operator types with a converter, sorted."""
    _ensure_loaded()
    return sorted(op for d, op in _CONVERTERS if d == _canonical_domain(domain))


def _canonical_domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


class NodeUnsupported(TranspileError):
    """A converter cannot express this node's configuration (raised through `ctx.unsupported`)."""


class NodeContext:
    """What a converter sees of one ONNX node."""

    def __init__(self, builder: GraphBuilder, node, inputs: list, opset: int, attributes: dict, graph):
        self.b = builder
        self.node = node
        self.op_type = node.op_type
        self.name = node.name or (node.output[0] if node.output else node.op_type)
        self.inputs = inputs  # Expr per input; None for an omitted optional input ("")
        self.opset = opset
        self._attributes = attributes
        self.num_outputs = len(node.output)
        self.graph = graph  # the importer (for subgraphs: If/Loop/Scan bodies)

    # ------------------------------------------------------------------ inputs
    def input(self, index: int, required: bool = True) -> E.Expr | None:
        """Input `index`, or None when it is absent (omitted or past the end) and not required."""
        value = self.inputs[index] if index < len(self.inputs) else None
        if value is None and required:
            raise self.b.error(f"input {index} is required")
        return value

    def has_input(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] is not None

    def input_value(self, index: int, what: str | None = None) -> np.ndarray | None:
        """The constant value of an optional input (None when absent); an error when it is not constant."""
        value = self.input(index, required=False)
        if value is None:
            return None
        return self.b.require_value(value, what or f"input {index} of {self.op_type}")

    # ------------------------------------------------------------------ attributes
    def attr(self, name: str, default=None):
        """The attribute's Python value (ints, floats, strings decoded, tensors as numpy, lists as lists)."""
        return self._attributes.get(name, default)

    def has_attr(self, name: str) -> bool:
        return name in self._attributes

    # ------------------------------------------------------------------ failures
    def unsupported(self, detail: str) -> NodeUnsupported:
        return NodeUnsupported(detail)
