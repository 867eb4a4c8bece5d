"""Lowering an LIR Kernel to TE tensors (through each operator's registry `te_impl`) and to a PrimFunc.

Calling convention of the resulting PrimFunc (and of the compiled `__tvm_ffi_<name>` symbol):
a packed TVM-FFI call with DLTensor arguments, the kernel's inputs first (in `kernel.params`
order) then one output tensor per result tensor (a tuple result is flattened in order). Every
buffer must be 64-byte aligned; the kernel does not check it.

A `?` dimension of a parameter is a symbolic int32 var the kernel binds from the argument's
DLTensor shape; result shapes are expressions over those vars (`kernel_shapes`), and the caller
allocates the outputs with them after checking `KernelShapes.requirements`.

Conditions on operand *values* (an index within its axis, te_support.require_values) are checked
by the kernel itself: a failed one makes the call return TVM's error (kind ValueError, message
"kernel <name>: <condition>") before anything depending on it runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import TranspileError, UnsupportedFeatureError
from ..relay.ty import AnyDim, TensorType, TupleType

__all__ = [
    "KernelLoweringError",
    "KernelShapes",
    "kernel_to_te",
    "kernel_shapes",
    "lower_kernel",
    "result_types",
    "check_kernel_name",
    "is_dynamic_kernel",
]

_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class KernelLoweringError(TranspileError):
    """A kernel could not be expressed in TE (missing or inconsistent operator lowering)."""


def check_kernel_name(name: str) -> None:
    if not isinstance(name, str) or not _C_IDENTIFIER.match(name):
        raise KernelLoweringError(f"kernel name {name!r} is not a C identifier")


def result_types(kernel) -> list[TensorType]:
    """The kernel's result tensor types in output order (a tuple result flattened)."""
    ty = kernel.body.body.checked_type
    return _flatten_type(ty, kernel.name)


def _flatten_type(ty, kernel_name) -> list[TensorType]:
    if isinstance(ty, TensorType):
        return [ty]
    if isinstance(ty, TupleType):
        out = []
        for field in ty.fields:
            out.extend(_flatten_type(field, kernel_name))
        return out
    raise KernelLoweringError(f"kernel {kernel_name}: expected a tensor or tuple-of-tensors result, found {ty!r}")


def is_dynamic_kernel(kernel) -> bool:
    """Whether a parameter or result of the kernel has a `?` dimension."""
    types = [p.type for p in kernel.params if isinstance(p.type, TensorType)] + result_types(kernel)
    return any(isinstance(d, AnyDim) for ty in types for d in ty.shape)


def dim_var_name(param_name: str, axis: int) -> str:
    return f"{param_name}_dim{axis}"


def _param_shape(ty: TensorType, param_name: str) -> list:
    """A placeholder shape: ints, and a symbolic int32 var per `?` dimension (bound from the
    argument's DLTensor shape when the kernel is called)."""
    from tvm import tirx

    return [
        tirx.Var(dim_var_name(param_name, axis), "int32") if isinstance(d, AnyDim) else int(d)
        for axis, d in enumerate(ty.shape)
    ]


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class _ToTE:
    """Evaluates a kernel's Relay body over TE tensors; shared sub-expressions are computed once."""

    def __init__(self, kernel):
        from tvm import te

        self.te = te
        self.kernel = kernel
        self.memo: dict = {}
        self.inputs = []
        function = kernel.body
        if len(function.params) != len(kernel.params):
            raise KernelLoweringError(
                f"kernel {kernel.name}: body has {len(function.params)} parameters, kernel declares {len(kernel.params)}"
            )
        for var, param in zip(function.params, kernel.params):
            ty = getattr(var, "checked_type_", None) or param.type
            if not isinstance(ty, TensorType):
                raise KernelLoweringError(f"kernel {kernel.name}: parameter {param.name} is not a tensor ({ty!r})")
            tensor = te.placeholder(_param_shape(ty, param.name), ty.dtype, name=param.name)
            self.memo[var] = tensor
            self.inputs.append(tensor)
        self.n_consts = 0
        self.requirements: list = []  # (condition over dim vars, message) from the lowerings
        self.value_checks: list = []  # (0-d bool tensor, message): conditions on operand values

    def run(self, expr):
        # Iterative post-order so long fused chains cannot hit Python's recursion limit.
        from ..relay import expr as rx

        stack = [(expr, False)]
        while stack:
            node, ready = stack.pop()
            if node in self.memo:
                continue
            children = self._children(node, rx)
            if not ready and children:
                stack.append((node, True))
                stack.extend((c, False) for c in children if c not in self.memo)
                continue
            self.memo[node] = self._visit(node, rx)
        return self.memo[expr]

    def _children(self, node, rx):
        if isinstance(node, rx.Call):
            return list(node.args)
        if isinstance(node, rx.Tuple):
            return list(node.fields)
        if isinstance(node, rx.TupleGetItem):
            return [node.tuple_value]
        return []

    def _visit(self, node, rx):
        if isinstance(node, rx.Call):
            return self._call(node, rx)
        if isinstance(node, rx.Tuple):
            return [self.memo[f] for f in node.fields]
        if isinstance(node, rx.TupleGetItem):
            return self.memo[node.tuple_value][node.index]
        if isinstance(node, rx.Constant):
            return self._constant(node)
        if isinstance(node, rx.Var):
            raise KernelLoweringError(f"kernel {self.kernel.name}: free variable {node.name_hint} in the body")
        raise KernelLoweringError(f"kernel {self.kernel.name}: unexpected {type(node).__name__} in a kernel body")

    def _constant(self, node):
        from ..relay.op.families.te_support import const

        data = np.asarray(node.data)
        if data.ndim != 0:
            raise KernelLoweringError(
                f"kernel {self.kernel.name}: non-scalar constant of shape {data.shape} in a kernel body "
                "(the pipeline hoists those into kernel parameters)"
            )
        dtype = data.dtype.name
        value = data.item()
        self.n_consts += 1
        # (te_support.const: a float zero is one TVM's simplifier cannot fold away)
        return self.te.compute((), lambda: const(value, dtype), name=f"const{self.n_consts}")

    def _call(self, call, rx):
        op = call.op
        opdef = op.definition if isinstance(op, rx.Op) else None
        name = getattr(op, "name", repr(op))
        if opdef is None:
            raise KernelLoweringError(f"kernel {self.kernel.name}: {name} is not a registered operator")
        if opdef.te_impl is None:
            raise UnsupportedFeatureError(
                f"operator {name}", "tvm-kernels", detail=f"it has no TE lowering (te_impl) in the registry"
            )
        from ..relay.op.families.te_support import collect_requirements, collect_value_checks

        args = [self.memo[a] for a in call.args]
        out_type = call.checked_type
        try:
            with collect_requirements() as requirements, collect_value_checks() as value_checks:
                result = opdef.te_impl(args, call.attrs, out_type)
            self.requirements.extend(requirements)
            self.value_checks.extend(value_checks)
        except UnsupportedFeatureError as exc:
            if exc.backend == "te":  # a data-dependent output shape: name the kernel too
                raise UnsupportedFeatureError(
                    exc.feature, "tvm-kernels", span=exc.span or call.span, detail=f"kernel {self.kernel.name}"
                ) from None
            raise
        except TranspileError:
            raise
        except Exception as exc:
            if _has_dynamic_dims(call.args):  # a lowering written for static extents (int(dim) of a `?`)
                raise UnsupportedFeatureError(
                    f"operator {name} with `?` dimensions",
                    "tvm-kernels",
                    span=call.span,
                    detail=f"kernel {self.kernel.name}: its TE lowering needs static extents "
                    f"({type(exc).__name__}: {exc})",
                ) from None
            raise KernelLoweringError(
                f"kernel {self.kernel.name}: TE lowering of {name} failed for {out_type!r}: {type(exc).__name__}: {exc}"
            ) from exc
        self._check(name, result, out_type)
        return result

    def _check(self, name, result, out_type):
        if isinstance(out_type, TupleType):
            if not isinstance(result, (list, tuple)) or len(result) != len(out_type.fields):
                raise KernelLoweringError(
                    f"kernel {self.kernel.name}: TE lowering of {name} must return {len(out_type.fields)} tensors"
                )
            for r, t in zip(result, out_type.fields):
                self._check(name, r, t)
            return
        if isinstance(result, (list, tuple)) or not hasattr(result, "shape"):
            raise KernelLoweringError(f"kernel {self.kernel.name}: TE lowering of {name} must return one tensor")
        self._check_shape(name, result, out_type)

    def _check_shape(self, name, result, out_type):
        """Static dims of the type must match TE's; a symbolic TE dim where the type is static
        becomes a run-time requirement (dtype and rank must match exactly)."""
        from tvm import tirx

        found = list(result.shape)
        mismatch = len(found) != len(out_type.shape) or str(result.dtype) != out_type.dtype
        for axis, (dim, expected) in enumerate(zip(found, out_type.shape)):
            if mismatch or isinstance(expected, AnyDim):
                continue
            if isinstance(dim, tirx.IntImm) or isinstance(dim, int):
                mismatch = int(dim) != int(expected)
            else:
                self.requirements.append(
                    (dim == int(expected), f"{name}: dimension {axis} of the result must be {expected}")
                )
        if mismatch:
            raise KernelLoweringError(
                f"kernel {self.kernel.name}: TE lowering of {name} produced Tensor[{_shape_text(found)}, {result.dtype}], "
                f"the type says Tensor[{_shape_text(out_type.shape)}, {out_type.dtype}]"
            )


def _has_dynamic_dims(args) -> bool:
    types = []
    for arg in args:
        ty = getattr(arg, "checked_type_", None)
        types.extend(_flatten_type(ty, "") if isinstance(ty, (TensorType, TupleType)) else [])
    return any(isinstance(d, AnyDim) for ty in types for d in ty.shape)


def _flatten_values(value) -> list:
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(_flatten_values(v))
        return out
    return [value]


def _copy_of(tensor):
    return lambda *index: tensor(*index)


def _lower_to_te(kernel):
    from tvm import te

    check_kernel_name(kernel.name)
    walker = _ToTE(kernel)
    outputs = _flatten_values(walker.run(kernel.body.body))
    expected = result_types(kernel)
    if len(outputs) != len(expected):
        raise KernelLoweringError(f"kernel {kernel.name}: {len(outputs)} outputs for {len(expected)} result tensors")
    # An output must be computed by the kernel and distinct from the others (each is its own buffer).
    seen = set()
    inputs = set(walker.inputs)
    for index, tensor in enumerate(outputs):
        if tensor in inputs or tensor in seen:
            outputs[index] = te.compute(tensor.shape, _copy_of(tensor), name=f"{kernel.name}_out{index}")
        seen.add(outputs[index])
    return walker, outputs


def kernel_to_te(kernel):
    """(inputs, outputs): TE placeholders for `kernel.params` and one TE tensor per result tensor.

    A `?` dimension of a parameter is a symbolic int32 var (see `kernel_shapes`)."""
    walker, outputs = _lower_to_te(kernel)
    return list(walker.inputs), outputs


@dataclass
class KernelShapes:
    """How a kernel's result shapes follow from its arguments' run-time shapes.

    - dims: (var, parameter index, axis) for every `?` dimension of a parameter;
    - outputs: per result tensor (flattened), its shape as PrimExprs over those vars (ints when static);
    - requirements: (condition over the vars, message) that must hold before the kernel runs
      (e.g. broadcastable operands); a caller checks them, the kernel itself does not.
    """

    dims: list
    outputs: list
    requirements: list


def kernel_shapes(kernel) -> KernelShapes:
    """The shape functions of a kernel (see KernelShapes); raises UnsupportedFeatureError when a
    result shape depends on something other than the arguments' shapes."""
    from tvm import tirx

    walker, outputs = _lower_to_te(kernel)
    dims = []
    for index, tensor in enumerate(walker.inputs):
        for axis, dim in enumerate(tensor.shape):
            if isinstance(dim, tirx.Var):
                dims.append((dim, index, axis))
    known = [var for var, _, _ in dims]
    shapes = []
    for index, tensor in enumerate(outputs):
        shape = []
        for dim in tensor.shape:
            if isinstance(dim, tirx.IntImm):
                shape.append(int(dim))
                continue
            free = [v for v in tirx.analysis.undefined_vars(dim, known)]
            if free:
                raise UnsupportedFeatureError(
                    "a result shape not computable from the argument shapes",
                    "tvm-kernels",
                    span=getattr(kernel.body.body, "span", None),
                    detail=f"kernel {kernel.name}: result {index} has dimension {dim} ({', '.join(kernel.ops)})",
                )
            shape.append(dim)
        shapes.append(shape)
    return KernelShapes(dims, shapes, list(walker.requirements))


def lower_kernel(kernel, schedule: bool = True, target=None):
    """The kernel as a PrimFunc named `kernel.name` (params: inputs then outputs), scheduled for `target`."""
    from tvm import te

    from .primfunc_fixes import assert_value_checks, initialize_reductions_before_their_loops
    from .target import host_target

    inputs, outputs = kernel_to_te(kernel)
    func = te.create_prim_func(inputs + outputs).with_attr("global_symbol", kernel.name)
    func = initialize_reductions_before_their_loops(func, kernel.name)
    func = assert_value_checks(func, kernel.name)  # (both in primfunc_fixes.py)
    if not schedule:
        return func
    from .iter_map_workaround import avoid_iter_map_padding
    from .schedules import schedule_kernel

    mod = schedule_kernel(func, kernel, host_target() if target is None else target)
    return avoid_iter_map_padding(mod[kernel.name])

