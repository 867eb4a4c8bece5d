"""The fusion pass over a module: each block (function body, If branch, match clause) partitioned and rewritten."""

from __future__ import annotations

from ...relay import expr as E
from ...relay.analysis import free_vars
from ...relay.deep import deep_recursion
from ...relay.module import IRModule
from .graph import build_graph, is_atom, post_dominators, split_block
from .kernel import build_kernel, typed
from .partition import partition

__all__ = ["fuse", "is_primitive_function"]


def is_primitive_function(expr) -> bool:
    attrs = getattr(expr, "attrs", None)
    return isinstance(expr, E.Function) and attrs is not None and bool(attrs.get("Primitive", 0))


def _copy_type(new, old):
    ty = getattr(old, "checked_type_", None)
    if ty is not None:
        new._set_checked_type(ty)
    return new


class _Fuser:
    def __init__(
        self, max_group_size: int, fuse_opt_level: int, link_params: bool, barrier_vars, pattern_overrides, max_function_args=0
    ):
        self.max_group_size = max_group_size
        self.max_function_args = max_function_args
        self.fuse_opt_level = fuse_opt_level
        self.link_params = link_params
        self.barrier_vars = barrier_vars
        self.pattern_overrides = pattern_overrides

    # Nested scopes inside a binding's value are blocks of their own.
    def value(self, value):
        if isinstance(value, E.Function):
            if is_primitive_function(value):
                return value  # already a kernel (a module printed after FuseOps): keep it whole
            new = E.Function(
                value.params, self.block(value.body), value.ret_type, value.type_params, value.attrs, value.span
            )
            return _copy_type(new, value)
        if isinstance(value, E.If):
            new = E.If(value.cond, self.block(value.true_branch), self.block(value.false_branch), value.span)
            return _copy_type(new, value)
        if isinstance(value, E.Match):
            clauses = [E.Clause(c.lhs, self.block(c.rhs), c.span) for c in value.clauses]
            return _copy_type(E.Match(value.data, clauses, value.complete, value.span), value)
        if isinstance(value, E.Call) and isinstance(value.op, E.Function):
            new = E.Call(self.value(value.op), value.args, value.attrs, value.type_args, value.span)
            object.__setattr__(new, "inferred_type_args_", getattr(value, "inferred_type_args_", ()))
            return _copy_type(new, value)
        return value

    def block(self, expr):
        bindings, result = split_block(expr)
        bindings = _inline_primitive_functions(bindings, result)
        block_type = getattr(expr, "checked_type_", None)
        if not is_atom(result):
            # Not quite A-normal: name the final value so it can join a group like any binding.
            result_var = typed(E.Var("result", result.checked_type_), result.checked_type_)
            bindings.append((result_var, result))
            result = result_var
        if block_type is None:
            block_type = result.checked_type_
        graph = build_graph(bindings, result, self.barrier_vars, self.pattern_overrides)
        groups = (
            partition(graph, post_dominators(graph), self.max_group_size, self.fuse_opt_level, self.max_function_args)
            if graph.nodes
            else []
        )
        members: dict[int, list] = {}
        for node, group in zip(graph.nodes, groups):
            members.setdefault(id(group), []).append(node)
        kernel_root: dict = {}  # Var of a group's root -> its members, for groups holding an op call
        for group_members in self._split_projections(graph, groups, members):
            if any(node.is_op_call for node in group_members):
                kernel_root[group_members[-1].var] = group_members
        in_kernel = {node.var for group_members in kernel_root.values() for node in group_members}
        scalar_constants = {
            var: value for var, value in bindings if isinstance(value, E.Constant) and value.data.ndim == 0
        }

        new_bindings = []
        for var, value in bindings:
            group_members = kernel_root.get(var)
            if group_members is not None:
                projections, call = build_kernel(group_members, scalar_constants, self.link_params)
                new_bindings.extend(projections)
                new_bindings.append((var, call))
            elif var not in in_kernel:
                new_bindings.append((var, self.value(value)))
        if not new_bindings:
            return result
        body = result
        for var, value in reversed(new_bindings):
            body = typed(E.Let(var, value, body), block_type)
        return body

    @staticmethod
    def _split_projections(graph, groups, members):
        """Groups with every projection of a tuple made outside its group moved out to a binding of its own.

        TVM would pass the whole tuple to the kernel (e.g. batch_norm's result to `%p0.0 |> relu`);
        our kernels take tensors only, so the projection stays a plain `let` and the kernel gets the
        projected tensor. Such a projection only reads its tuple, so the rest of the group stays convex.
        """
        group_of = {node.var: group for node, group in zip(graph.nodes, groups)}
        result = []
        for key, group_members in members.items():
            kept = []
            for node in group_members:
                if isinstance(node.value, E.TupleGetItem):
                    tuple_group = (
                        group_of.get(node.value.tuple_value) if isinstance(node.value.tuple_value, E.Var) else None
                    )
                    if tuple_group is None or id(tuple_group) != key:
                        result.append([node])
                        continue
                kept.append(node)
            if kept:
                result.append(kept)
        return result

    def function(self, function):
        return self.value(function)


def _graph_form(function):
    """A kernel whose body A-normal form let-bound step by step, back in TVM's nested (graph) form."""
    bindings, result = split_block(function.body)
    if not bindings or not isinstance(result, E.Var):
        return function
    value_of = {}

    def operand(atom):
        return value_of.get(atom, atom) if isinstance(atom, E.Var) else atom

    for var, value in bindings:
        if isinstance(value, E.Call) and isinstance(value.op, E.Op):
            new = E.Call(value.op, [operand(a) for a in value.args], value.attrs, value.type_args, value.span)
            object.__setattr__(new, "inferred_type_args_", getattr(value, "inferred_type_args_", ()))
        elif isinstance(value, E.Tuple):
            new = E.Tuple([operand(f) for f in value.fields], value.span)
        elif isinstance(value, E.TupleGetItem):
            new = E.TupleGetItem(operand(value.tuple_value), value.index, value.span)
        else:
            return function
        value_of[var] = _copy_type(new, value)
    new_function = E.Function(
        function.params, operand(result), function.ret_type, function.type_params, function.attrs, function.span
    )
    return _copy_type(new_function, function)


def _inline_primitive_functions(bindings, result):
    """`let %f = fn (..., Primitive=1) {..}; let %r = %f(%x)` -> `let %r = (fn (...) {..})(%x)`.

    A-normal form let-binds the kernels of a module printed after FuseOps; putting them back in
    callee position gives every kernel call the same shape. A kernel variable used other than as
    a callee in its own block (passed along, captured, returned) stays a binding.
    """
    kernels = {var: value for var, value in bindings if is_primitive_function(value)}
    if not kernels:
        return bindings
    escaped = set()
    for var, value in bindings:
        if isinstance(value, E.Call) and value.op in kernels:
            escaped.update(a for a in value.args if a in kernels)
        elif var not in kernels:
            escaped.update(v for v in free_vars(value) if v in kernels)
    if isinstance(result, E.Var) and result in kernels:
        escaped.add(result)
    inlined = {var: _graph_form(fn) for var, fn in kernels.items() if var not in escaped}
    out = []
    for var, value in bindings:
        if var in inlined:
            continue
        if isinstance(value, E.Call) and value.op in inlined:
            new = E.Call(inlined[value.op], value.args, value.attrs, value.type_args, value.span)
            object.__setattr__(new, "inferred_type_args_", getattr(value, "inferred_type_args_", ()))
            value = _copy_type(new, value)
        out.append((var, value))
    return out


@deep_recursion
def fuse(
    mod: IRModule,
    max_group_size: int = 256,
    *,
    fuse_opt_level: int = 2,
    link_params: bool = False,
    barrier_vars=frozenset(),
    pattern_overrides=None,
    max_function_args: int = 0,
) -> IRModule:
    """A new module whose primitive operator calls are grouped into kernels (Relay's FuseOps rules).

    Input: a type-checked module in A-normal form. Output: the same module where each group of
    operator calls of a block is one binding `let %r = (fn (%p0: T0, ..., Primitive=1) -> T { ... })(a0, ...)`
    (see the package docstring); every node keeps or gets its `checked_type_`.
    TVM's FuseOps knobs: `fuse_opt_level` 0 puts every operator in a kernel of its own;
    `link_params` keeps non-scalar constants in the kernel body instead of passing them;
    the bindings of `barrier_vars` end their groups (TVM never fuses through a user `let`);
    `pattern_overrides` ({op name: OpPattern}) replaces the registry's fusion pattern of those operators;
    `max_function_args` (0: none) is the target's limit on a kernel's arguments.
    """
    fuser = _Fuser(
        max_group_size,
        fuse_opt_level,
        link_params,
        frozenset(barrier_vars),
        dict(pattern_overrides or {}),
        max_function_args,
    )
    new = mod.copy()
    new.functions = {gv: fuser.function(func) for gv, func in mod.functions.items()}
    return new
