"""C++ of the library's W0 exports: `default(dev)` making executors, and the module-level functions.

TVM's graph-executor convention: `lib["default"](dev)` returns a module of its own (a
trt::W0Executor, transpile_rt.h) with `set_input(index or name, tensor)`, `run()`,
`get_output(index)`, `get_input(index or name)`, `get_num_inputs()`, `get_num_outputs()` and
`get_input_index(name)`; each executor has its own inputs and outputs. The library's module-level
functions of the same names act on one process-wide executor (the interface before executors).
"""

from __future__ import annotations

from .names import c_string

__all__ = ["w0_exports"]

MODULE_FUNCTIONS = ("set_input", "run", "get_output", "get_num_inputs", "get_num_outputs", "get_input_index")


def w0_exports(params, num_outputs: int) -> list[str]:
    """The W0 part of a tensor entry's exports; `run_entry` (marshal.py) is defined before it."""
    # std::strings of explicit length: a name may hold any character, NUL included.
    names = ", ".join(f"std::string({c_string(p.name)}, {len(p.name.encode('utf-8', 'backslashreplace'))})" for p in params)
    lines = [
        "// W0: default(dev) makes an executor with its own inputs and outputs (see transpile_rt.h);",
        "// set_input(index or name, tensor), run(), get_output(index)... act on one process-wide executor.",
        "namespace w0 {",
        f"static const std::string kInputNames[] = {{{names or 'std::string()'}}};",
        f"static const trt::W0Program kProgram{{kInputNames, {len(params)}, {num_outputs}, run_entry}};",
        "static trt::W0Executor& shared() {  // internal linkage: one per library",
        "  static const trt::ffi::Module module = trt::make_w0_executor(kProgram, DLDevice{kDLCPU, 0});",
        "  return trt::executor_of(module);",
        "}",
        "static trt::ffi::Module make_executor(DLDevice device) { return trt::make_w0_executor(kProgram, device); }",
        "static void set_input(trt::Any key, trt::Tensor value) { shared().set_input(key, std::move(value)); }",
        "static void run() { shared().run(); }",
        "static trt::Tensor get_output(int64_t index) { return shared().get_output(index); }",
        f"static int64_t get_num_inputs() {{ return {len(params)}; }}",
        f"static int64_t get_num_outputs() {{ return {num_outputs}; }}",
        "static int64_t get_input_index(trt::ffi::String name) { return shared().input_index(trt::Any(name)); }",
        "}  // namespace w0",
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(default, w0::make_executor);",
    ]
    lines += [f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({name}, w0::{name});" for name in MODULE_FUNCTIONS]
    return lines + [""]
