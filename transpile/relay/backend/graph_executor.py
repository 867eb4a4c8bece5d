"""TVM's `relay.build` + graph executor (`tvm.contrib.graph_executor.GraphModule`) on transpile.

    lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x); m.run(); y = m.get_output(0).numpy()

`relay.build` compiles @main (params bound as constants) with the backend TRANSPILE_TVM_BACKEND
names. `get_source("asm" | "ll" | "c")` (also on `.lib` and `.lib.imported_modules[0]`) is the
code of the program's kernels compiled by the shared kernel pipeline for the target relay.build
was given ("llvm -mcpu=cascadelake" gives cascadelake code on any machine), whichever backend
executes. As in TVM's graph executor, a tuple result is flattened into numbered outputs, inputs
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
    return GraphExecutorFactoryModule(ir_mod, params or {}, mod_name, target=_cpu_target(target))


def _cpu_target(target):
    """The one llvm/c target of relay.build's `target` (a {kind: target} map or a list holds it)."""
    if isinstance(target, dict):
        target = next(iter(target.values()), None)
    elif isinstance(target, (list, tuple)):
        target = target[0] if target else None
    return target


_SOURCE_FORMATS = {"": "ll", "ll": "ll", "llvm": "ll", "asm": "asm", "s": "asm", "c": "c"}


def kernel_source(ir_mod, target, fmt: str = "asm") -> str:
    """The source of @main's kernels (the shared pipeline's, with the layouts of backends whose
    kernels TVM compiles) compiled for `target`: assembly ("asm"/"s"), LLVM IR ("ll"/"llvm"/"")
    or TVM's portable C ("c", which ignores the target's CPU)."""
    import tvm

    from ...kernels.build import scheduled_functions
    from ...kernels.target import c_target, kernel_target
    from ...pipeline import lower_to_lir

    kind = _SOURCE_FORMATS.get(fmt)
    if kind is None:
        raise TranspileError(f"get_source: unknown format {fmt!r} (use one of {sorted(_SOURCE_FORMATS)})")
    compile_for = c_target() if kind == "c" else kernel_target(target)
    program = lower_to_lir(ir_mod, "main", options={"alter_layout": True})
    if not program.kernels:
        return ""
    functions, _ = scheduled_functions(program.kernels, compile_for)
    module = tvm.compile(tvm.IRModule(functions), target=compile_for).mod
    return module.inspect_source() if kind == "c" else module.inspect_source(kind)


class GraphExecutorFactoryModule:
    """What relay.build returns: `lib[mod_name](device)` makes the module GraphModule wraps."""

    def __init__(self, ir_mod, params, mod_name="default", target=None):
        self.ir_mod = ir_mod
        self.params = {name: to_ndarray(value) for name, value in params.items()}
        self.libmod_name = mod_name
        self.target = target
        self.backend = selected_backend()
        self._compiled = compile_callable(None, ir_mod, kind="graph", params=params, backend=self.backend)
        self._sources: dict = {}

    def get_source(self, fmt: str = "") -> str:
        """The kernels' code for the build's target (see `kernel_source`), compiled once per format."""
        kind = _SOURCE_FORMATS.get(fmt, fmt)
        if kind not in self._sources:
            from ..bind import bind_params_in_module

            mod = bind_params_in_module(self.ir_mod, dict(self.params), "main") if self.params else self.ir_mod
            self._sources[kind] = kernel_source(mod, self.target, fmt)
        return self._sources[kind]

    @property
    def lib(self):
        """TVM's compiled host module: here the kernels (`get_source`), also as `imported_modules[0]`."""
        return _KernelModule(self)

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


class _KernelModule:
    """`factory.lib`: the compiled-kernels view of a built module (TVM's runtime.Module methods)."""

    type_key = "llvm"

    def __init__(self, factory):
        self._factory = factory

    def get_source(self, fmt: str = "") -> str:
        return self._factory.get_source(fmt)

    inspect_source = get_source

    @property
    def imported_modules(self) -> list:
        return [self]


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
