"""FuseOps under TVM's name: the compiler's operator fusion as a Relay -> Relay pass, in TVM's output form.

    mod = relay.transform.FuseOps(fuse_opt_level=2)(mod)
    # main: fn (%x) { %0 = fn (%p0, Primitive=1) { exp(add(%p0, 1f)) }; %0(%x) }

The grouping is transpile.passes.fusion (TVM's GraphPartitioner over post-dominators), the same code
the compiler pipeline runs; this pass only changes the form around it. The program is put in
A-normal form, fused, and the lets A-normal form introduced are inlined again, so a graph-form
program comes back in graph form with each group as `Call(Function(params, body, Primitive=1), args)`
and the user's own lets stay lets (and, as in TVM, fusion never runs through one).

The knobs are TVM's: `fuse_opt_level` (-1: the PassContext's opt_level; 0: every operator alone),
PassContext config `relay.FuseOps.max_depth` (at most this many operators per kernel, default 256)
and `relay.FuseOps.link_params` (non-scalar constants stay in the kernel body rather than being
passed as arguments). The target in scope (`with tvm.target.Target("opencl")`) bounds a kernel's
arguments by its `max_function_args`, as TVM's did. `annotation.stop_fusion(x)` is an opaque
operator, so nothing fuses across it, and the pass then drops it, as TVM's FuseMutator did.
Where ours differs from TVM: a projection of a tuple made outside a kernel
(`batch_norm(...).0 |> relu`) is passed as the projected tensor, not as the whole tuple.
"""

from __future__ import annotations

import sys

from .. import expr as E
from ..module import IRModule
from ..op.registry import OpPattern
from ..visitor import ExprMutator, ExprVisitor
from .infra import InferType, Pass, PassContext, PassInfo, ensure_typed
from .normal_form import graph_form

__all__ = ["FuseOps", "DEFAULT_MAX_DEPTH"]

DEFAULT_MAX_DEPTH = 256  # TVM's kMaxFusedOps

# Operators whose registry pattern differs from TVM v0.19's: the registry marks nn.softmax opaque, so
# the compiler pipeline keeps it a kernel of its own; TVM marked it out_elemwise_fusable, so a
# following cast or add joined it. This pass follows TVM; the pipeline is unchanged.
TVM_PATTERNS = {"nn.softmax": OpPattern.OUT_ELEMWISE_FUSABLE}


class _UserBindings(ExprVisitor):
    """The let variables and Primitive functions the user wrote (FuseOps keeps both as they are)."""

    def __init__(self):
        super().__init__()
        self.let_vars: set = set()
        self.kernels: set = set()

    def visit_let(self, let):
        node = let
        while isinstance(node, E.Let):
            self.let_vars.add(node.var)
            node = node.body
        super().visit_let(let)

    def visit_function(self, f):
        if _is_primitive(f):
            self.kernels.add(id(f))
        super().visit_function(f)


def _is_primitive(expr) -> bool:
    attrs = getattr(expr, "attrs", None)
    return isinstance(expr, E.Function) and attrs is not None and bool(attrs.get("Primitive", 0))


class _UnannotatedKernels(ExprMutator):
    """New kernels without a return annotation, like the functions TVM's FuseOps output is compared with.

    TVM's InferType fills in missing annotations, so there a hand-written `Function([p], body)` and
    FuseOps' annotated one agree after it; ours leaves annotations as written, so the kernel leaves
    its return type to inference (its `checked_type_` is unchanged).
    """

    def __init__(self, user_kernels: set):
        super().__init__()
        self.user_kernels = user_kernels

    def visit_function(self, f):
        if not _is_primitive(f):
            return super().visit_function(f)
        if id(f) in self.user_kernels or f.ret_type is None:
            return f
        new = E.Function(f.params, f.body, None, f.type_params, f.attrs, f.span)
        if getattr(f, "checked_type_", None) is not None:
            new._set_checked_type(f.checked_type_)
        return new


class _DropStopFusion(ExprMutator):
    """`(fn (%p, Primitive=1) { annotation.stop_fusion(%p) })(%x)` -> `%x`: the barrier has done its work."""

    def visit_call(self, call):
        if _is_primitive(call.op) and len(call.args) == 1 and len(call.op.params) == 1:
            body = call.op.body
            if (
                isinstance(body, E.Call)
                and isinstance(body.op, E.Op)
                and body.op.name == "annotation.stop_fusion"
                and body.args[0] is call.op.params[0]
            ):
                return self.visit(call.args[0])
        return super().visit_call(call)


def _target_max_function_args() -> int:
    """The argument limit of the target in scope (0: none, or no target in scope)."""
    # Only the tvm_compat facade opens a target scope; if it was never imported, none is open.
    target_module = sys.modules.get("transpile.tvm_compat.target")
    target = target_module.Target.current() if target_module is not None else None
    return target.max_function_args if target is not None else 0


def _config_int(ctx: PassContext, key: str, default: int) -> int:
    value = ctx.config.get(key, default)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"PassContext config {key!r} must be an integer, got {value!r}") from None


class FuseOps(Pass):
    """TVM's relay.transform.FuseOps: group operator calls into `Primitive=1` functions called in place."""

    info = PassInfo(0, "FuseOps", required=("InferType",))

    def __init__(self, fuse_opt_level: int = -1):
        if not isinstance(fuse_opt_level, int) or isinstance(fuse_opt_level, bool) or fuse_opt_level < -1:
            raise ValueError(f"FuseOps: fuse_opt_level must be an int >= -1, got {fuse_opt_level!r}")
        self.fuse_opt_level = fuse_opt_level

    def transform_module(self, mod: IRModule) -> IRModule:
        from ...passes.anf import to_anf
        from ...passes.fusion import fuse
        from ..deep import run_deep

        ctx = PassContext.current()
        opt_level = ctx.opt_level if self.fuse_opt_level == -1 else self.fuse_opt_level
        max_depth = _config_int(ctx, "relay.FuseOps.max_depth", DEFAULT_MAX_DEPTH)
        link_params = bool(ctx.config.get("relay.FuseOps.link_params", False))
        if max_depth < 1:
            raise ValueError(f"PassContext config 'relay.FuseOps.max_depth' must be >= 1, got {max_depth}")
        max_function_args = _target_max_function_args()

        def run():
            typed = ensure_typed(mod)
            user = _UserBindings()
            for func in typed.functions.values():
                if isinstance(func, E.Function):
                    user.visit(func)
            fused = fuse(
                to_anf(typed),
                max_depth,
                fuse_opt_level=opt_level,
                link_params=link_params,
                barrier_vars=user.let_vars,
                pattern_overrides=TVM_PATTERNS,
                max_function_args=max_function_args,
            )
            out = fused.copy()
            for gv, func in fused.functions.items():
                if isinstance(func, E.Function):
                    func = graph_form(func, lambda var: var not in user.let_vars)
                    func = _UnannotatedKernels(user.kernels).visit(func)
                    out.functions[gv] = _DropStopFusion().visit(func)
            return InferType()(out)

        return run_deep(run)
