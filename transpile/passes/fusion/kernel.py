"""Turning one group of a block into a kernel: `(fn (%p0, ..., Primitive=1) { ops })(args)`.

The kernel body is the group's dataflow in graph form (nested calls; a value used twice inside the
group is one shared node), as TVM's FuseOps wrote it. Operands from outside the group become
parameters `%p0, %p1, ...` in order of first use (members in block order, operands left to right):
tensor variables and non-scalar constants are passed as they are; 0-d constants stay in the body;
a tuple-typed operand (a tuple from a global call passed to `concatenate`) is passed field by field,
projected by `let`s placed before the call, and rebuilt inside the kernel, so kernel parameters are
always tensors.
"""

from __future__ import annotations

from ...relay import expr as E
from ...relay.ty import FuncType, TensorType, TupleType
from .graph import Node

__all__ = ["build_kernel", "typed", "PRIMITIVE_ATTRS"]

PRIMITIVE_ATTRS = {"Primitive": 1}


def typed(expr, ty):
    expr._set_checked_type(ty)
    return expr


def _is_scalar_constant(atom) -> bool:
    return isinstance(atom, E.Constant) and atom.data.ndim == 0


class _KernelBuilder:
    def __init__(self, members: list[Node], scalar_constants: dict, link_params: bool = False):
        self.members = members
        self.link_params = link_params  # TVM's relay.FuseOps.link_params: every constant stays in the body
        self.member_vars = {node.var: node for node in members}
        self.scalar_constants = scalar_constants  # let-bound 0-d constants of the block, inlined
        self.params: list[E.Var] = []
        self.args: list[E.Expr] = []
        self.param_of: dict[int, E.Expr] = {}
        self.projections: list[tuple[E.Var, E.Expr]] = []
        self.rebuilt: dict = {}

    def _param(self, atom, ty) -> E.Var:
        param = self.param_of.get(id(atom))
        if param is None:
            param = typed(E.Var(f"p{len(self.params)}", ty), ty)
            self.params.append(param)
            self.args.append(atom)
            self.param_of[id(atom)] = param
        return param

    def _unpack(self, atom, ty: TupleType) -> E.Expr:
        """A tuple rebuilt inside the kernel from parameters holding its (projected) fields."""
        cached = self.param_of.get(id(atom))
        if cached is not None:
            return cached
        fields = []
        for index, field_type in enumerate(ty.fields):
            name = f"{atom.name_hint if isinstance(atom, E.Var) else 'c'}_{index}"
            projected = typed(E.Var(name, field_type), field_type)
            self.projections.append((projected, typed(E.TupleGetItem(atom, index), field_type)))
            if isinstance(field_type, TupleType):
                fields.append(self._unpack(projected, field_type))
            else:
                fields.append(self._param(projected, field_type))
        rebuilt = typed(E.Tuple(fields), ty)
        self.param_of[id(atom)] = rebuilt
        return rebuilt

    def operand(self, atom) -> E.Expr:
        if isinstance(atom, E.Var):
            member = self.member_vars.get(atom)
            if member is not None:
                return self.rebuilt[atom]
            constant = self.scalar_constants.get(atom)
            if constant is not None:
                return constant
        if _is_scalar_constant(atom) or (self.link_params and isinstance(atom, E.Constant)):
            return atom
        ty = atom.checked_type_
        if isinstance(ty, TensorType):
            return self._param(atom, ty)
        if isinstance(ty, TupleType):
            return self._unpack(atom, ty)
        raise ValueError(f"a primitive operator's operand must be a tensor or a tuple of tensors, got {ty}")

    def rebuild(self, node: Node) -> E.Expr:
        value = node.value
        if isinstance(value, E.Call):
            new = E.Call(value.op, [self.operand(a) for a in value.args], value.attrs, value.type_args, value.span)
            object.__setattr__(new, "inferred_type_args_", getattr(value, "inferred_type_args_", ()))
        elif isinstance(value, E.Tuple):
            new = E.Tuple([self.operand(f) for f in value.fields], value.span)
        else:
            new = E.TupleGetItem(self.operand(value.tuple_value), value.index, value.span)
        return typed(new, value.checked_type_)

    def build(self):
        for node in self.members:
            self.rebuilt[node.var] = self.rebuild(node)
        root = self.members[-1]
        body = self.rebuilt[root.var]
        out_type = root.value.checked_type_
        param_types = [p.checked_type_ for p in self.params]
        function = E.Function(self.params, body, out_type, (), PRIMITIVE_ATTRS, root.value.span)
        typed(function, FuncType(param_types, out_type))
        call = E.Call(function, self.args, None, (), root.value.span)
        object.__setattr__(call, "inferred_type_args_", ())
        return self.projections, typed(call, out_type)


def build_kernel(members: list[Node], scalar_constants: dict, link_params: bool = False):
    """(projection bindings to emit before the call, the kernel call) for a group; members in block order."""
    return _KernelBuilder(members, scalar_constants, link_params).build()
