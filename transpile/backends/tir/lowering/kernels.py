"""The program's kernels as PrimFuncs, from the shared kernel compiler (TE lowering + host schedules).

A kernel whose scheduled body neither allocates nor runs parallel loops becomes a private
PrimFunc with pointer parameters, called directly (`Module.kernel(a.data, ..., out.data)`): no
argument packing or checks, and LLVM inlines small kernels into the caller, so a scalar loop
runs in registers. Other kernels (conv padding, register tiles, parallel loops) stay public and
are called with `T.call_cpacked`: TIR lowers workspace allocations only in functions with the
packed API.
"""

from __future__ import annotations

__all__ = ["KernelFunctions", "lower_kernels", "stub_text"]


class KernelFunctions:
    def __init__(self, functions: dict, kinds: dict, direct: set):
        self.functions = functions  # kernel name -> PrimFunc (private form for direct kernels)
        self.kinds = kinds  # kernel name -> schedule kind
        self.direct = direct  # kernels called directly


def _callable_directly(func) -> bool:
    # This TVM has no Python statement visitor; the printed form names every allocation and
    # parallel loop. Private PrimFuncs cannot allocate workspace memory (no device context), and
    # parallel loops in them compute wrong results, so those kernels keep the packed API.
    text = func.script()
    return "alloc" not in text and "T.parallel" not in text


def _private(func):
    """The kernel with pointer parameters bound to its buffers by DeclBuffer (no packed API)."""
    from tvm import ir, tirx

    handles, decls = [], []
    for param in func.params:
        handle = tirx.Var(param.name + "_ptr", ir.PointerType(ir.PrimType(param.dtype)))
        handles.append(handle)
        decls.append(tirx.DeclBuffer(param, data=handle))
    body = tirx.SeqStmt(decls + [func.body])
    return tirx.PrimFunc(handles, body, attrs=func.attrs).without_attr("global_symbol")


def lower_kernels(program, schedule: bool = True, target=None, tune: int = 0) -> KernelFunctions:
    """The program's kernels from the shared kernel compiler (hand schedules, or tuned: `tune` trials)."""
    from ....kernels.build import scheduled_functions
    from ....kernels.target import host_target

    target = host_target() if target is None else target
    functions, kinds = scheduled_functions(program.kernels, target, schedule, tune)
    direct = set()
    for name, func in functions.items():
        if _callable_directly(func):
            functions[name] = _private(func)
            direct.add(name)
    return KernelFunctions(functions, kinds, direct)


def stub_text(kernel_name: str, arity: int) -> list[str]:
    """A private placeholder with `arity` pointer parameters; replaced by the real kernel after parsing."""
    params = ", ".join(f"a{i}: T.handle" for i in range(arity))
    return ["    @T.prim_func(private=True)", f"    def {kernel_name}({params}):", "        T.evaluate(0)", ""]
