"""C++ for kernels with `?` dimensions: their result shapes and preconditions, computed from argument shapes.

TE gives each result dimension as a PrimExpr over the kernel's dimension vars (one per `?`
dimension of a parameter, see transpile.kernels.lower.kernel_shapes). This module prints the
integer subset of PrimExprs shape functions use — ints, vars, + - *, floor/trunc division and
modulo by a positive constant, min, max, select, comparisons, and/or/not, integer casts — as
int64_t C++ expressions, and writes the wrapper lines that bind the vars, check the kernel's
requirements and compute each result's shape before allocating it.
"""

from __future__ import annotations

import re

from ....errors import UnsupportedFeatureError
from .names import c_string

__all__ = ["ShapePrinter", "dynamic_shape_lines", "may_fail_statically"]

_BINARY = {"Add": "+", "Sub": "-", "Mul": "*", "EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}
_LOGICAL = {"And": "&&", "Or": "||"}


class ShapePrinter:
    """Prints shape PrimExprs as C++ over named int64_t variables (`names`: tir Var -> C++ name)."""

    def __init__(self, names: dict, where: str, span=None):
        self.names = names
        self.where = where  # for error messages: "kernel <name>"
        self.span = span  # of the kernel's Relay body, for error messages

    def expr(self, e) -> str:
        from tvm import tirx

        if hasattr(e, "asobject"):  # a lazy comparison (EqualOp, NotEqualOp)
            e = e.asobject()
        kind = type(e).__name__
        if isinstance(e, int):
            return str(e)
        if isinstance(e, tirx.IntImm):
            if _dtype(e) == "bool":
                return "true" if e.value else "false"
            return _int_literal(int(e.value))
        if isinstance(e, tirx.Var):
            for var, name in self.names.items():
                if var.same_as(e):
                    return name
            raise self._unsupported(e, "an unknown variable")
        if kind in _BINARY:
            return f"({self.expr(e.a)} {_BINARY[kind]} {self.expr(e.b)})"
        if kind in _LOGICAL:
            return f"({self.expr(e.a)} {_LOGICAL[kind]} {self.expr(e.b)})"
        if kind == "Not":
            return f"(!{self.expr(e.a)})"
        if kind in ("Min", "Max"):
            return f"std::{kind.lower()}<int64_t>({self.expr(e.a)}, {self.expr(e.b)})"
        if kind == "Select":
            return f"({self.expr(e.condition)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"
        if kind in ("FloorDiv", "FloorMod", "Div", "Mod"):
            return self._division(e, kind)
        if kind == "Cast":
            dtype = _dtype(e)
            if dtype == "bool":
                return f"({self.expr(e.value)} != 0)"
            if dtype.startswith("int") or dtype.startswith("uint"):
                return self.expr(e.value)  # shape arithmetic is int64_t throughout
        raise self._unsupported(e, f"a {kind} expression")

    def _division(self, e, kind: str) -> str:
        from tvm import tirx

        divisor = e.b
        if not isinstance(divisor, tirx.IntImm) or int(divisor.value) <= 0:
            raise self._unsupported(e, "a division by something other than a positive constant")
        a, b = self.expr(e.a), int(divisor.value)
        if kind == "Div":  # C semantics
            return f"({a} / {b})"
        if kind == "Mod":
            return f"({a} % {b})"
        if kind == "FloorDiv":
            return f"({a} >= 0 ? {a} / {b} : -((-({a}) + {b - 1}) / {b}))"
        return f"((({a} % {b}) + {b}) % {b})"

    def _unsupported(self, e, what: str) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(
            f"{what} in a result shape", "cpp", span=self.span, detail=f"{self.where}: cannot compute {e} in C++"
        )


def _dtype(e) -> str:
    ty = getattr(e, "ty", None)  # tvm 0.27 PrimExprs carry their dtype as a PrimType
    return str(ty.dtype) if ty is not None else str(e.dtype)


def _int_literal(value: int) -> str:
    """An int64_t literal; the most negative one as an expression (its magnitude is no int64_t)."""
    if value == -(2**63):
        return "(INT64_C(-9223372036854775807) - 1)"
    return f"INT64_C({value})" if abs(value) >= 2**31 else f"({value})" if value < 0 else str(value)


def _static_shape_text(ty) -> str:
    dims = [str(int(d)) for d in getattr(ty, "shape", ())]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def may_fail_statically(kernel) -> bool:
    """Whether a kernel of static shapes has a requirement that does not hold (its condition, over
    constants only, is not provably true); the wrapper then checks its requirements.

    Type relations check static shapes; what they let through is an operation on an empty tensor
    that has no result to give (take from an empty axis, argmax of nothing): such a kernel raises
    when it runs, as the interpreter does, rather than read outside its arguments. The empty tensor
    may be an intermediate of a fused kernel (argmin after a where of empty operands) whose
    parameters and results are all non-empty, so this asks the lowering itself: every operator's
    requirements in the kernel, whatever tensor they are about."""
    from ....kernels.lower import kernel_shapes

    return any(not _provably_true(condition) for condition, _ in kernel_shapes(kernel).requirements)


def _provably_true(condition) -> bool:
    from tvm import sym, tirx

    if hasattr(condition, "asobject"):  # a lazy comparison (EqualOp, NotEqualOp)
        condition = condition.asobject()
    if isinstance(condition, bool):
        return condition
    value = sym.Analyzer().simplify(condition)
    return isinstance(value, tirx.IntImm) and bool(value.value)


def dynamic_shape_lines(kernel, params: list[str]) -> tuple[list[str], list[list[str]]]:
    """(C++ lines, per flat result a list of C++ dimension expressions) for a kernel with `?` dims.

    The lines bind a `const int64_t` per `?` parameter dimension they use, read from the argument
    tensors (`params` are the C++ argument names); raise ValueError naming the kernel when a
    requirement (e.g. broadcastable operands) fails or a computed dimension would be negative;
    and bind each computed result dimension, which the returned shape expressions name.
    """
    from tvm import sym, tirx

    from ....kernels.lower import kernel_shapes

    try:
        shapes = kernel_shapes(kernel)
    except UnsupportedFeatureError as exc:  # e.g. an operator whose result shape depends on data
        raise UnsupportedFeatureError(
            exc.feature, "cpp", span=exc.span, detail=f"kernel {kernel.name} ({', '.join(kernel.ops)})"
        ) from None
    where = f"kernel {kernel.name}"
    names = {var: f"{params[index]}_dim{axis}" for var, index, axis in shapes.dims}
    printer = ShapePrinter(names, where, getattr(kernel.body.body, "span", None))
    shown = ' + ", " + '.join(
        f"trt::shape_text(*{params[i]}.GetDLTensorPtr())" for i in sorted({index for _, index, _ in shapes.dims})
    )
    if not shown:  # a static kernel (see may_fail_statically): its argument shapes are known here
        shown = c_string(", ".join(_static_shape_text(p.type) for p in kernel.params))
    checks = []
    for condition, message in shapes.requirements:
        text = c_string(f"{where}: {message}; argument shapes ")
        checks.append(f"  if (!{printer.expr(condition)})")
        checks.append(f'    trt::raise("ValueError", std::string({text}) + {shown});')
    analyzer = sym.Analyzer()
    sizes = tirx.const(True, "bool")
    for var, _, _ in shapes.dims:
        sizes = tirx.And(sizes, var >= 0)
    outputs = []
    for j, shape in enumerate(shapes.outputs):
        dims = []
        for axis, dim in enumerate(shape):
            if isinstance(dim, int):
                dims.append(str(dim))
                continue
            if isinstance(dim, tirx.Var):
                dims.append(printer.expr(dim))
                continue
            name = f"out{j}_dim{axis}"
            checks.append(f"  const int64_t {name} = {printer.expr(dim)};")
            with analyzer.constraint_scope(sizes):
                never_negative = analyzer.can_prove(dim >= 0)
            if not never_negative:
                text = c_string(f"{where}: result {j} would have a negative dimension {axis} for argument shapes ")
                checks.append(f'  if ({name} < 0) trt::raise("ValueError", std::string({text}) + {shown});')
            dims.append(name)
        outputs.append(dims)
    used = "\n".join(checks) + " " + " ".join(" ".join(d) for d in outputs)
    bindings = [
        f"  const int64_t {name} = {params[index]}.GetDLTensorPtr()->shape[{axis}];"
        for (var, index, axis), name in zip(shapes.dims, names.values())
        if re.search(rf"\b{name}\b", used)
    ]
    return bindings + checks, outputs
