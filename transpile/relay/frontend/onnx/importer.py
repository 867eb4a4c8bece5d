"""`from_onnx`: an ONNX model (ModelProto, bytes or path) into a Relay module and its params.

Same signature and meaning as TVM <= 0.19's `relay.frontend.from_onnx`. The importer checks every
node against the converter table first (so an unsupported model fails once, listing all its
unsupported nodes), then converts nodes in graph order through a `GraphBuilder`, which types and
constant-folds as it goes.
"""

from __future__ import annotations

import os
from typing import Mapping

import numpy as np

from ....errors import TranspileError
from ... import expr as E
from ..common import FrontendError, GraphBuilder, UnsupportedOp, UnsupportedOperatorsError
from .converters import NodeContext, NodeUnsupported, lookup_converter

__all__ = ["from_onnx", "load_model", "onnx_dtype"]

SOURCE = "ONNX"


def _onnx():
    try:
        import onnx
    except ImportError as exc:  # onnx is an optional extra
        raise FrontendError(
            "importing ONNX models needs the `onnx` package: pip install 'transpile[onnx]' (or pip install onnx)"
        ) from exc
    return onnx


def load_model(model):
    """A ModelProto from a ModelProto, serialized bytes, or a path; FrontendError when it cannot be read."""
    onnx = _onnx()
    if isinstance(model, onnx.ModelProto):
        return model
    try:
        if isinstance(model, (bytes, bytearray)):
            return onnx.load_model_from_string(bytes(model))
        if isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            if not os.path.isfile(path):
                raise FrontendError(f"{path}: no such ONNX model file")
            return onnx.load(path)
    except FrontendError:
        raise
    except Exception as exc:  # protobuf DecodeError, truncated files, missing external data
        raise FrontendError(f"{model if isinstance(model, (str, os.PathLike)) else 'model'}: not a readable ONNX model: {exc}") from None
    raise FrontendError(f"from_onnx expects an onnx.ModelProto, bytes or a path, got {type(model).__name__}")


def onnx_dtype(elem_type: int, where: str) -> str:
    """The Relay dtype of an ONNX TensorProto element type."""
    onnx = _onnx()
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).name
    except Exception:
        dtype = None
    if dtype not in _RELAY_DTYPES:
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type in onnx.TensorProto.DataType.values() else elem_type
        raise FrontendError(f"{SOURCE}: {where} has element type {name}, which Relay has no tensor type for")
    return dtype


_RELAY_DTYPES = frozenset(
    {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}
)


def tensor_value(tensor, where: str) -> np.ndarray:
    """A TensorProto (initializer, Constant value, attribute) as a numpy array."""
    onnx = _onnx()
    onnx_dtype(tensor.data_type, where)
    try:
        return np.array(onnx.numpy_helper.to_array(tensor))
    except Exception as exc:
        raise FrontendError(f"{SOURCE}: {where}: malformed tensor data: {exc}") from None


def attribute_values(node, where: str) -> dict:
    """A node's attributes as Python values."""
    onnx = _onnx()
    kinds = onnx.AttributeProto
    values = {}
    for attribute in node.attribute:
        kind = attribute.type
        if kind == kinds.FLOAT:
            value = float(attribute.f)
        elif kind == kinds.INT:
            value = int(attribute.i)
        elif kind == kinds.STRING:
            value = attribute.s.decode("utf-8", "replace")
        elif kind == kinds.TENSOR:
            value = tensor_value(attribute.t, f"{where}: attribute {attribute.name!r}")
        elif kind == kinds.GRAPH:
            value = attribute.g
        elif kind == kinds.FLOATS:
            value = [float(f) for f in attribute.floats]
        elif kind == kinds.INTS:
            value = [int(i) for i in attribute.ints]
        elif kind == kinds.STRINGS:
            value = [s.decode("utf-8", "replace") for s in attribute.strings]
        elif kind == kinds.GRAPHS:
            value = list(attribute.graphs)
        elif kind == kinds.TENSORS:
            value = [tensor_value(t, f"{where}: attribute {attribute.name!r}") for t in attribute.tensors]
        else:
            value = onnx.helper.get_attribute_value(attribute)
        values[attribute.name] = value
    return values


def _value_info_type(info, shape_override, dtype_override, where):
    """(shape, dtype) of a graph input, the user's overrides first; unknown dimensions are None."""
    tensor_type = info.type.tensor_type if info.type.HasField("tensor_type") else None
    if tensor_type is None:
        raise FrontendError(f"{SOURCE}: {where} is not a tensor (sequence, map and optional inputs are not supported)")
    dtype = dtype_override or onnx_dtype(tensor_type.elem_type, where)
    if shape_override is not None:
        return [None if d is None or (isinstance(d, int) and d < 0) else int(d) for d in shape_override], dtype
    if not tensor_type.HasField("shape"):
        raise FrontendError(f"{SOURCE}: {where} has no shape; give it with shape={{{info.name!r}: (...)}}")
    shape = []
    for dim in tensor_type.shape.dim:
        shape.append(int(dim.dim_value) if dim.HasField("dim_value") and dim.dim_value >= 0 else None)
    return shape, dtype


class OnnxImporter:
    """Converts one ONNX graph; see the module docstring."""

    def __init__(self, model, shape: Mapping | None, dtype, opset: int | None, freeze_params: bool):
        self.model = model
        self.shape = dict(shape or {})
        self.dtype = dtype
        self.freeze_params = freeze_params
        self.opsets = {(imp.domain if imp.domain != "ai.onnx" else ""): int(imp.version) for imp in model.opset_import}
        if opset is not None:
            self.opsets[""] = int(opset)
        if "" not in self.opsets:
            self.opsets[""] = 1 if model.ir_version < 3 else 7  # very old files name no default-domain opset
        self.builder = GraphBuilder(SOURCE)
        self.values: dict[str, E.Expr | None] = {}

    # ------------------------------------------------------------------ driver
    def run(self):
        graph = self.model.graph
        self.check_supported(graph)
        params, param_vars = self.initializers(graph)
        inputs = self.inputs(graph)
        unsupported = self.convert_nodes(graph.node)
        if unsupported:
            raise UnsupportedOperatorsError(SOURCE, unsupported)
        outputs = []
        for info in graph.output:
            if info.name not in self.values:
                raise FrontendError(f"{SOURCE}: graph output {info.name!r} is produced by no node")
            value = self.values[info.name]
            # A value known at import as something else than one tensor (an ONNX sequence) knows its Relay form.
            outputs.append(value if isinstance(value, E.Expr) else value.as_expr(self.builder))
        if not outputs:
            raise FrontendError(f"{SOURCE}: the graph has no outputs")
        used_params = [v for v in param_vars if v.name_hint in params]
        mod = self.builder.module(inputs + used_params, outputs)
        return mod, params

    def check_supported(self, graph) -> None:
        """Every node of the graph (and of its subgraphs) has a converter, or all that do not are listed."""
        missing = []
        for node, domain in _walk_nodes(graph):
            convert = lookup_converter(domain, node.op_type)
            # A converter that always refuses (ops/unsupported.py) is listed here too, with its reason.
            rejection = getattr(convert, "rejection", None)
            if convert is None or rejection:
                qualified = node.op_type if domain in ("", "ai.onnx") else f"{domain}::{node.op_type}"
                name = node.name or (node.output[0] if node.output else "?")
                missing.append(UnsupportedOp(qualified, name, rejection or ""))
        if missing:
            raise UnsupportedOperatorsError(SOURCE, missing)

    def initializers(self, graph):
        params: dict[str, np.ndarray] = {}
        param_vars = []
        for tensor in graph.initializer:
            value = tensor_value(tensor, f"initializer {tensor.name!r}")
            if self.freeze_params:
                self.values[tensor.name] = self.builder.const(value)
            else:
                var = self.builder.input(tensor.name, value.shape, value.dtype.name)
                self.values[tensor.name] = var
                params[tensor.name] = value
                param_vars.append(var)
        for sparse in graph.sparse_initializer:
            raise FrontendError(f"{SOURCE}: sparse initializer {sparse.values.name!r} is not supported")
        return params, param_vars

    def inputs(self, graph) -> list[E.Var]:
        variables = []
        known = set(self.shape)
        for info in graph.input:
            if info.name in self.values:  # IR < 4 lists initializers among the inputs
                continue
            where = f"graph input {info.name!r}"
            declared = info.type.tensor_type.elem_type if info.type.HasField("tensor_type") else 0
            if isinstance(self.dtype, Mapping):
                dtype = self.dtype.get(info.name)
            else:  # the blanket default applies only where the graph gives no element type
                dtype = None if declared else self.dtype
            shape, dtype = _value_info_type(info, self.shape.get(info.name), dtype, where)
            known.discard(info.name)
            var = self.builder.input(info.name, shape, dtype)
            self.values[info.name] = var
            variables.append(var)
        if known:
            names = ", ".join(sorted(known))
            inputs = ", ".join(v.name_hint for v in variables) or "none"
            raise FrontendError(f"{SOURCE}: a shape is given for {names}, but the graph has no such input (inputs: {inputs})")
        return variables

    def convert_nodes(self, nodes) -> list[UnsupportedOp]:
        """Convert in order; a node that cannot be converted poisons its outputs and is reported."""
        unsupported = []
        poisoned: set[str] = set()
        for node in nodes:
            name = node.name or (node.output[0] if node.output else node.op_type)
            if any(i in poisoned for i in node.input if i):
                poisoned.update(o for o in node.output if o)
                continue
            domain = node.domain if node.domain != "ai.onnx" else ""
            where = f"node {name!r} ({node.op_type})"
            with self.builder.at(where):
                try:
                    outputs = self.convert_node(node, domain, where)
                except NodeUnsupported as exc:
                    unsupported.append(UnsupportedOp(node.op_type, name, exc.message))
                    poisoned.update(o for o in node.output if o)
                    continue
                except FrontendError:
                    raise
                except TranspileError as exc:
                    raise self.builder.error(exc.message) from None
            for out_name, value in zip(node.output, outputs):
                if out_name:
                    self.values[out_name] = value
        return unsupported

    def convert_subgraph(self, graph, bindings: Mapping) -> list:
        """The output values of `graph` (an If branch, a Loop or Scan body), its inputs bound to `bindings`.

        The subgraph sees every value of the enclosing scopes; what it defines stays inside it. A
        subgraph node that cannot be converted makes the enclosing node unsupported, naming it.
        """
        missing = [info.name for info in graph.input if info.name not in bindings]
        if missing:
            raise self.builder.error(f"subgraph {graph.name!r}: no value for its input(s) {missing} (importer bug)")
        enclosing = self.values
        self.values = dict(enclosing)
        try:
            for tensor in graph.initializer:
                self.values[tensor.name] = self.builder.const(tensor_value(tensor, f"initializer {tensor.name!r}"))
            self.values.update(bindings)
            unsupported = self.convert_nodes(graph.node)
            if unsupported:
                raise NodeUnsupported(f"subgraph {graph.name!r}: " + "; ".join(str(u) for u in unsupported))
            outputs = []
            for info in graph.output:
                if info.name not in self.values:
                    raise self.builder.error(f"subgraph {graph.name!r}: output {info.name!r} is produced by no node")
                outputs.append(self.values[info.name])
            return outputs
        finally:
            self.values = enclosing

    def convert_node(self, node, domain: str, where: str) -> list:
        inputs = []
        for input_name in node.input:
            if not input_name:
                inputs.append(None)
            elif input_name not in self.values:
                raise self.builder.error(f"input {input_name!r} is produced by no earlier node, initializer or graph input")
            else:
                inputs.append(self.values[input_name])
        attributes = attribute_values(node, where)
        opset = self.opsets.get(domain, 1)
        ctx = NodeContext(self.builder, node, inputs, opset, attributes, self)
        result = lookup_converter(domain, node.op_type)(ctx)
        outputs = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(outputs) < len([o for o in node.output if o]):
            raise self.builder.error(f"the converter made {len(outputs)} output(s) for {len(node.output)} (importer bug)")
        return outputs


def _walk_nodes(graph):
    """Every node of `graph` and of the subgraphs in its attributes, with its canonical domain."""
    for node in graph.node:
        yield node, (node.domain if node.domain != "ai.onnx" else "")
        for attribute in node.attribute:
            for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                yield from _walk_nodes(sub)


def from_onnx(model, shape: Mapping | None = None, dtype="float32", opset: int | None = None, freeze_params: bool = True):
    """Convert an ONNX model into `(IRModule, params)`, as TVM's `relay.frontend.from_onnx`.

    model: an `onnx.ModelProto`, its serialized bytes, or a path to a .onnx file.
    shape: {input name: shape} overriding the graph's input shapes (-1/None for unknown dims).
    dtype: the dtype of inputs whose type the graph does not give (str, or {name: dtype}).
    opset: overrides the model's default-domain opset.
    freeze_params: initializers become constants (params is then empty); otherwise they become
        parameters of @main after the graph inputs, with their values in params.
    """
    proto = load_model(model)
    importer = OnnxImporter(proto, shape, dtype, opset, freeze_params)
    return importer.run()
