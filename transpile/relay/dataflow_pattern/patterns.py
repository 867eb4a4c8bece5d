"""Dataflow pattern nodes and their constructors (tvm.relay.dataflow_pattern's language)."""

from __future__ import annotations

from typing import Callable, Sequence

from ...errors import TranspileError
from ..attrs import Attrs

__all__ = [
    "DFPatternError",
    "DFPattern",
    "ExprPattern",
    "VarPattern",
    "ConstantPattern",
    "CallPattern",
    "FunctionPattern",
    "IfPattern",
    "LetPattern",
    "TuplePattern",
    "TupleGetItemPattern",
    "AltPattern",
    "WildcardPattern",
    "TypePattern",
    "DataTypePattern",
    "ShapePattern",
    "AttrPattern",
    "is_var",
    "is_constant",
    "is_expr",
    "is_op",
    "is_tuple",
    "is_tuple_get_item",
    "is_if",
    "is_let",
    "wildcard",
    "has_type",
    "has_dtype",
    "has_shape",
    "has_attr",
]


class DFPatternError(TranspileError, ValueError):
    """A pattern built from something that is not a pattern (or an unknown operator)."""


def _as_pattern(value, where: str) -> "DFPattern":
    from ..expr import Expr

    if isinstance(value, DFPattern):
        return value
    if isinstance(value, Expr):
        return ExprPattern(value)
    raise DFPatternError(f"{where}: expected a pattern or a Relay expression, got {type(value).__name__}")


def _as_patterns(values, where: str):
    return None if values is None else tuple(_as_pattern(v, where) for v in values)


class DFPattern:
    """Base of all patterns; patterns compare by identity, as TVM's did (the matcher memoizes on them)."""

    __slots__ = ()

    def __call__(self, *args):
        # TVM's spelling for "a call with any arguments" is pattern(None).
        if len(args) == 1 and args[0] is None:
            return CallPattern(self, None)
        return CallPattern(self, list(args))

    def __or__(self, other):
        return AltPattern(self, other)

    def __add__(self, other):
        return is_op("add")(self, other)

    def __sub__(self, other):
        return is_op("subtract")(self, other)

    def __mul__(self, other):
        return is_op("multiply")(self, other)

    def __truediv__(self, other):
        return is_op("divide")(self, other)

    def has_attr(self, attrs) -> "AttrPattern":
        return AttrPattern(self, attrs)

    def has_type(self, ttype) -> "TypePattern":
        return TypePattern(self, ttype)

    def has_dtype(self, dtype: str) -> "DataTypePattern":
        return DataTypePattern(self, dtype)

    def has_shape(self, shape) -> "ShapePattern":
        return ShapePattern(self, shape)

    def optional(self, option_constructor: Callable[["DFPattern"], "DFPattern"]) -> "AltPattern":
        """This pattern, or `option_constructor(this)` (an optional user such as a following relu)."""
        return self | option_constructor(self)

    def match(self, expr) -> bool:
        from .matcher import match

        return match(self, expr)

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class ExprPattern(DFPattern):
    """Matches an expression structurally equal to `expr` (is_op is one of these, over an Op)."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr


class VarPattern(DFPattern):
    """Matches a variable, named `name_hint` unless that is empty."""

    __slots__ = ("name_hint",)

    def __init__(self, name_hint: str = ""):
        self.name_hint = name_hint


class ConstantPattern(DFPattern):
    """Matches any constant."""

    __slots__ = ()


class CallPattern(DFPattern):
    """Matches a call whose callee matches `op` and whose arguments match `args` (None: any arguments)."""

    __slots__ = ("op", "args")

    def __init__(self, op, args: Sequence | None):
        self.op = _as_pattern(op, "CallPattern")
        self.args = _as_patterns(args, "CallPattern")


class FunctionPattern(DFPattern):
    """Matches a function; `params` None matches any parameter list."""

    __slots__ = ("params", "body")

    def __init__(self, params: Sequence | None, body):
        self.params = _as_patterns(params, "FunctionPattern")
        self.body = _as_pattern(body, "FunctionPattern")


class IfPattern(DFPattern):
    __slots__ = ("cond", "true_branch", "false_branch")

    def __init__(self, cond, true_branch, false_branch):
        self.cond = _as_pattern(cond, "IfPattern")
        self.true_branch = _as_pattern(true_branch, "IfPattern")
        self.false_branch = _as_pattern(false_branch, "IfPattern")


class LetPattern(DFPattern):
    __slots__ = ("var", "value", "body")

    def __init__(self, var, value, body):
        self.var = _as_pattern(var, "LetPattern")
        self.value = _as_pattern(value, "LetPattern")
        self.body = _as_pattern(body, "LetPattern")


class TuplePattern(DFPattern):
    """Matches a tuple expression; `fields` None matches any tuple."""

    __slots__ = ("fields",)

    def __init__(self, fields: Sequence | None):
        self.fields = _as_patterns(fields, "TuplePattern")

    def __getitem__(self, index: int) -> "TupleGetItemPattern":
        return TupleGetItemPattern(self, index)

    def __len__(self) -> int:
        return len(self.fields or ())


class TupleGetItemPattern(DFPattern):
    """Matches `tuple.index`; index None (or -1) matches any index."""

    __slots__ = ("tuple_value", "index")

    def __init__(self, tuple_value, index: int | None = None):
        self.tuple_value = _as_pattern(tuple_value, "TupleGetItemPattern")
        self.index = -1 if index is None else int(index)


class AltPattern(DFPattern):
    """Matches what `left` matches, else what `right` matches."""

    __slots__ = ("left", "right")

    def __init__(self, left, right):
        self.left = _as_pattern(left, "AltPattern")
        self.right = _as_pattern(right, "AltPattern")


class WildcardPattern(DFPattern):
    """Matches anything (or, once redirected, what the redirect target matches)."""

    __slots__ = ("pattern",)

    def __init__(self):
        self.pattern = None

    def redirect_to(self, pattern) -> None:
        self.pattern = _as_pattern(pattern, "WildcardPattern.redirect_to")


class TypePattern(DFPattern):
    """Matches what `pattern` matches when the expression's type equals `type`."""

    __slots__ = ("pattern", "type")

    def __init__(self, pattern, ttype):
        self.pattern = _as_pattern(pattern, "TypePattern")
        self.type = ttype


class DataTypePattern(DFPattern):
    __slots__ = ("pattern", "dtype")

    def __init__(self, pattern, dtype: str):
        self.pattern = _as_pattern(pattern, "DataTypePattern")
        self.dtype = str(dtype)


class ShapePattern(DFPattern):
    __slots__ = ("pattern", "shape")

    def __init__(self, pattern, shape):
        self.pattern = _as_pattern(pattern, "ShapePattern")
        self.shape = tuple(shape)


class AttrPattern(DFPattern):
    """Matches what `pattern` matches when the operator/call/function carries all of `attrs`."""

    __slots__ = ("pattern", "attrs")

    def __init__(self, pattern, attrs):
        self.pattern = _as_pattern(pattern, "AttrPattern")
        self.attrs = attrs if isinstance(attrs, Attrs) else Attrs(dict(attrs))


def is_var(name: str = "") -> VarPattern:
    return VarPattern(name)


def is_constant() -> ConstantPattern:
    return ConstantPattern()


def is_expr(expr) -> ExprPattern:
    return ExprPattern(expr)


def is_op(op_name: str) -> ExprPattern:
    """A pattern for the operator itself; call it with argument patterns to match its calls."""
    from ..expr import Op
    from ..op.registry import lookup

    if lookup(op_name) is None:
        raise DFPatternError(f"is_op: operator {op_name!r} is not registered")
    return ExprPattern(Op.get(op_name))


def is_tuple(fields) -> TuplePattern:
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value, index: int | None = None) -> TupleGetItemPattern:
    return TupleGetItemPattern(tuple_value, index)


def is_if(cond, true_branch, false_branch) -> IfPattern:
    return IfPattern(cond, true_branch, false_branch)


def is_let(var, value, body) -> LetPattern:
    return LetPattern(var, value, body)


def wildcard() -> WildcardPattern:
    return WildcardPattern()


def has_type(ttype, pattern=None) -> TypePattern:
    return TypePattern(wildcard() if pattern is None else pattern, ttype)


def has_dtype(dtype: str, pattern=None) -> DataTypePattern:
    return DataTypePattern(wildcard() if pattern is None else pattern, dtype)


def has_shape(shape, pattern=None) -> ShapePattern:
    return ShapePattern(wildcard() if pattern is None else pattern, shape)


def has_attr(attrs, pattern=None) -> AttrPattern:
    return AttrPattern(wildcard() if pattern is None else pattern, attrs)
