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

import numpy as np

from ...errors import TranspileError
from .interpreter import Executor
from .runner import compile_callable, host_target, selected_backend
from .values import ADT, NDArray, to_runtime

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
    """A module compiled for the VM: its globals, each a callable compiled on first use.

    Made by compile (from the module, `params` bound into @main), by load_exec (from saved code:
    see vm_serialize.py) or as `Executable(exe.mod)` (TVM's wrapper of a runtime module: the same
    executable). An executable whose late-bound constants are not loaded runs after they are.
    """

    def __new__(cls, mod=None, params=None):
        from .runtime_module import Module

        if isinstance(mod, Module):
            if not isinstance(mod.owner, Executable):
                raise TranspileError(f"Executable expects a VM executable module, got a {mod.type_key} module")
            return mod.owner
        return super().__new__(cls)

    def __init__(self, mod=None, params=None):
        from ..bind import bind_params_in_module
        from .runtime_module import Module

        if isinstance(mod, Module):  # __new__ returned the module's own executable
            return
        if params and "main" in mod:
            mod = bind_params_in_module(mod, {name: to_runtime(value) for name, value in params.items()})
        self._init_state(mod, None, None, selected_backend())
        if "main" in mod:
            self.function("main")

    def _init_state(self, module, text, constants, backend):
        self._module = module
        self._text = text  # with _constants: the program as saved code (the module built from them on demand)
        self._constants = constants
        self._late_bound: set[int] = set()
        self.backend = backend
        self._functions: dict = {}
        self._runtime_module = None

    @property
    def module(self):
        """The Relay program (IRModule) this executable runs."""
        if self._module is None:
            from .vm_serialize import LateBoundConstantsError, program_of

            missing = [i for i, c in enumerate(self._constants) if c is None]
            if missing:
                raise LateBoundConstantsError(
                    f"the executable's {len(missing)} late-bound constant(s) are not loaded: call "
                    "load_late_bound_consts(path) or load_late_bound_consts_from_map(map) first"
                )
            self._module = program_of(self._text, self._constants)
        return self._module

    def function(self, name: str):
        """The compiled global `name`."""
        compiled = self._functions.get(name)
        if compiled is None:
            from ..expr import GlobalVar

            if name not in self.module:
                raise TranspileError(f"the VM executable has no function @{name}")
            compiled = compile_callable(GlobalVar(name), self.module, kind="vm", backend=self.backend)
            self._functions[name] = compiled
        return compiled

    def get_function_params(self, func_name: str) -> list[str]:
        return self.function(func_name).param_names

    def get_function_arity(self, func_name: str) -> int:
        return len(self.function(func_name).params)

    @property
    def globals(self) -> list[str]:
        return [gv.name_hint for gv in self.module.get_global_vars()]

    # ------------------------------------------------------------ saving and loading (vm_serialize.py)

    def _pool(self) -> tuple[str, list]:
        if self._text is None:
            from .vm_serialize import constant_pool

            self._text, self._constants = constant_pool(self._module)
        return self._text, self._constants

    def code(self) -> bytes:
        """The saved form of the executable (its program, without the late-bound constants)."""
        from .vm_serialize import encode_code

        text, constants = self._pool()
        return encode_code(text, constants, self._late_bound, self.backend)

    @property
    def lib(self):
        from .vm_serialize import kernel_library

        return kernel_library(self.backend)

    def save(self):
        """(code bytes, kernel library module), as TVM's Executable.save; load_exec(code, lib) reverses it."""
        return bytearray(self.code()), self.lib

    @staticmethod
    def load_exec(bytecode, lib=None) -> "Executable":
        """The executable `save()` returned `bytecode` for (late-bound constants still to be loaded)."""
        from .runtime_module import Module
        from .vm_serialize import decode_code

        if isinstance(bytecode, str):
            bytecode = bytecode.encode("latin-1")
        if not isinstance(bytecode, (bytes, bytearray, memoryview)):
            raise TranspileError(f"load_exec expects the bytes Executable.save() returned, got {type(bytecode).__name__}")
        if lib is not None and not isinstance(lib, Module):
            raise TranspileError(f"load_exec expects the library Executable.save() returned, got {type(lib).__name__}")
        text, constants, backend = decode_code(bytecode)
        exe = Executable.__new__(Executable)
        # Like every executor, a loaded executable runs on the backend TRANSPILE_TVM_BACKEND names now.
        exe._init_state(None, text, constants, selected_backend())
        exe._late_bound = {i for i, c in enumerate(constants) if c is None}
        return exe

    @property
    def mod(self):
        """The executable as a runtime module (TVM's `exe.mod`): export_library, ["load_late_bound_consts"]…"""
        if self._runtime_module is None:
            from .vm_serialize import executable_module

            self._runtime_module = executable_module(self)
        return self._runtime_module

    @property
    def bytecode(self) -> str:
        """A readable listing of the program the executable runs, function by function.

        TVM listed VM instructions here; transpile compiles each function with its backend, so the
        listing shows each global's name, parameters and Relay body instead.
        """
        from ..printer import astext

        lines = []
        for gv in sorted(self.module.get_global_vars(), key=lambda g: g.name_hint):
            function = self.module[gv]
            params = getattr(function, "params", [])
            lines.append(f"VM Function[{gv.name_hint}]: {len(params)} parameter(s) " + " ".join(
                f"%{p.name_hint}" for p in params
            ))
            lines.append(astext(function, show_meta_data=False))
            lines.append("")
        return "\n".join(lines)

    @property
    def constants(self) -> str:
        """The constant pool, one line per constant: index, shape, dtype (late-bound ones marked)."""
        _, constants = self._pool()
        lines = []
        for index, value in enumerate(constants):
            where = " late-bound" if index in self._late_bound else ""
            shape = "?" if value is None else "x".join(str(d) for d in value.shape) or "scalar"
            dtype = "?" if value is None else str(value.dtype)
            lines.append(f"  {index}: {shape} {dtype}{where}")
        return "\n".join(lines)

    def move_late_bound_consts(self, path, byte_limit):
        """Writes the constants of at least `byte_limit` bytes to `path`; the saved code leaves them out."""
        from .vm_serialize import write_constants_file

        moved = self.get_late_bound_consts(byte_limit)
        write_constants_file(path, {name: np.asarray(value) for name, value in moved.items()})

    def get_late_bound_consts(self, byte_limit) -> dict:
        """The constants of at least `byte_limit` bytes by name; the saved code leaves them out."""
        from .vm_serialize import late_bound_map

        _, constants = self._pool()
        moved = late_bound_map(constants, byte_limit)
        self._late_bound |= {int(name[len("const_") :]) for name in moved}
        return {name: value.view(NDArray) for name, value in moved.items()}

    def load_late_bound_consts(self, path):
        """Supplies the late-bound constants from the file move_late_bound_consts wrote."""
        from .vm_serialize import read_constants_file

        self.load_late_bound_consts_from_map(read_constants_file(path), f"the constants file {path}")

    def load_late_bound_consts_from_map(self, constant_map, where: str = "the constants map"):
        """Supplies the late-bound constants from a {name: array} map (get_late_bound_consts's)."""
        from .vm_serialize import fill_late_bound

        _, constants = self._pool()
        supplied = {name: np.asarray(value) for name, value in dict(constant_map).items()}
        self._constants = fill_late_bound(constants, supplied, where)


class VirtualMachine:
    """Runs an Executable: set_input / invoke / run / invoke_stateful + get_outputs, as TVM's VM."""

    def __init__(self, exe, device=None, memory_cfg=None):
        from .runtime_module import Module

        if isinstance(exe, Module):  # exe.mod, or a module runtime.load_module read (TVM accepted both)
            exe = Executable(exe)
        if not isinstance(exe, Executable):
            raise TranspileError(f"VirtualMachine expects a relay.vm Executable, got {type(exe).__name__}")
        self._exec = exe
        self.device = device
        self._inputs: dict[str, list] = {}
        self._outputs: list = []
        functions = {
            "invoke": self.invoke,
            "invoke_stateful": self.invoke_stateful,
            "set_input": self.set_input,
            "get_input_index": lambda name, func_name="main": self.get_input_index(name, func_name),
        }
        # TVM's VM was a runtime module too; benchmark times its "invoke" through time_evaluator.
        self.module = Module("VirtualMachine", functions, owner=self)

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
        """Times `func_name` with runtime.Module.time_evaluator, as TVM's VM did: a BenchmarkResult.

        `end_to_end` timed copying the inputs to the device too in TVM; on the host both are the call.
        """
        if args or kwargs:
            self.set_input(func_name, *args, **kwargs)
        evaluator = self.module.time_evaluator(
            "invoke", device, repeat=repeat, number=number, min_repeat_ms=min_repeat_ms or 0
        )
        return evaluator(func_name)


class _Missing:
    __slots__ = ()

    def __repr__(self):
        return "<argument not set>"


_MISSING = _Missing()


class VMExecutor(Executor):
    """The "vm" executor kind of create_executor: VM-style results (ADT containers)."""

    kind = "vm"
