"""Unification of Relay types: union-find over IncompleteType with an occurs check."""

from __future__ import annotations

from ..ty import (
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    SymbolicDim,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)
from .subst import substitute

__all__ = ["Mismatch", "Unifier", "UNIT", "adt_form", "unify_dims"]

UNIT = TupleType([])


class Mismatch(Exception):
    """Two types cannot be unified; `left`/`right` are the innermost conflicting parts."""

    def __init__(self, left: Type, right: Type, reason: str = ""):
        super().__init__(reason)
        self.left = left
        self.right = right
        self.reason = reason


def adt_form(ty: Type) -> Type:
    """The canonical form of an ADT type: a bare GlobalTypeVar `nat` means `nat[]`."""
    if isinstance(ty, GlobalTypeVar):
        return TypeCall(ty, ())
    return ty


class Unifier:
    """Solves equalities between types; an IncompleteType is bound at most once."""

    def __init__(self):
        self._binding: dict[IncompleteType, Type] = {}

    # ----- union-find --------------------------------------------------------------------------
    def find(self, ty: Type) -> Type:
        """The representative of `ty` (only the top level is looked up)."""
        if not isinstance(ty, IncompleteType):
            return ty
        binding = self._binding
        root = ty
        while True:
            nxt = binding.get(root)
            if nxt is None:
                break
            root = nxt
            if not isinstance(root, IncompleteType):
                break
        node = ty
        while node is not root:  # path compression keeps later finds O(1)
            nxt = binding[node]
            binding[node] = root
            if not isinstance(nxt, IncompleteType):
                break
            node = nxt
        return root

    def bind(self, hole: IncompleteType, ty: Type) -> None:
        if not isinstance(ty, IncompleteType) and self.occurs(hole, ty):
            raise Mismatch(hole, ty, "a type cannot contain itself")
        self._binding[hole] = ty

    def occurs(self, hole: IncompleteType, ty: Type) -> bool:
        ty = self.find(ty)
        if ty is hole:
            return True
        if isinstance(ty, TupleType):
            return any(self.occurs(hole, f) for f in ty.fields)
        if isinstance(ty, FuncType):
            return any(self.occurs(hole, a) for a in ty.arg_types) or self.occurs(hole, ty.ret_type)
        if isinstance(ty, TypeCall):
            return any(self.occurs(hole, a) for a in ty.args)
        if isinstance(ty, RefType):
            return self.occurs(hole, ty.value)
        return False

    # ----- resolution --------------------------------------------------------------------------
    def resolve(self, ty: Type) -> Type:
        """`ty` with every solved IncompleteType replaced by its solution (recursively)."""
        ty = self.find(ty)
        if isinstance(ty, (TensorType, TypeVar, IncompleteType)):
            return ty
        if isinstance(ty, TupleType):
            fields = [self.resolve(f) for f in ty.fields]
            return ty if _same(fields, ty.fields) else TupleType(fields, ty.span)
        if isinstance(ty, FuncType):
            args = [self.resolve(a) for a in ty.arg_types]
            ret = self.resolve(ty.ret_type)
            if _same(args, ty.arg_types) and ret is ty.ret_type:
                return ty
            return FuncType(args, ret, ty.type_params, ty.type_constraints, ty.span)
        if isinstance(ty, TypeCall):
            args = [self.resolve(a) for a in ty.args]
            return ty if _same(args, ty.args) else TypeCall(ty.func, args, ty.span)
        if isinstance(ty, RefType):
            value = self.resolve(ty.value)
            return ty if value is ty.value else RefType(value, ty.span)
        if isinstance(ty, GlobalTypeVar):
            return adt_form(ty)
        return ty

    def holes(self, ty: Type) -> list[IncompleteType]:
        """The unsolved IncompleteTypes inside `ty`."""
        out: list[IncompleteType] = []
        self._collect_holes(ty, out)
        return out

    def _collect_holes(self, ty, out) -> None:
        ty = self.find(ty)
        if isinstance(ty, IncompleteType):
            out.append(ty)
        elif isinstance(ty, TupleType):
            for f in ty.fields:
                self._collect_holes(f, out)
        elif isinstance(ty, FuncType):
            for a in ty.arg_types:
                self._collect_holes(a, out)
            self._collect_holes(ty.ret_type, out)
        elif isinstance(ty, TypeCall):
            for a in ty.args:
                self._collect_holes(a, out)
        elif isinstance(ty, RefType):
            self._collect_holes(ty.value, out)

    def is_complete(self, ty: Type) -> bool:
        ty = self.find(ty)
        if isinstance(ty, TensorType):
            return True
        if isinstance(ty, IncompleteType):
            return False
        if isinstance(ty, TupleType):
            return all(self.is_complete(f) for f in ty.fields)
        if isinstance(ty, FuncType):
            return all(self.is_complete(a) for a in ty.arg_types) and self.is_complete(ty.ret_type)
        if isinstance(ty, TypeCall):
            return all(self.is_complete(a) for a in ty.args)
        if isinstance(ty, RefType):
            return self.is_complete(ty.value)
        return True

    # ----- unification -------------------------------------------------------------------------
    def unify(self, left: Type, right: Type) -> Type:
        """The most general type equal to both; raises Mismatch. Binds IncompleteTypes."""
        left = self.find(left)
        right = self.find(right)
        if left is right:
            return left
        if isinstance(left, IncompleteType):
            self.bind(left, right)
            return right
        if isinstance(right, IncompleteType):
            self.bind(right, left)
            return left
        if isinstance(left, GlobalTypeVar) or isinstance(right, GlobalTypeVar):
            return self.unify(adt_form(left), adt_form(right))
        kind = type(left)
        if kind is not type(right):
            raise Mismatch(left, right)
        if kind is TensorType:
            return self._unify_tensor(left, right)
        if kind is TupleType:
            if len(left.fields) != len(right.fields):
                raise Mismatch(left, right, f"tuples of {len(left.fields)} and {len(right.fields)} fields")
            fields = [self.unify(a, b) for a, b in zip(left.fields, right.fields)]
            return left if _same(fields, left.fields) else TupleType(fields)
        if kind is FuncType:
            return self._unify_func(left, right)
        if kind is TypeCall:
            if left.func != right.func or len(left.args) != len(right.args):
                raise Mismatch(left, right)
            args = [self.unify(a, b) for a, b in zip(left.args, right.args)]
            return left if _same(args, left.args) else TypeCall(left.func, args)
        if kind is RefType:
            value = self.unify(left.value, right.value)
            return left if value is left.value else RefType(value)
        # TypeVars are rigid: equal only to themselves (checked by `is` above).
        raise Mismatch(left, right)

    def _unify_tensor(self, left: TensorType, right: TensorType) -> TensorType:
        if left.shape == right.shape and left.dtype == right.dtype:
            return left
        if left.dtype != right.dtype:
            raise Mismatch(left, right, f"dtype {left.dtype} vs {right.dtype}")
        if len(left.shape) != len(right.shape):
            raise Mismatch(left, right, f"rank {len(left.shape)} vs {len(right.shape)}")
        dims = []
        for axis, (a, b) in enumerate(zip(left.shape, right.shape)):
            dim = unify_dims(a, b)
            if dim is None:
                raise Mismatch(left, right, f"dimension {axis} is {a} vs {b}")
            dims.append(dim)
        return TensorType(dims, left.dtype)

    def _unify_func(self, left: FuncType, right: FuncType) -> FuncType:
        if len(left.arg_types) != len(right.arg_types):
            raise Mismatch(left, right, f"functions of {len(left.arg_types)} and {len(right.arg_types)} parameters")
        # Like TVM: the more polymorphic side's extra type parameters become fresh unknowns,
        # the others are renamed to the other side's parameters.
        more, fewer = (left, right) if len(left.type_params) >= len(right.type_params) else (right, left)
        mapping = {}
        for i, tv in enumerate(more.type_params):
            mapping[tv] = fewer.type_params[i] if i < len(fewer.type_params) else IncompleteType()
        more_args = [substitute(a, mapping) for a in more.arg_types]
        more_ret = substitute(more.ret_type, mapping)
        if more is left:
            pairs, ret_pair = zip(more_args, fewer.arg_types), (more_ret, fewer.ret_type)
        else:
            pairs, ret_pair = zip(fewer.arg_types, more_args), (fewer.ret_type, more_ret)
        args = [self.unify(a, b) for a, b in pairs]
        ret = self.unify(*ret_pair)
        return FuncType(args, ret, fewer.type_params)


def unify_dims(a, b):
    """The dimension equal to both `a` and `b`, or None when they conflict.

    `?` takes the other side. A symbol (SymbolicDim) meeting a constant takes the constant, as
    TVM's solver bound the shape variable to it; two different symbols conflict, as in TVM.
    """
    if a == b:
        return a
    if isinstance(a, AnyDim) and not isinstance(a, SymbolicDim):
        return b
    if isinstance(b, AnyDim) and not isinstance(b, SymbolicDim):
        return a
    if isinstance(a, SymbolicDim) and not isinstance(b, AnyDim):
        return b
    if isinstance(b, SymbolicDim) and not isinstance(a, AnyDim):
        return a
    return None


def _same(new, old) -> bool:
    return all(a is b for a, b in zip(new, old))
