"""LIR program -> one TVM IRModule: a scheduled PrimFunc per kernel, a PrimFunc per function, `main` for the entry.

Functions are printed as TVMScript (script.py) and parsed with `tvm.script`; kernels come from the
shared kernel compiler (transpile.kernels: TE lowering + host schedules, see kernels.py) and are
put under their own names (kernels called directly are parsed as stubs and replaced). Public
PrimFuncs have their C symbol as `global_symbol` (functions `tir_<name>`, the entry `tir_main`).
The program's constants are one blob (backends/weights.py layout) passed as the `weights` buffer.
A kernel's requirements (transpile.kernels.lower.KernelShapes) are asserted before each call
of it (checks.py): a failed one raises from the library's entry, as cpp raises in C++.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ....errors import UnsupportedFeatureError
from ....kernels.lower import result_types
from ....lir.types import TensorType
from ...weights import WeightsLayout
from .checks import KernelChecks
from .kernels import lower_kernels, stub_text
from .script import (
    BACKEND,
    FunctionScript,
    constants_needed,
    direct_functions,
    flatten_type,
    identifier,
    recursive_functions,
)

__all__ = ["LoweredProgram", "lower_program", "module_script", "ENTRY_NAME"]

ENTRY_NAME = "main"  # the entry function's name inside the IRModule


@dataclass
class LoweredProgram:
    """The IRModule plus what the boundary needs to call its entry PrimFunc."""

    module: object  # tvm.IRModule
    entry_symbol: str
    input_types: list  # flattened entry parameter tensors
    input_names: list
    weights: list  # ConstDefs in the weights blob the entry takes after its inputs (empty: no blob)
    weights_layout: WeightsLayout
    output_types: list  # flattened result tensors
    kernel_schedules: dict = field(default_factory=dict)
    packed_kernels: frozenset = frozenset()  # kernels called with T.call_cpacked (public PrimFuncs)
    stack_checked: frozenset = frozenset()  # functions that start with the stack check (recursive ones)


def _memory_plan(program):
    """Arena offsets of the intermediates (0-d values stay separate: they live on the stack)."""
    from ....passes.memory_plan import plan_memory

    return plan_memory(program, plannable=lambda ty: bool(ty.shape))


class ModuleScript:
    """Names of the module's PrimFuncs, the functions that take the constants blob, and its layout."""

    def __init__(self, program, direct_kernels=frozenset()):
        self.program = program
        self.direct_kernels = direct_kernels
        self.checks = KernelChecks(program)  # the kernels' requirements, asserted before each call
        self.direct_functions = direct_functions(program, direct_kernels, self.checks)
        self.memory_plan = _memory_plan(program)
        self.constants = constants_needed(program)
        used = set().union(*self.constants.values()) if self.constants else set()
        self.blob_constants = [c for c in program.constants if c.name in used]
        self.weights_layout = WeightsLayout.of(self.blob_constants)
        self.weights_type = TensorType((max(self.weights_layout.size, 1),), "uint8")
        self.stack_checked = frozenset(recursive_functions(program))
        taken = {k.name for k in program.kernels}
        self.names, self.symbols = {}, {}
        for func in program.functions:
            if func.env is not None:
                raise UnsupportedFeatureError("closures", BACKEND, detail=f"closure body @{func.name}")
            base = ENTRY_NAME if func.name == program.entry else f"fn_{identifier(func.name)}"
            name = base
            n = 1
            while name in taken:
                n += 1
                name = f"{base}_{n}"
            taken.add(name)
            self.names[func.name] = name
            symbol = f"tir_{name}"
            while symbol in taken:
                symbol += "_"
            taken.add(symbol)
            self.symbols[func.name] = symbol

    def is_direct(self, name: str) -> bool:
        return name in self.direct_functions

    def function_name(self, name: str) -> str:
        return self.names[name]

    def symbol(self, name: str) -> str:
        return self.symbols[name]

    def constants_of(self, name: str) -> list[str]:
        return self.constants.get(name, [])

    def constant_param(self, const: str) -> str:
        return f"c_{identifier(const)}"

    def text(self) -> str:
        lines = [
            "# from tvm.script import ir as I",
            "# from tvm.script import tirx as T",
            "",
            "@I.ir_module",
            "class Module:",
        ]
        for kernel in self.program.kernels:
            if kernel.name in self.direct_kernels:
                arity = len(kernel.params) + len(result_types(kernel))
                lines.extend(stub_text(kernel.name, arity))
        for func in self.program.functions:
            lines.extend(FunctionScript(self, func).write())
            lines.append("")
        return "\n".join(lines) + "\n"


def module_script(program, direct_kernels=frozenset()) -> str:
    """The TVMScript of the program's functions (direct kernels as stubs, replaced after parsing)."""
    return ModuleScript(program, direct_kernels).text()


def lower_program(program, schedule: bool = True, tune: int = 0) -> LoweredProgram:
    """The program as an IRModule (verified LIR in, UnsupportedFeatureError for what TIR cannot hold);
    `tune`: meta_schedule trials per tunable kernel (0: hand schedules only)."""
    import tvm

    kernels = lower_kernels(program, schedule, tune=tune)
    script = ModuleScript(program, frozenset(kernels.direct))
    text = script.text()
    try:
        module = tvm.script.from_source(text)
    except Exception as exc:  # a bug in the printer, not in the user's program
        raise RuntimeError(f"the tir backend printed TVMScript that does not parse: {exc}\n{text}") from exc
    for name, func in kernels.functions.items():
        if name in kernels.direct:
            module.update_func(module.get_global_var(name), func)
        else:
            module[name] = func
    kinds = kernels.kinds
    entry = program.entry_function
    input_types, input_names = [], []
    for p in entry.params:
        types = flatten_type(p.type, f"parameter %{p.name} of @{program.entry}")
        input_types.extend(types)
        input_names.extend([p.name] if len(types) == 1 else [f"{p.name}.{i}" for i in range(len(types))])
    return LoweredProgram(
        module=module,
        entry_symbol=script.symbol(entry.name),
        input_types=input_types,
        input_names=input_names,
        weights=script.blob_constants if script.constants_of(entry.name) else [],
        weights_layout=script.weights_layout,
        output_types=flatten_type(entry.ret, f"the result of @{program.entry}"),
        kernel_schedules=kinds,
        packed_kernels=frozenset(kernels.functions) - frozenset(kernels.direct),
        stack_checked=script.stack_checked,
    )
