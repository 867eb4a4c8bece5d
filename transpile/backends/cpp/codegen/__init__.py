"""LIR program -> one readable C++17 translation unit (plus, for tensor entries, a C header).

Layout of the output: includes; ADT structs; kernel declarations and wrappers; constants
(tensors wrapped once around their place in the weights blob, see backends/weights.py — the
bytes themselves never appear in the source); closure structs; function prototypes and
definitions; boundary marshalling; exported entry points (see marshal.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....errors import UnsupportedFeatureError
from ....lir.types import type_text
from ...weights import WeightsLayout
from .functions import FunctionWriter
from .kernels import KernelWriter, is_inline_kernel, scalar_literal
from .marshal import Marshal, entry_exports, tensor_signature
from .names import Namespace, comment
from .types import CppTypes, dtype_expr, is_cpp_scalar

__all__ = ["generate", "Generated", "is_inline_kernel", "tensor_signature"]


@dataclass
class Generated:
    source: str
    header: str | None  # the C API header (tensor-only entries)
    extern_kernels: list  # kernels that need TVM compilation
    weights: list  # the ConstDefs stored in the weights blob, in blob order
    weights_layout: WeightsLayout
    export_name: str
    c_prefix: str
    tensor_entry: bool


WEIGHTS_SYMBOL = "transpile_weights"  # hidden: every library has its own


# What the library exports besides the typed entry (`__tvm_ffi_<name>` symbols, see marshal.py).
_FIXED_EXPORTS = frozenset(
    "transpile_call set_input run get_output get_num_inputs get_num_outputs get_input_index".split()
)


def _export_identifier(entry: str, kernels) -> str:
    """The typed entry's export name (also the library's and the C API's stem): `entry` reduced to
    [A-Za-z0-9_], distinct from the library's other exports and from its kernels' symbols."""
    import re

    text = re.sub("_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", entry)).strip("_") or "entry"
    if text[0].isdigit():
        text = f"f{text}"
    taken = _FIXED_EXPORTS | {k.name for k in kernels}
    while text in taken:
        text += "_entry"
    return text


class ProgramWriter:
    def __init__(self, program, big_stack: bool, standalone: bool = False, profile: bool = False):
        self.program = program
        self.big_stack = big_stack
        self.standalone = standalone  # the TVM-free flavour (transpile_rt_standalone.h, C API only)
        self.names = Namespace()
        self.names.reserve(WEIGHTS_SYMBOL)
        self.types = CppTypes(program, self.names)
        self._functions = {f.name: self.names.bind(("fn", f.name), f"fn_{f.name}") for f in program.functions}
        self._closures = {
            f.name: self.names.bind(("closure", f.name), f"{f.name}_closure")
            for f in program.functions
            if f.env is not None
        }
        self._kernels = {k.name: self.names.bind(("kernel", k.name), f"k_{k.name}") for k in program.kernels}
        self._into = {  # the kernels' variants writing into planned buffers (kernels.into_name)
            k.name: self.names.bind(("into", k.name), f"into_{self._kernels[k.name]}") for k in program.kernels
        }
        self._constants = {c.name: self.names.bind(("const", c.name), f"c_{c.name}") for c in program.constants}
        self.weights = [c for c in program.constants if not is_cpp_scalar(c.type)]
        self.weights_layout = WeightsLayout.of(self.weights)
        # A profiling build times every TVM kernel call (see transpile/profiling.py).
        self.profiled = [k for k in program.kernels if not is_inline_kernel(k)] if profile else None
        self.kernel_writer = KernelWriter(self.types, self.names, self.profiled)
        self.marshal = Marshal(self.types, program)
        self.export_name = _export_identifier(program.entry, program.kernels)
        self.c_prefix = "transpile_" + self.export_name
        if program.entry_function.env is not None:
            raise UnsupportedFeatureError("an entry function that is a closure body", "cpp")

    def function_name(self, name: str) -> str:
        return self._functions[name]

    def closure_struct(self, name: str) -> str:
        return self._closures[name]

    def kernel_name(self, name: str) -> str:
        return self._kernels[name]

    def into_name(self, name: str) -> str:
        return self._into[name]

    def constant_name(self, name: str) -> str:
        return self._constants[name]

    def constant(self, const) -> list[str]:
        name = self.constant_name(const.name)
        value = np.ascontiguousarray(const.value)
        if is_cpp_scalar(const.type):
            ctype = self.types.cpp(const.type)
            return [f"static const {ctype} {name} = {scalar_literal(value.item(), const.type.dtype)};"]
        if value.dtype.itemsize not in (1, 2, 4, 8):
            raise UnsupportedFeatureError(f"constants of dtype {value.dtype}", "cpp")
        shape = "{" + ", ".join(str(int(d)) for d in const.type.shape) + "}"
        offset = self.weights_layout.offset(const.name)
        return [
            "// "
            + comment(
                f"{const.name}: {type_text(const.type)}, {value.nbytes} bytes at offset {offset} of the weights blob"
            ),
            f"static const trt::Tensor {name} = trt::wrap_static(",
            f"    const_cast<unsigned char*>({WEIGHTS_SYMBOL} + {offset}), {shape}, {dtype_expr(const.type.dtype)});",
        ]

    def source(self) -> tuple[str, str | None, list]:
        program = self.program
        entry = program.entry_function
        out = [
            "// " + comment(f"Generated by transpile (cpp backend) from @{program.entry}; do not edit."),
            "// "
            + comment(
                f"Entry: @{program.entry}("
                + ", ".join(f"%{p.name}: {type_text(p.type)}" for p in entry.params)
                + f") -> {type_text(entry.ret)}"
            ),
            "#include <transpile_rt_standalone.h>" if self.standalone else "#include <transpile_rt.h>",
            "",
            "#include <algorithm>",
            "#include <cmath>",
            "",
        ]
        out += self.types.definitions()
        kernels = list(program.kernels)
        if kernels:
            out += ["", "// ---------------------------------------------------------------- kernels", ""]
            out += self.kernel_writer.declarations(kernels)
            out += self.kernel_writer.profile_table()
            for kernel in kernels:
                out.append("")
                out += self.kernel_writer.definition(kernel, self.kernel_name(kernel.name), self.into_name(kernel.name))
        if program.constants:
            out += ["", "// ---------------------------------------------------------------- constants", ""]
            if self.weights:
                out += [
                    "// The weights blob, linked from binary data (64-byte aligned, read-only).",
                    f'extern "C" __attribute__((visibility("hidden"))) const unsigned char {WEIGHTS_SYMBOL}[];',
                    "",
                ]
            for const in program.constants:
                out += self.constant(const)
        writers = [FunctionWriter(self, f) for f in program.functions]
        out += ["", "// ---------------------------------------------------------------- functions", ""]
        closures = [w for w in writers if w.func.env is not None]
        for w in closures:
            out.append(f"struct {self.closure_struct(w.func.name)};")
        for w in writers:
            out.append(w.prototype() + ";")
        if closures:
            out.append("")
            for w in closures:
                out += w.closure_struct()
        for w in writers:
            out.append("")
            out += w.definition()
        exports, header = entry_exports(self, entry, self.big_stack, self.standalone)
        if not self.standalone:  # the standalone C API passes tensors only: no Python boundary
            marshal = self.marshal.code()
            out += ["", "// ---------------------------------------------------------------- boundary marshalling", ""]
            out += marshal
        out += [""] + exports
        extern = [k for k in kernels if not is_inline_kernel(k)]
        return "\n".join(out) + "\n", ("\n".join(header) if header else None), extern


def generate(program, verify: bool = True, standalone: bool = False, profile: bool = False) -> Generated:
    """The C++ of `program`; `standalone` selects the TVM-free flavour of the source bundle: it
    includes transpile_rt_standalone.h and exports only the plain C API (tensor-only entries).
    `profile`: a profiling build, timing each TVM kernel call (rows: `extern_kernels`' order)."""
    from ....lir import verify as verify_program
    from ...signature import needs_big_stack

    if verify:
        verify_program(program)
    big = needs_big_stack(program)
    if profile and standalone:
        raise UnsupportedFeatureError("profiling a standalone bundle", "cpp")
    writer = ProgramWriter(program, big, standalone, profile)
    source, header, extern = writer.source()
    return Generated(
        source=source,
        header=header,
        extern_kernels=extern,
        weights=writer.weights,
        weights_layout=writer.weights_layout,
        export_name=writer.export_name,
        c_prefix=writer.c_prefix,
        tensor_entry=tensor_signature(program.entry_function) is not None,
    )
