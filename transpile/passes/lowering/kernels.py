"""Kernels from primitive Relay functions: normalized to the LIR kernel rules, deduplicated, readably named.

A primitive function (`fn (..., Primitive=1)`, made by fusion) becomes a `Kernel` whose params are
tensors only: tuple-typed params are flattened into one param per tensor leaf (the call site passes
projections), non-scalar constants in the body are hoisted into ConstDefs passed as extra
arguments, let bindings are inlined. Structurally equal functions (same body, same types, up to
parameter names) share one kernel, named from its operators: `fused_dense_bias_add_relu`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lir import fresh_name, kernel_from_function
from ...lir.kernels import kernel_base_name
from ...relay import expr as rx
from ...relay import ty as rty
from ...relay.visitor import ExprMutator

__all__ = ["KernelTable", "KernelUse"]


@dataclass(frozen=True)
class KernelUse:
    """How a call site uses a kernel: for each original argument the projection paths of its
    tensor leaves (`((),)` for a tensor), then extra atoms (hoisted constants) to append."""

    kernel: object
    paths: tuple
    extra: tuple


def _leaves(ty, path=()):
    if isinstance(ty, rty.TupleType):
        out = []
        for i, field in enumerate(ty.fields):
            out.extend(_leaves(field, (*path, i)))
        return out
    return [(path, ty)]


def _is_big_constant(e) -> bool:
    return isinstance(e, rx.Constant) and e.data.ndim > 0


def _needs_rebuild(fn) -> bool:
    names = [p.name_hint for p in fn.params]
    if len(set(names)) != len(names):
        return True
    if any(not isinstance(getattr(p, "checked_type_", None), rty.TensorType) for p in fn.params):
        return True
    stack, seen = [fn.body], set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if _is_big_constant(e) or isinstance(e, rx.Let):
            return True
        if isinstance(e, rx.Call):
            stack.extend(e.args)
        elif isinstance(e, rx.Tuple):
            stack.extend(e.fields)
        elif isinstance(e, rx.TupleGetItem):
            stack.append(e.tuple_value)
    return False


class _Rebuild(ExprMutator):
    """Substitutes flattened params, turns big constants into params, inlines lets."""

    def __init__(self, subst: dict, new_param):
        super().__init__()
        self.subst = subst
        self.new_param = new_param
        self.hoisted: list = []  # (param Var, Constant)

    def visit_var(self, v):
        return self.subst.get(v, v)

    def visit_constant(self, c):
        if c.data.ndim == 0:
            return c
        param = self.new_param(rty.TensorType(c.data.shape, c.data.dtype.name))
        self.hoisted.append((param, c))
        return param

    def visit_let(self, let):
        while isinstance(let, rx.Let):
            self.subst[let.var] = self.visit(let.value)
            let = let.body
        return self.visit(let)

    def visit_tuple_get_item(self, t):
        value = self.visit(t.tuple_value)
        if isinstance(value, rx.Tuple):
            return value.fields[t.index]
        return t if value is t.tuple_value else rx.TupleGetItem(value, t.index, t.span)


class KernelTable:
    def __init__(self, builder):
        self.builder = builder
        self._kernels: list = []
        self._by_hash: dict[int, list] = {}
        self._by_function: dict[int, tuple] = {}

    def kernels(self) -> tuple:
        return tuple(self._kernels)

    def use(self, fn) -> KernelUse | None:
        """The kernel for primitive function `fn`, or None when its body calls no operator
        (then the caller inlines it)."""
        known = self._by_function.get(id(fn))
        if known is not None:
            return known[1]
        use = self._make_use(fn)
        self._by_function[id(fn)] = (fn, use)  # the function is kept alive so its id stays unique
        return use

    def _make_use(self, fn) -> KernelUse | None:
        from ...lir.walk import kernel_ops

        paths = tuple(((),) for _ in fn.params)
        extra = ()
        if _needs_rebuild(fn):
            fn, paths, extra = self._rebuild(fn)
        if not kernel_ops(fn):
            return None
        return KernelUse(self._dedup(fn), paths, extra)

    def _rebuild(self, fn):
        from ...relay.typing import infer_type_expr
        from .program import LoweringError

        params: list = []

        def new_param(ty):
            var = rx.Var(f"p{len(params)}", ty)
            params.append(var)
            return var

        subst, paths = {}, []
        for p in fn.params:
            ty = getattr(p, "checked_type_", None) or p.type_annotation
            leaves = _leaves(ty)
            leaf_vars = []
            for _, leaf_ty in leaves:
                if not isinstance(leaf_ty, rty.TensorType):
                    raise LoweringError(f"a primitive function takes %{p.name_hint} of a non-tensor type", fn.span)
                leaf_vars.append(new_param(leaf_ty))
            subst[p] = _rebuild_value(ty, iter(leaf_vars))
            paths.append(tuple(path for path, _ in leaves))
        rebuild = _Rebuild(subst, new_param)
        body = rebuild.visit(fn.body)
        new_fn = infer_type_expr(rx.Function(params, body, None, (), fn.attrs, fn.span))
        extra = tuple(self.builder.constant_atom(c) for _, c in rebuild.hoisted)
        return new_fn, tuple(paths), extra

    def _dedup(self, fn):
        from ...relay.structural import structural_equal, structural_hash

        key = structural_hash(fn)
        for other, kernel in self._by_hash.get(key, ()):
            if structural_equal(other, fn):
                return kernel
        from ...lir.walk import kernel_ops

        name = fresh_name(kernel_base_name(kernel_ops(fn)), self.builder.names)
        kernel = kernel_from_function(name, fn)
        self._kernels.append(kernel)
        self._by_hash.setdefault(key, []).append((fn, kernel))
        return kernel

    def wrap_op_call(self, call, arg_types):
        """A primitive function applying one operator (outside any fused group) to its
        non-constant arguments; returns (function, the arguments it takes)."""
        from ...relay.typing import infer_type_expr

        params, body_args, taken = [], [], []
        for arg, ty in zip(call.args, arg_types):
            if isinstance(arg, rx.Constant) and arg.data.ndim == 0:
                body_args.append(arg)
                continue
            var = rx.Var(f"p{len(params)}", ty)
            params.append(var)
            body_args.append(var)
            taken.append(arg)
        body = rx.Call(call.op, body_args, call.attrs, call.type_args, call.span)
        fn = infer_type_expr(rx.Function(params, body, None, (), {"Primitive": 1}, call.span))
        return fn, taken


def _rebuild_value(ty, leaf_vars):
    if isinstance(ty, rty.TupleType):
        return rx.Tuple([_rebuild_value(f, leaf_vars) for f in ty.fields])
    return next(leaf_vars)
