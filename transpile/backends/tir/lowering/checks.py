"""The run-time checks a kernel call needs (the kernel's declared requirements), as TVMScript asserts.

Every operator lowering may `require(...)` a condition on its operands' shapes (te_support):
broadcastable `?` dimensions, matching matrix dimensions, an unchanged element count, a non-empty
axis to take from or to reduce with argmax… The kernel itself does not check them; its caller
must (transpile.kernels.lower.KernelShapes.requirements), as the cpp backend does in C++. Here
the caller is a function PrimFunc: each condition is evaluated with the kernel's parameter
dimensions replaced by the call's argument shapes. The tir backend has static shapes only, so
conditions come out constant: true ones need nothing, and the first false one (take from an
empty axis) becomes `assert T.bool(False), ("ValueError", [message])` right before the call,
which fails whenever the call is reached. TVM's packed ABI turns a failed assert into an error
its caller sees (the library's entry returns it, the Python boundary raises it as
EvaluationError), with the message cpp gives: "kernel <name>: <requirement>; argument shapes ...".
"""

from __future__ import annotations

from ....errors import UnsupportedFeatureError

__all__ = ["KernelChecks", "python_string"]

_ERROR_KIND = "ValueError"  # as the cpp backend raises it (trt::raise)


def python_string(text: str) -> str:
    """A TVMScript (Python) string literal of `text`, ASCII only."""
    return repr(text.encode("ascii", "backslashreplace").decode("ascii"))


def _shape_text(shape) -> str:
    dims = [str(int(d)) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _as_expr(condition):
    from tvm import tirx

    if hasattr(condition, "asobject"):  # a lazy comparison (EqualOp, NotEqualOp)
        condition = condition.asobject()
    if isinstance(condition, bool):
        return tirx.const(condition, "bool")
    return condition


class KernelChecks:
    """The requirements of each kernel of a program (lowered to TE once, when first asked)."""

    def __init__(self, program):
        self.kernels = {k.name: k for k in program.kernels}
        self._requirements: dict[str, tuple] = {}

    def shapes(self, name: str):
        """(dims, requirements) of kernel `name` (see KernelShapes)."""
        if name not in self._requirements:
            from ....kernels.lower import kernel_shapes

            shapes = kernel_shapes(self.kernels[name])
            self._requirements[name] = (shapes.dims, shapes.requirements)
        return self._requirements[name]

    def may_fail(self, name: str) -> bool:
        """Whether a call of kernel `name` has anything to check."""
        return bool(self.shapes(name)[1])

    def failing(self, name: str, arg_shapes: list) -> list[str]:
        """The messages of the requirements a call with arguments of `arg_shapes` fails.

        Raises UnsupportedFeatureError if a condition does not come out constant (it would need
        the argument shapes at run time, which this backend does not have)."""
        from tvm import sym, tirx

        dims, requirements = self.shapes(name)
        if not requirements:
            return []
        analyzer = sym.Analyzer()
        for var, index, axis in dims:  # the kernel's `?` dimensions are the call's argument dimensions
            analyzer.bind(var, tirx.const(int(arg_shapes[index][axis]), var.dtype))
        messages = []
        for condition, message in requirements:
            value = analyzer.simplify(_as_expr(condition))
            if not isinstance(value, tirx.IntImm):
                raise UnsupportedFeatureError(
                    "run-time shape checks",
                    "tir",
                    span=getattr(self.kernels[name].body.body, "span", None),
                    detail=f"kernel {name}: the requirement '{message}' depends on shapes unknown until run time",
                )
            if not int(value.value):
                messages.append(message)
        if not messages:
            return []
        shown = ", ".join(_shape_text(shape) for shape in arg_shapes)
        return [f"kernel {name}: {message}; argument shapes {shown}" for message in messages]

    def assert_lines(self, name: str, arg_shapes: list) -> list[str]:
        """TVMScript statements raising the first failed requirement of the call (none when all hold)."""
        failed = self.failing(name, arg_shapes)[:1]
        return [f"assert T.bool(False), ({python_string(_ERROR_KIND)}, [{python_string(m)}])" for m in failed]
