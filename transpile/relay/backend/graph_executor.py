"""TVM's `relay.build` + graph executor (`tvm.contrib.graph_executor.GraphModule`) on transpile.

    lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x); m.run(); y = m.get_output(0).numpy()

`relay.build` compiles @main (params bound as constants) with the backend TRANSPILE_TVM_BACKEND
names. As in TVM's graph executor, a tuple result is flattened into numbered outputs, inputs
keep their values between runs, and the "graph"/"aot" executor kinds return a list for a tuple.
"""

from __future__ import annotations

import json
import warnings

import numpy as np

from ...errors import TranspileError
from .interpreter import Executor
from .runner import compile_callable, host_target, selected_backend
from .values import NDArray, to_ndarray

__all__ = ["build", "create", "GraphExecutorFactoryModule", "GraphExecutorModule", "GraphModule", "GraphExecutor", "AotExecutor"]


class GraphExecutor(Executor):
    """The "graph" executor kind of create_executor: a tuple result comes back as a list."""

    kind = "graph"


class AotExecutor(Executor):
    """The "aot" executor kind of create_executor (results as the graph executor's)."""

    kind = "graph"


def build(
    ir_mod,
    target=None,
    target_host=None,
    executor=None,
    runtime=None,
    workspace_memory_pools=None,
    constant_memory_pools=None,
    params=None,
    mod_name="default",
):
    """The factory module of @main of `ir_mod` (a relay.Function is wrapped as @main)."""
    from ..bind import bind_params_by_name
    from ..expr import Function
    from ..module import IRModule

    if isinstance(ir_mod, Function):
        if params:
            ir_mod = bind_params_by_name(ir_mod, {k: np.asarray(v) for k, v in params.items()})
            params = None
        ir_mod = IRModule.from_expr(ir_mod)
    if not isinstance(ir_mod, IRModule):
        raise TranspileError(f"relay.build expects a tvm.IRModule, got {type(ir_mod).__name__}")
    host_target(target)
    return GraphExecutorFactoryModule(ir_mod, params or {}, mod_name)


class GraphExecutorFactoryModule:
    """What relay.build returns: `lib[mod_name](device)` makes the module GraphModule wraps."""

    def __init__(self, ir_mod, params, mod_name="default"):
        self.ir_mod = ir_mod
        self.params = {name: to_ndarray(value) for name, value in params.items()}
        self.libmod_name = mod_name
        self.backend = selected_backend()
        self._compiled = compile_callable(None, ir_mod, kind="graph", params=params, backend=self.backend)

    def __getitem__(self, name):
        if name != self.libmod_name:
            raise TranspileError(f"the built library is named {self.libmod_name!r}, not {name!r}")
        return lambda device=None: GraphExecutorModule(self._compiled, device)

    def get_params(self) -> dict:
        return dict(self.params)

    def get_graph_json(self) -> str:
        """A JSON summary of the graph (entry, inputs, backend): transpile builds no TVM graph JSON."""
        names = list(self._compiled.param_names)
        return json.dumps({"transpile_graph": self.libmod_name, "inputs": names, "backend": self.backend})

    graph_json = property(get_graph_json)

    def get_lib(self):
        return self

    def __iter__(self):
        # TVM <= 0.19 still let `graph, lib, params = relay.build(...)` unpack the factory (deprecated);
        # graph_executor.create(graph, lib, dev) takes the three back.
        warnings.warn(
            "unpacking relay.build's result as (graph, lib, params) is TVM's legacy form; use "
            "graph_executor.GraphModule(lib['default'](dev))",
            DeprecationWarning,
            stacklevel=2,
        )
        return iter((self.graph_json, self, self.get_params()))


def create(graph_json_str, libmod, device=None):
    """TVM's legacy graph_executor.create(graph, lib, dev), for the triple relay.build unpacks to."""
    if not isinstance(libmod, GraphExecutorFactoryModule):
        raise TranspileError(
            f"graph_executor.create takes the lib that relay.build returned, got {type(libmod).__name__}"
        )
    return GraphModule(libmod[libmod.libmod_name](device))


class GraphExecutorModule:
    """One instance of a built graph: its inputs (by position and name), last outputs, and run()."""

    def __init__(self, compiled, device=None):
        self.compiled = compiled
        self.device = device
        self.inputs: list = [None] * len(compiled.params)
        self.outputs: list = []

    def input_index(self, key) -> int:
        names = self.compiled.param_names
        if isinstance(key, str):
            if key not in names:
                return -1
            return names.index(key)
        if isinstance(key, (int, np.integer)) and 0 <= key < len(names):
            return int(key)
        return -1

    def run(self):
        missing = [name for name, value in zip(self.compiled.param_names, self.inputs) if value is None]
        if missing:
            raise TranspileError(f"the graph's inputs {missing} are not set (use set_input)")
        self.outputs = _flatten(self.compiled(*self.inputs))


def _flatten(result) -> list:
    """The tensors of a (nested) tuple result, in order: the graph executor's numbered outputs."""
    if isinstance(result, list):
        flat = []
        for field in result:
            flat.extend(_flatten(field))
        return flat
    if not isinstance(result, np.ndarray):
        raise TranspileError(
            f"the graph executor returns tensors and tuples of tensors; the program returned {type(result).__name__}"
        )
    return [result]


class GraphModule:
    """tvm.contrib.graph_executor.GraphModule over a built module (`lib["default"](dev)`)."""

    def __init__(self, module):
        if not isinstance(module, GraphExecutorModule):
            raise TranspileError(
                f"GraphModule expects lib['default'](device) from relay.build, got {type(module).__name__}"
            )
        self.module = module

    def set_input(self, key=None, value=None, **params):
        """Sets the input `key` (name or index) to `value`; keyword inputs too (unknown names are ignored, as in TVM)."""
        if key is not None:
            index = self.module.input_index(key)
            if index < 0:
                raise TranspileError(f"Could not find '{key}' in graph's inputs {self.module.compiled.param_names}")
            self.module.inputs[index] = _input_copy(value)
        for name, param in params.items():
            index = self.module.input_index(name)
            if index >= 0:
                self.module.inputs[index] = _input_copy(param)

    set_input_zero_copy = set_input

    def run(self, **input_dict):
        if input_dict:
            self.set_input(**input_dict)
        self.module.run()

    def get_num_outputs(self) -> int:
        return len(self.module.outputs)

    def get_num_inputs(self) -> int:
        return len(self.module.inputs)

    def get_input(self, index, out=None):
        position = self.module.input_index(index)
        if position < 0 or self.module.inputs[position] is None:
            raise TranspileError(f"the graph has no input {index!r} set")
        value = to_ndarray(self.module.inputs[position])
        return NDArray.copyfrom(out.view(NDArray), value) if out is not None else value

    def get_input_index(self, name) -> int:
        return self.module.input_index(name)

    def get_input_info(self):
        """({name: shape}, {name: dtype}) of the graph's inputs, from their declared types."""
        shapes, dtypes = {}, {}
        for param in self.module.compiled.params:
            ty = getattr(param, "checked_type_", None) or param.type_annotation
            if ty is not None and hasattr(ty, "shape"):
                shapes[param.name_hint] = tuple(int(d) if isinstance(d, int) else -1 for d in ty.shape)
                dtypes[param.name_hint] = ty.dtype
        return shapes, dtypes

    def get_output(self, index, out=None):
        if not 0 <= index < len(self.module.outputs):
            raise TranspileError(
                f"the graph has {len(self.module.outputs)} outputs (after run()), not an output {index}"
            )
        value = self.module.outputs[index]
        if out is not None:
            NDArray.copyfrom(out.view(NDArray), value)
            return out
        return value


def _input_copy(value):
    """The graph executor copied inputs into its own buffers: later changes to `value` do not show."""
    from .values import to_runtime

    converted = to_runtime(value)
    return np.array(converted, copy=True) if isinstance(converted, np.ndarray) else converted
