"""Kernel wrappers: a C++ function per LIR kernel, either an inline scalar expression or a TVM kernel call.

A kernel whose parameters and result are all plain 0-d values and whose operators are simple
elementwise ones (add, compare, where, cast, ...) becomes C++ arithmetic generated from its
Relay body: recursive scalar programs then never leave registers. Every other kernel calls its
TVM-compiled `__tvm_ffi_<name>` symbol directly with DLTensor arguments, inputs then outputs.
"""

from __future__ import annotations

import math

import numpy as np

from ....errors import UnsupportedFeatureError
from ....kernels.lower import is_dynamic_kernel
from ....lir.types import TensorType, TupleT, type_text
from ....relay.ty import AnyDim
from .names import comment
from .shapes import dynamic_shape_lines, may_fail_statically
from .types import SCALAR_CTYPES, dtype_expr, is_cpp_scalar

__all__ = ["KernelWriter", "scalar_literal", "is_inline_kernel", "kernel_symbol", "has_into_variant"]

_BINARY = {
    "add": "+",
    "subtract": "-",
    "multiply": "*",
    "equal": "==",
    "not_equal": "!=",
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
    "logical_and": "&&",
    "logical_or": "||",
}
_UNARY = {"negative": "-", "logical_not": "!"}
_OTHER = {"where", "cast", "maximum", "minimum", "divide", "copy"}
INLINE_OPS = frozenset(_BINARY) | frozenset(_UNARY) | _OTHER
_NARROW = {"int8", "int16", "uint8", "uint16"}  # C++ promotes these to int: cast results back
# float16 arithmetic as numpy does it: each operation in float32, its result rounded to float16
# (exact for + - * /: float32 holds every such result of two halves to well within double rounding).
# Written out so that neither excess precision nor contraction can skip a rounding.
_HALF_ROUNDED = {"add", "subtract", "multiply", "divide"}


def kernel_symbol(kernel) -> str:
    return f"__tvm_ffi_{kernel.name}"


def scalar_literal(value, dtype: str) -> str:
    """An exact C++ literal of `dtype` (float literals round-trip; extremes spelled safely)."""
    if dtype == "bool":
        return "true" if value else "false"
    ctype = SCALAR_CTYPES[dtype]
    if dtype.startswith("float"):
        value = float(np.asarray(value, dtype=dtype))  # the value the dtype holds, spelled exactly below
        suffix = "f" if dtype == "float32" else ""
        if math.isnan(value):
            return f"static_cast<{ctype}>(NAN)"
        if math.isinf(value):
            return f"{'-' if value < 0 else ''}static_cast<{ctype}>(INFINITY)"
        text = repr(value)
        if "e" not in text and "." not in text:
            text += ".0"
        if dtype == "float16":  # no literal suffix before C++23; the double is exactly the half value
            return f"static_cast<_Float16>({text})"
        return f"{text}{suffix}"
    value = int(value)
    if dtype.startswith("uint"):
        return f"static_cast<{ctype}>({value}ull)"
    if dtype in ("int32", "int64") and value > -(2**31):
        return str(value) if dtype == "int32" else f"INT64_C({value})"
    return f"static_cast<{ctype}>({value + 1}ll - 1)" if value < 0 else f"static_cast<{ctype}>({value}ll)"


def _flat_results(ty) -> list[TensorType]:
    if isinstance(ty, TensorType):
        return [ty]
    if isinstance(ty, TupleT):
        out = []
        for field in ty.fields:
            out.extend(_flat_results(field))
        return out
    raise UnsupportedFeatureError(f"kernel result of type {type_text(ty)}", "cpp")


def is_inline_kernel(kernel) -> bool:
    """Whether the kernel is scalar arithmetic that C++ expresses directly."""
    if not all(is_cpp_scalar(p.type) for p in kernel.params) or not is_cpp_scalar(kernel.result):
        return False
    for op in kernel.ops:
        if op not in INLINE_OPS:
            return False
        if op == "divide":  # integer division by zero would trap; leave ints to the TVM kernel
            if not kernel.result.dtype.startswith("float"):
                return False
    return _body_is_simple(kernel)


def _body_is_simple(kernel) -> bool:
    from ....relay import expr as rx

    stack, seen = [kernel.body.body], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, rx.Call):
            if not isinstance(node.op, rx.Op):
                return False
            ty = node.checked_type
            if not is_cpp_scalar(ty):
                return False
            if node.op.name == "divide" and not ty.dtype.startswith("float"):
                return False
            stack.extend(node.args)
        elif isinstance(node, rx.Constant):
            if np.asarray(node.data).ndim != 0 or np.asarray(node.data).dtype.name not in SCALAR_CTYPES:
                return False
        elif not isinstance(node, rx.Var):
            return False
    return True


PROFILE_TABLE = "transpile_kernel_times"  # a profiling build's per-kernel counters (trt::KernelTimes)


class KernelWriter:
    """C++ definitions of the program's kernels (`k_<name>` functions).

    `profiled`: in a profiling build, the TVM kernels in the order of the timing table; each of
    their call sites then goes through trt::call_timed with the kernel's row."""

    def __init__(self, types, names, profiled=None):
        self.types = types
        self.names = names
        self.profile_rows = {k.name: i for i, k in enumerate(profiled)} if profiled is not None else None
        if profiled is not None:
            names.reserve(PROFILE_TABLE)

    def _call(self, kernel, args_count: int) -> str:
        """The statement running the TVM kernel on `args` (timed in a profiling build)."""
        if self.profile_rows is None:
            return f"  trt::call({kernel_symbol(kernel)}, args, {args_count});"
        row = self.profile_rows[kernel.name]
        return f"  trt::call_timed({PROFILE_TABLE}[{row}], {kernel_symbol(kernel)}, args, {args_count});"

    def profile_table(self) -> list[str]:
        """A profiling build's counters and the two C functions reading and clearing them."""
        if self.profile_rows is None:
            return []
        count = len(self.profile_rows)
        size = max(count, 1)
        return [
            "// Profiling build: calls and nanoseconds per TVM kernel, rows in info.json's profile_kernels order.",
            f"static trt::KernelTimes {PROFILE_TABLE}[{size}];",
            'extern "C" TRT_EXPORT int64_t transpile_profile_read(int64_t* calls, int64_t* nanoseconds, int64_t capacity) {',
            f"  for (int64_t i = 0; i < {count} && i < capacity; ++i) {{",
            f"    calls[i] = {PROFILE_TABLE}[i].calls.load(std::memory_order_relaxed);",
            f"    nanoseconds[i] = {PROFILE_TABLE}[i].nanoseconds.load(std::memory_order_relaxed);",
            "  }",
            f"  return {count};",
            "}",
            'extern "C" TRT_EXPORT void transpile_profile_reset(void) {',
            f"  for (auto& row : {PROFILE_TABLE}) row.calls.store(0), row.nanoseconds.store(0);",
            "}",
        ]

    def declarations(self, kernels) -> list[str]:
        externs = [k for k in kernels if not is_inline_kernel(k)]
        if not externs:
            return []
        lines = ['extern "C" {']
        for kernel in externs:
            lines.append(f"int {kernel_symbol(kernel)}(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);")
        lines.append("}")
        return lines

    def definition(self, kernel, cpp_name: str, into_cpp_name: str) -> list[str]:
        """The wrapper `cpp_name` and, for kernels with one (has_into_variant), `into_cpp_name`."""
        head = "// " + comment(f"kernel {kernel.name} [{kernel.pattern.name.lower()}]: {', '.join(kernel.ops)}")
        if is_inline_kernel(kernel):
            return [head] + self._inline(kernel, cpp_name)
        return [head] + self._tvm_call(kernel, cpp_name) + self._into_call(kernel, into_cpp_name)

    def _signature(self, kernel, cpp_name: str, inline: bool) -> tuple[str, list[str]]:
        params = [f"p{i}" for i in range(len(kernel.params))]
        decls = []
        for name, p in zip(params, kernel.params):
            cty = self.types.cpp(p.type)
            # trt::In: a Tensor or a planned buffer's View (see _into_call)
            decls.append(f"{cty} {name}" if is_cpp_scalar(p.type) else f"trt::In {name}")
        ret = self.types.cpp(kernel.result)
        prefix = "static inline" if inline else "static"
        return f"{prefix} {ret} {cpp_name}({', '.join(decls)})", params

    def _inline(self, kernel, cpp_name: str) -> list[str]:
        from ....relay import expr as rx

        signature, params = self._signature(kernel, cpp_name, True)
        values = {var: name for var, name in zip(kernel.body.params, params)}
        as_float = {}  # float16 constants spelled as the (exactly equal) float literal
        lines = [signature + " {"]
        order = _post_order(kernel.body.body)
        counter = 0
        for node in order:
            if isinstance(node, rx.Var):
                continue
            if isinstance(node, rx.Constant):
                data = np.asarray(node.data)
                values[node] = scalar_literal(data.item(), data.dtype.name)
                if data.dtype.name == "float16":
                    as_float[node] = scalar_literal(data.item(), "float32")
                continue
            ty = node.checked_type
            if ty.dtype == "float16" and node.op.name in _HALF_ROUNDED:
                floats = [as_float.get(a) or f"static_cast<float>({values[a]})" for a in node.args]
                expr = _half_arithmetic(node.op.name, floats)
            else:
                expr = self._op_expr(node, [values[a] for a in node.args], ty)
            if node is kernel.body.body:
                lines.append(f"  return {expr};")
            else:
                counter += 1
                name = f"v{counter}"
                lines.append(f"  const {SCALAR_CTYPES[ty.dtype]} {name} = {expr};")
                values[node] = name
        if len(lines) == 1:  # the body is a parameter or a constant
            lines.append(f"  return {values[kernel.body.body]};")
        lines.append("}")
        return lines

    def _op_expr(self, call, args: list[str], ty: TensorType) -> str:
        op = call.op.name
        ctype = SCALAR_CTYPES[ty.dtype]
        if op in _BINARY:
            expr = f"{args[0]} {_BINARY[op]} {args[1]}"
        elif op in _UNARY:  # parenthesized: `-` before the literal -4 would make the decrement --4
            expr = f"{_UNARY[op]}({args[0]})"
        elif op == "divide":
            expr = f"{args[0]} / {args[1]}"
        elif op == "where":
            expr = f"{args[0]} ? {args[1]} : {args[2]}"
        elif op in ("maximum", "minimum") and ty.dtype.startswith("float"):
            x, y = args  # NaN wins either way round, as in numpy (std::max would drop a NaN in y)
            expr = f"({x} {'>' if op == 'maximum' else '<'} {y} || {x} != {x}) ? {x} : {y}"
        elif op in ("maximum", "minimum"):
            expr = f"std::{op[:3]}<{ctype}>({args[0]}, {args[1]})"
        elif op == "cast":
            return f"static_cast<{ctype}>({args[0]})"
        elif op == "copy":
            return args[0]
        else:  # pragma: no cover - guarded by is_inline_kernel
            raise UnsupportedFeatureError(f"inline operator {op}", "cpp")
        if ty.dtype in _NARROW or (ty.dtype == "bool" and op in ("add", "subtract", "multiply")):
            return f"static_cast<{ctype}>({expr})"
        return expr

    def _tvm_call(self, kernel, cpp_name: str) -> list[str]:
        signature, params = self._signature(kernel, cpp_name, False)
        lines = [signature + " {"]
        args = []
        for i, (name, p) in enumerate(zip(params, kernel.params)):
            if is_cpp_scalar(p.type):
                ctype = SCALAR_CTYPES[p.type.dtype]
                lines.append(f"  trt::Scalar<{ctype}> s{i}({name}, {dtype_expr(p.type.dtype)});")
                args.append(f"s{i}.arg()")
            else:
                args.append(f"trt::arg({name})")
        outs = _flat_results(kernel.result)
        if is_dynamic_kernel(kernel):  # shapes computed from the arguments' (see shapes.py)
            shape_lines, out_shapes = dynamic_shape_lines(kernel, params)
            lines.extend(shape_lines)
        else:
            out_shapes = [[str(int(d)) for d in ty.shape] for ty in outs]
            if may_fail_statically(kernel):  # its requirements, constant but possibly false
                lines.extend(dynamic_shape_lines(kernel, params)[0])
        out_names = []
        for j, ty in enumerate(outs):
            if is_cpp_scalar(ty):
                lines.append(f"  trt::Scalar<{SCALAR_CTYPES[ty.dtype]}> out{j}({dtype_expr(ty.dtype)});")
                args.append(f"out{j}.arg()")
                out_names.append(f"out{j}.value")
            else:
                shape = "{" + ", ".join(out_shapes[j]) + "}"
                lines.append(f"  trt::Tensor out{j} = trt::empty({shape}, {dtype_expr(ty.dtype)});")
                args.append(f"trt::arg(out{j})")
                out_names.append(f"out{j}")
        lines.append(f"  const TVMFFIAny args[] = {{{', '.join(args)}}};")
        lines.append(self._call(kernel, len(args)))
        lines.append(f"  return {self._rebuild(kernel.result, iter(out_names))};")
        lines.append("}")
        return lines

    def _into_call(self, kernel, into_cpp_name: str) -> list[str]:
        """`into_k_<name>(inputs..., View& outputs...)`: the kernel writing into planned buffers
        (transpile.passes.memory_plan); only for static tensor results, the only ones planned."""
        if not has_into_variant(kernel):
            return []
        outs = _flat_results(kernel.result)
        params, args, lines = [], [], []
        for i, p in enumerate(kernel.params):
            if is_cpp_scalar(p.type):
                ctype = SCALAR_CTYPES[p.type.dtype]
                params.append(f"{ctype} p{i}")
                lines.append(f"  trt::Scalar<{ctype}> s{i}(p{i}, {dtype_expr(p.type.dtype)});")
                args.append(f"s{i}.arg()")
            else:
                params.append(f"trt::In p{i}")
                args.append(f"trt::arg(p{i})")
        for j in range(len(outs)):
            params.append(f"const trt::View& out{j}")
            args.append(f"trt::arg(out{j})")
        if is_dynamic_kernel(kernel) or may_fail_statically(kernel):  # the kernel's requirements first
            lines = dynamic_shape_lines(kernel, [f"p{i}" for i in range(len(kernel.params))])[0] + lines
        return [
            f"static inline void {into_cpp_name}({', '.join(params)}) {{",
            *lines,
            f"  const TVMFFIAny args[] = {{{', '.join(args)}}};",
            self._call(kernel, len(args)),
            "}",
        ]

    def _rebuild(self, ty, names) -> str:
        if isinstance(ty, TupleT):
            return f"{self.types.cpp(ty)}{{{', '.join(self._rebuild(f, names) for f in ty.fields)}}}"
        return next(names)


def has_into_variant(kernel) -> bool:
    """Whether the kernel has an `into_` variant: a TVM kernel whose results are static, non-scalar tensors."""
    if is_inline_kernel(kernel):
        return False
    try:
        outs = _flat_results(kernel.result)
    except UnsupportedFeatureError:
        return False
    return all(not is_cpp_scalar(t) and not any(isinstance(d, AnyDim) for d in t.shape) for t in outs)


def _half_arithmetic(op: str, floats: list[str]) -> str:
    """A float16 operation computed in float32 and rounded once to float16, as numpy does."""
    symbol = "/" if op == "divide" else _BINARY[op]
    return f"static_cast<_Float16>({floats[0]} {symbol} {floats[1]})"


def _post_order(root) -> list:
    from ....relay import expr as rx

    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            if id(node) not in seen:
                seen.add(id(node))
                order.append(node)
            continue
        if id(node) in seen:
            continue
        stack.append((node, True))
        if isinstance(node, rx.Call):
            stack.extend((a, False) for a in reversed(node.args))
    return order
