"""TVM's Relay VM API (`relay.vm.compile`, `VMCompiler`, `runtime.vm.VirtualMachine`) on transpile.

    exe = relay.vm.compile(mod, target="llvm", params=params)
    vm = runtime.vm.VirtualMachine(exe, tvm.cpu())
    out = vm.invoke("main", x)          # or vm.set_input("main", x); vm.invoke("main"); vm.run(x)

An Executable is the module (with `params` bound into @main) compiled by the backend
TRANSPILE_TVM_BACKEND names; @main is compiled at once (so compile errors surface in
`compile`, as in TVM), other globals when first invoked. Results look like the VM's: tensors as
NDArray, tuples and ADT values as ADT containers (`.tag`, `len`, indexing).
"""

from __future__ import annotations

import time

import numpy as np

from ...errors import TranspileError
from .interpreter import Executor
from .runner import compile_callable, host_target, selected_backend
from .values import ADT, NDArray

__all__ = ["compile", "VMCompiler", "Executable", "VirtualMachine", "VMExecutor"]


def compile(mod, target=None, target_host=None, params=None):  # noqa: A001 - TVM's name
    """The Executable of `mod` (params {name: array} bound to @main's parameters of those names)."""
    compiler = VMCompiler()
    if params:
        compiler.set_params(params)
    compiler.lower(mod, target, target_host)
    compiler.codegen()
    return compiler.get_exec()


def _module_of(mod):
    from ..expr import Function
    from ..module import IRModule

    if isinstance(mod, Function):
        return IRModule.from_expr(mod)
    if not isinstance(mod, IRModule):
        raise TranspileError(f"relay.vm.compile expects a tvm.IRModule, got {type(mod).__name__}")
    return mod


class VMCompiler:
    """TVM's two-step VM compiler: lower(mod, target) then codegen(); get_exec() returns the Executable."""

    def __init__(self):
        self._params: dict = {}
        self._lowered = None
        self._exec = None

    def set_params(self, params):
        self._params.update(params)

    def get_params(self) -> dict:
        return dict(self._params)

    def lower(self, mod, target=None, target_host=None):
        host_target(target)
        self._lowered = _module_of(mod)
        self._exec = None

    def codegen(self):
        if self._lowered is None:
            raise TranspileError("VMCompiler.codegen() needs lower(mod, target) first")
        self._exec = Executable(self._lowered, self._params)

    def get_exec(self) -> "Executable":
        if self._exec is None:
            raise TranspileError("VMCompiler.get_exec() needs lower(mod, target) and codegen() first")
        return self._exec

    def optimize(self, mod, target=None, target_host=None, params=None):
        """(the module after the graph-level passes at the current PassContext's opt_level, params)."""
        from ..bind import bind_params_in_module
        from ..transform import InferType, optimize
        from ..transform.infra import PassContext

        host_target(target)
        module = _module_of(mod)
        merged = {**self._params, **(params or {})}
        if merged and "main" in module:
            module = bind_params_in_module(module, merged)
        optimized = optimize(InferType()(module), PassContext.current().opt_level)
        return optimized, merged


class Executable:
    """A module compiled for the VM: its globals, each a callable compiled on first use."""

    def __init__(self, mod, params=None):
        self.module = mod
        self.params = dict(params or {})
        self.backend = selected_backend()
        self._functions: dict = {}
        if "main" in mod:
            self.function("main")

    def function(self, name: str):
        """The compiled global `name`."""
        compiled = self._functions.get(name)
        if compiled is None:
            from ..expr import GlobalVar

            if name not in self.module:
                raise TranspileError(f"the VM executable has no function @{name}")
            params = self.params if name == "main" else None
            compiled = compile_callable(GlobalVar(name), self.module, kind="vm", params=params, backend=self.backend)
            self._functions[name] = compiled
        return compiled

    def get_function_params(self, func_name: str) -> list[str]:
        return self.function(func_name).param_names

    def get_function_arity(self, func_name: str) -> int:
        return len(self.function(func_name).params)

    @property
    def globals(self) -> list[str]:
        return [gv.name_hint for gv in self.module.get_global_vars()]


class VirtualMachine:
    """Runs an Executable: set_input / invoke / run / invoke_stateful + get_outputs, as TVM's VM."""

    def __init__(self, exe, device=None, memory_cfg=None):
        if not isinstance(exe, Executable):
            raise TranspileError(f"VirtualMachine expects a relay.vm Executable, got {type(exe).__name__}")
        self._exec = exe
        self.device = device
        self._inputs: dict[str, list] = {}
        self._outputs: list = []

    def set_input(self, func_name, *args, **kwargs):
        """Stores the arguments of `func_name` for the next invoke; named ones go to their parameter."""
        names = self._exec.get_function_params(func_name)
        if not kwargs:
            ordered = list(args)
        else:
            # As in TVM, names that are not parameters are ignored (kwargs may hold a whole params dict).
            ordered = [kwargs.get(name, _MISSING) for name in names]
            holes = [i for i, value in enumerate(ordered) if value is _MISSING]
            if len(holes) != len(args):
                raise TranspileError(
                    f"@{func_name} takes {len(names)} arguments {names}; got {len(args)} positional and "
                    f"named {sorted(kwargs)}"
                )
            for hole, value in zip(holes, args):
                ordered[hole] = value
        if len(ordered) != len(names):
            raise TranspileError(f"@{func_name} takes {len(names)} arguments {names}, got {len(ordered)}")
        self._inputs[func_name] = ordered

    def set_one_input(self, func_name, *args, **kwargs):
        """Sets one argument of `func_name`, by index or name: set_one_input(f, 0, x) or (f, x=...)."""
        if kwargs:
            if args or len(kwargs) != 1:
                raise TranspileError("set_one_input takes one (index or name, value) pair")
            ((key, value),) = kwargs.items()
        elif len(args) == 2:
            key, value = args
        else:
            raise TranspileError("set_one_input takes one (index or name, value) pair")
        names = self._exec.get_function_params(func_name)
        if isinstance(key, str):
            if key not in names:
                raise TranspileError(f"@{func_name} has no parameter named {key} (its parameters: {names})")
            key = names.index(key)
        if not 0 <= key < len(names):
            raise TranspileError(f"@{func_name} has no parameter {key} (it takes {len(names)})")
        stored = self._inputs.setdefault(func_name, [_MISSING] * len(names))
        stored[key] = value

    def invoke(self, func_name, *args, **kwargs):
        """The result of `func_name` on the given arguments (or those set with set_input)."""
        if args or kwargs:
            self.set_input(func_name, *args, **kwargs)
        compiled = self._exec.function(func_name)
        inputs = self._inputs.get(func_name, [])
        missing = [compiled.param_names[i] for i, value in enumerate(inputs) if value is _MISSING]
        if missing or len(inputs) != len(compiled.params):
            missing = missing or compiled.param_names[len(inputs) :]
            raise TranspileError(f"@{func_name} is missing arguments {missing}: pass them or use set_input")
        return compiled(*inputs)

    def run(self, *args, **kwargs):
        return self.invoke("main", *args, **kwargs)

    def invoke_stateful(self, func_name, *args, **kwargs):
        """Runs `func_name` keeping its result for get_outputs()."""
        result = self.invoke(func_name, *args, **kwargs)
        self._outputs = list(result) if isinstance(result, ADT) and result.constructor is None else [result]

    def get_outputs(self) -> list:
        return list(self._outputs)

    def invoke_with_outputs(self, func_name, input_args, output_args):
        """Runs `func_name` with named inputs and copies its tensors into the arrays `output_args`."""
        if input_args:
            self.set_input(func_name, **input_args)
        result = self.invoke(func_name)
        results = list(result) if isinstance(result, ADT) and result.constructor is None else [result]
        if len(results) != len(output_args):
            raise TranspileError(f"@{func_name} returns {len(results)} tensors, {len(output_args)} outputs given")
        for out, value in zip(output_args, results):
            if not isinstance(out, np.ndarray):
                raise TranspileError(f"outputs must be arrays (tvm.nd.array), got {type(out).__name__}")
            NDArray.copyfrom(out.view(NDArray), value)

    def get_input_index(self, input_name, func_name="main") -> int:
        names = self._exec.get_function_params(func_name)
        return names.index(input_name) if input_name in names else -1

    def benchmark(
        self, device=None, *args, func_name="main", repeat=5, number=5, min_repeat_ms=None, end_to_end=False, **kwargs
    ):
        """Wall-clock times of `func_name` (mean over `number` calls, `repeat` times) as a BenchmarkResult."""
        from tvm.runtime.module import BenchmarkResult

        if args or kwargs:
            self.set_input(func_name, *args, **kwargs)
        repeat, number = max(int(repeat), 1), max(int(number), 1)
        results = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                self.invoke(func_name)
            results.append((time.perf_counter() - start) / number)
        return BenchmarkResult(results)


class _Missing:
    __slots__ = ()

    def __repr__(self):
        return "<argument not set>"


_MISSING = _Missing()


class VMExecutor(Executor):
    """The "vm" executor kind of create_executor: VM-style results (ADT containers)."""

    kind = "vm"
