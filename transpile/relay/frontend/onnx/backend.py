"""An `onnx.backend.base.Backend` over transpile: import with `from_onnx`, compile with any transpile backend, run.

    from transpile.relay.frontend.onnx.backend import TranspileBackend
    rep = TranspileBackend.prepare(model, backend="cpp")
    outputs = rep.run([x])                      # numpy arrays, in graph-output order

    onnx.backend.test.BackendTest(TranspileBackend.for_backend("cpp"), __name__)

Relay types are static, ONNX graphs often are not, so a prepared model specializes itself on what
it is run with, and caches one compiled function per specialization:

* Shapes. A graph input with unknown dimensions (or no shape at all) is imported with the shape
  of the array it is run with (`from_onnx(shape=...)`); a new shape compiles a new function.
* Values. Some inputs feed computations whose result must be known at import: the target shape
  of `Expand(X, shape)` or `Reshape`, the sizes of `Resize`, the bounds of `Range`... When the
  import fails for that reason (the importer's "must be a constant at import" / "must be known at
  import" errors), one graph input upstream of the failing node is bound to the value it is run
  with (it becomes an initializer, so it folds at import) and the import is retried, until it
  succeeds or no candidate is left. Candidates are small (scalars and vectors of at most
  `VALUE_SPECIALIZATION_LIMIT` elements), tried most shape-like first (see `_input_to_bind`).
  Bound inputs stay bound for the life of the prepared model; each new value compiles a new
  function. Large inputs are never bound: a data-dependent output shape (NonZero on a tensor)
  stays an error rather than a computation folded away at import. The same binding (among all
  small inputs, as the failing kernel names no ONNX node) happens when the import succeeds with a
  data-dependent shape (`Range(0, n, 1)` with `n` an input) that the compiling backend cannot
  handle (cpp, tir). `specialize_values=False` turns this off.

Models the importer cannot convert raise `UnsupportedOperatorsError` (listing every unsupported
node) from `prepare`; other import failures raise `FrontendError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ....backends.base import DYNAMIC_SHAPES
from ....errors import TranspileError, UnsupportedFeatureError
from ..common import FrontendError, UnsupportedOperatorsError
from .importer import SOURCE, OnnxImporter, _walk_nodes, from_onnx, load_model, onnx_dtype

try:
    import onnx
    from onnx import helper, numpy_helper
    from onnx.backend.base import Backend, BackendRep, Device, DeviceType
except ImportError as exc:  # pragma: no cover - onnx is an optional extra
    raise FrontendError(
        "the ONNX backend needs the `onnx` package: pip install 'transpile[onnx]' (or pip install onnx)"
    ) from exc

__all__ = ["TranspileBackend", "TranspileBackendRep", "VALUE_SPECIALIZATION_LIMIT", "prepare", "run_model"]

DEFAULT_BACKEND = "interpreter"
# Graph inputs bound to their run-time values when an import needs them constant: at most this
# many elements and rank <= 1 (shapes, sizes, scales, pads, axes, scalars), never data tensors.
VALUE_SPECIALIZATION_LIMIT = 64
# The importer's words for "this value/shape must be known at import" (GraphBuilder.require_value
# and GraphBuilder.static_shape).
_NEEDS_VALUES = ("must be a constant at import", "must be known at import")
_FAILING_NODE = re.compile(r"^" + re.escape(SOURCE) + r": node (['\"])(.*?)\1 \(")
# Keyword arguments onnx's test runner passes to prepare() for its own comparison.
_RUNNER_KWARGS = ("rtol", "atol")


class DeviceNotSupportedError(TranspileError):
    """transpile compiles for the host CPU only."""


@dataclass
class _Specialization:
    """One compiled function and the graph inputs it takes (those not bound to values), in order."""

    function: Callable
    argument_names: list[str]


class TranspileBackendRep(BackendRep):
    """A prepared ONNX model: compiled on first use per input-shape (and bound-value) signature."""

    def __init__(self, model, backend: str, shape: Mapping | None, specialize_values: bool, options: dict):
        self.model = model
        self.backend = backend
        self.specialize_values = specialize_values
        self.options = options
        self.user_shapes = dict(shape or {})
        initializers = {t.name for t in model.graph.initializer}
        self.inputs = [info for info in model.graph.input if info.name not in initializers]
        self.input_names = [info.name for info in self.inputs]
        self.output_names = [info.name for info in model.graph.output]
        self.dynamic_inputs = {info.name for info in self.inputs if not self._static(info)}
        self.bound_inputs: set[str] = set()  # grows when an import needs an input's value
        self._specializations: dict[tuple, _Specialization] = {}

    def _static(self, info) -> bool:
        """Whether the input's shape is fully known before running (from `shape=` or the graph)."""
        if info.name in self.user_shapes:
            return all(d is not None and int(d) >= 0 for d in self.user_shapes[info.name])
        return _has_static_shape(info)

    @property
    def specializations(self) -> int:
        """How many functions have been compiled so far."""
        return len(self._specializations)

    # ------------------------------------------------------------------ running
    def run(self, inputs: Any, **kwargs: Any) -> list:
        """The graph outputs (numpy arrays; lists of them for sequence outputs) for `inputs`.

        `inputs`: a list in graph-input order (initializers excluded), a dict by input name, or
        one array for a single-input model.
        """
        feeds = self._feeds(inputs)
        key = self._key(feeds)
        specialization = self._specializations.get(key)
        if specialization is None:
            specialization = self._specialize(feeds)
            self._specializations[self._key(feeds)] = specialization  # bound_inputs may have grown
        result = specialization.function(*(feeds[name] for name in specialization.argument_names))
        results = [result] if len(self.output_names) == 1 else list(result)
        return [_to_onnx_value(value) for value in results]

    def _feeds(self, inputs) -> dict[str, np.ndarray]:
        if isinstance(inputs, Mapping):
            unknown = sorted(set(inputs) - set(self.input_names))
            if unknown:
                raise FrontendError(f"{SOURCE}: the model has no input(s) {unknown} (inputs: {self.input_names})")
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise FrontendError(f"{SOURCE}: no value given for input(s) {missing}")
            values = [inputs[n] for n in self.input_names]
        else:
            values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            if len(values) != len(self.input_names):
                raise FrontendError(
                    f"{SOURCE}: the model takes {len(self.input_names)} input(s) {self.input_names}, got {len(values)}"
                )
        return {name: _as_array(value, name) for name, value in zip(self.input_names, values)}

    def _key(self, feeds) -> tuple:
        shapes = tuple((name, feeds[name].shape) for name in self.input_names if name in self.dynamic_inputs)
        values = tuple(
            (name, feeds[name].dtype.str, feeds[name].shape, feeds[name].tobytes())
            for name in sorted(self.bound_inputs)
        )
        return shapes, values

    # ------------------------------------------------------------------ specializing
    def _specialize(self, feeds) -> _Specialization:
        while True:
            mod, params = self._import(feeds)
            try:
                return self._compile(mod, params)
            except UnsupportedFeatureError as exc:
                # The import left a shape depending on input values that this backend must know statically.
                name = self._input_to_bind(feeds) if self.specialize_values and _is_shape_dependency(exc) else None
                if name is None:
                    raise
                self.bound_inputs.add(name)

    def _input_to_bind(self, feeds, among=None) -> str | None:
        """The graph input (of `among`, default all) to bind to its value next, if any is small enough.

        One at a time, most shape-like first: smaller before larger, integers before floats, later
        inputs before earlier ones (ONNX signatures put data first: `TopK(X, K)`, `CumSum(x, axis)`),
        so data stays data where a shape input explains the failure.
        """
        names = set(self.input_names) if among is None else among & set(self.input_names)
        position = {name: i for i, name in enumerate(self.input_names)}
        candidates = [
            name
            for name in names - self.bound_inputs
            if feeds[name].ndim <= 1 and feeds[name].size <= VALUE_SPECIALIZATION_LIMIT
        ]
        if not candidates:
            return None

        def shape_likeness(name):
            value = feeds[name]
            return (value.size, value.dtype.kind not in "iub", -position[name])

        return min(candidates, key=shape_likeness)

    def _compile(self, mod, params) -> _Specialization:
        import transpile

        function = transpile.compile(mod, backend=self.backend, params=params or None, **self.options)
        return _Specialization(function, [p.name_hint for p in mod["main"].params])

    def _import(self, feeds, bind_values: bool = True):
        while True:
            bound = {name: feeds[name] for name in self.bound_inputs}
            model = _bind_inputs(self.model, bound) if bound else self.model
            shapes = dict(self.user_shapes)
            shapes.update({name: feeds[name].shape for name in self.dynamic_inputs})
            shapes = {name: s for name, s in shapes.items() if name not in bound}
            try:
                return from_onnx(model, shape=shapes or None)
            except UnsupportedOperatorsError:
                raise
            except FrontendError as exc:
                name = self._input_needed(exc, feeds) if self.specialize_values and bind_values else None
                if name is None:
                    raise
                self.bound_inputs.add(name)

    def _input_needed(self, error: FrontendError, feeds) -> str | None:
        """The next graph input to bind when the import needed a constant: upstream of the failing node."""
        message = error.message
        if not any(phrase in message for phrase in _NEEDS_VALUES):
            return None
        match = _FAILING_NODE.match(message)
        return self._input_to_bind(feeds, _upstream_inputs(self.model.graph, match.group(2)) if match else None)

    def prepare_now(self) -> None:
        """Import and compile at once when no input needs a run-time shape; raise what the import raises."""
        if self.dynamic_inputs:
            return
        feeds = {}
        for info in self.inputs:
            ttype = info.type.tensor_type
            shape = self.user_shapes.get(info.name) or [d.dim_value for d in ttype.shape.dim]
            feeds[info.name] = np.zeros(shape, onnx_dtype(ttype.elem_type, f"graph input {info.name!r}"))
        # Where input values matter, compile at run time, once they are known.
        try:
            mod, params = self._import(feeds, bind_values=False)
        except UnsupportedOperatorsError:
            raise
        except FrontendError as exc:
            if self.specialize_values and any(phrase in exc.message for phrase in _NEEDS_VALUES):
                return
            raise
        try:
            self._specializations[self._key(feeds)] = self._compile(mod, params)
        except UnsupportedFeatureError as exc:
            if not (self.specialize_values and _is_shape_dependency(exc) and self._input_to_bind(feeds)):
                raise


class TranspileBackend(Backend):
    """transpile as an ONNX backend; `for_backend(name)` fixes which transpile backend compiles."""

    default_backend = DEFAULT_BACKEND

    @classmethod
    def for_backend(cls, backend: str) -> type[TranspileBackend]:
        """A TranspileBackend subclass compiling with `backend` (for APIs that take a Backend class)."""
        return type(f"TranspileBackend_{backend}", (cls,), {"default_backend": backend})

    @classmethod
    def is_compatible(cls, model, device: str = "CPU", **kwargs: Any) -> bool:
        """Whether every node (subgraphs included) has a converter; conversion itself may still fail."""
        try:
            _check_converters(load_model(model))
        except FrontendError:
            return False
        return cls.supports_device(device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            return Device(device).type == DeviceType.CPU
        except (AttributeError, ValueError):
            return False

    @classmethod
    def prepare(
        cls,
        model,
        device: str = "CPU",
        backend: str | None = None,
        shape: Mapping | None = None,
        specialize_values: bool = True,
        **options: Any,
    ) -> TranspileBackendRep:
        """A TranspileBackendRep of `model` (ModelProto, bytes or path), compiled now when its input shapes are static.

        backend: the transpile backend ("interpreter", "python", "cpp", "tir", ...).
        shape: {input name: shape} fixing input shapes (as from_onnx's `shape=`).
        specialize_values: bind small shape-like inputs to their run-time values when the
            import needs them constant (see the module docstring).
        options: passed to `transpile.compile`.
        """
        if not cls.supports_device(device):
            raise DeviceNotSupportedError(f"transpile runs ONNX models on the CPU only, not on {device!r}")
        for name in _RUNNER_KWARGS:
            options.pop(name, None)
        proto = load_model(model)
        _check_converters(proto)
        rep = TranspileBackendRep(proto, backend or cls.default_backend, shape, specialize_values, options)
        rep.prepare_now()
        return rep

    @classmethod
    def run_model(cls, model, inputs: Any, device: str = "CPU", **kwargs: Any) -> list:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs: Any, device: str = "CPU", outputs_info=None, **kwargs: Any) -> list:
        """Run one NodeProto on `inputs` (a list in node-input order, or a dict by name)."""
        opset = kwargs.pop("opset_version", None)
        model = _single_node_model(node, inputs, outputs_info, opset)
        return cls.prepare(model, device, **kwargs).run(inputs)


prepare = TranspileBackend.prepare
run_model = TranspileBackend.run_model


# ---------------------------------------------------------------------- helpers


def _is_shape_dependency(error: UnsupportedFeatureError) -> bool:
    """The backend refused a shape known only at run time (an output shape computed from input values)."""
    return "data-dependent output shape" in error.feature or error.feature == DYNAMIC_SHAPES


def _check_converters(model) -> None:
    OnnxImporter(model, None, "float32", None, True).check_supported(model.graph)


def _has_static_shape(info) -> bool:
    ttype = info.type.tensor_type if info.type.HasField("tensor_type") else None
    if ttype is None or not ttype.HasField("shape"):
        return False
    return all(d.HasField("dim_value") and d.dim_value >= 0 for d in ttype.shape.dim)


def _as_array(value, name: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        raise FrontendError(f"{SOURCE}: input {name!r} is a sequence; only tensor inputs are supported")
    return np.asarray(value)


def _to_onnx_value(value):
    """A compiled function's result as onnx's runner compares it: arrays, lists for sequences."""
    from ....runtime import ADTValue

    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, tuple):
        return [_to_onnx_value(v) for v in value]
    if isinstance(value, ADTValue) and value.constructor in ("Cons", "Nil"):
        items = []
        while value.constructor == "Cons":
            items.append(_to_onnx_value(value.fields[0]))
            value = value.fields[1]
        return items
    if isinstance(value, ADTValue):
        raise FrontendError(f"{SOURCE}: a graph output is a {value.constructor} value, which has no ONNX counterpart")
    return np.asarray(value)


def _bind_inputs(model, values: Mapping[str, np.ndarray]):
    """A copy of `model` whose graph inputs named in `values` are initializers holding those values."""
    bound = onnx.ModelProto()
    bound.CopyFrom(model)
    kept = [info for info in bound.graph.input if info.name not in values]
    del bound.graph.input[:]
    bound.graph.input.extend(kept)
    for name, value in values.items():
        bound.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    return bound


def _upstream_inputs(graph, node_name: str) -> set[str] | None:
    """Every value name the node named `node_name` depends on (transitively), or None when no such node."""
    producers = {}
    target = None
    for node in graph.node:
        for out in node.output:
            producers[out] = node
        if (node.name or (node.output[0] if node.output else node.op_type)) == node_name:
            target = node
    if target is None:
        return None
    seen: set[str] = set()
    pending = list(_node_inputs(target))
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        producer = producers.get(name)
        if producer is not None:
            pending.extend(_node_inputs(producer))
    return seen


def _node_inputs(node) -> list[str]:
    """A node's inputs and the outer-scope names its subgraphs read."""
    names = [name for name in node.input if name]
    for attribute in node.attribute:
        for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
            names.extend(name for inner, _ in _walk_nodes(sub) for name in inner.input if name)
    return names


def _single_node_model(node, inputs, outputs_info, opset: int | None):
    """A model whose graph is `node`, its inputs typed from the given arrays."""
    values = [inputs[name] for name in node.input if name] if isinstance(inputs, Mapping) else list(inputs)
    names = [name for name in node.input if name]
    if len(values) != len(names):
        raise FrontendError(f"{SOURCE}: node {node.op_type} has {len(names)} input(s), got {len(values)} value(s)")
    graph_inputs = []
    for name, value in zip(names, values):
        array = np.asarray(value)
        elem_type = helper.np_dtype_to_tensor_dtype(array.dtype)
        graph_inputs.append(helper.make_tensor_value_info(name, elem_type, array.shape))
    graph_outputs = []
    for i, name in enumerate(name for name in node.output if name):
        if outputs_info is not None and i < len(outputs_info):
            dtype, shape = outputs_info[i]
            graph_outputs.append(
                helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)
            )
        else:
            graph_outputs.append(helper.make_empty_tensor_value_info(name))
    graph = helper.make_graph([node], f"{node.op_type}_node", graph_inputs, graph_outputs)
    domain = node.domain if node.domain != "ai.onnx" else ""
    version = opset if opset is not None else onnx.defs.onnx_opset_version()
    opsets = [helper.make_opsetid("", version)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets)
