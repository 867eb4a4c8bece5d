"""The operator registry: the one place an operator is defined.

An `OpDef` holds the operator's name, its attribute schema (with defaults), its type relation,
its fusion pattern kind, its numpy reference implementation and (filled in by later layers)
its TE/topi lowering. Everything else (parser, printer, type inference, interpreter, backends)
asks the registry instead of knowing operators itself.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..attrs import Attrs, freeze_attr_value

__all__ = [
    "OpPattern",
    "AttrField",
    "REQUIRED",
    "OpDef",
    "RelationError",
    "register",
    "lookup",
    "get",
    "registered_ops",
    "normalize_attrs",
    "make_call",
]


class OpPattern(enum.IntEnum):
    """Fusion pattern kinds, with TVM's numbering (relay/op/op_attr_types.h)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()


class RelationError(Exception):
    """Raised by a type relation; type inference adds the call's source location."""


@dataclass(frozen=True)
class AttrField:
    """One attribute of an operator. `convert` normalizes a user value (e.g. int -> tuple)."""

    name: str
    default: Any = REQUIRED
    convert: Callable[[Any], Any] | None = None
    doc: str = ""


@dataclass
class OpDef:
    """The full definition of a primitive operator.

    type_rel(arg_types, attrs) -> output type; arg types are fully known (no IncompleteType);
        raise RelationError with a message naming the offending types.
    infer_args(arg_types, attrs) -> {position: type}: the types the operator implies for arguments
        whose type is still unknown (None in arg_types; the others are fully known), as TVM's
        relations assigned them (a convolution's weight from the data, channels and kernel_size).
        Inference unifies each with its argument's type like any other constraint, then runs
        type_rel; {} while what it needs is unknown. Raise RelationError like type_rel.
    numpy_impl(args, attrs, out_type) -> ndarray (or tuple of ndarrays for tuple outputs).
    te_impl(te_inputs, attrs, out_type) -> te.Tensor or list (added by the TE lowering layer).
    num_inputs: number of expression arguments; None when variadic.
    tuple_input: the single argument is a tuple of tensors (concatenate, stack).
    gradient(orig_call, output_grad) -> [grad per input] (None: zero), as TVM's FPrimalGradient;
        the rules live in op/gradients/ and are attached when that package is imported.
    """

    name: str
    num_inputs: int | None
    type_rel: Callable
    pattern: OpPattern
    numpy_impl: Callable
    attrs: Sequence[AttrField] = ()
    tuple_input: bool = False
    te_impl: Callable | None = None
    description: str = ""
    extras: dict = field(default_factory=dict)
    gradient: Callable | None = None
    infer_args: Callable | None = None

    @property
    def attr_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.attrs)

    def defaults(self) -> dict:
        return {f.name: f.default for f in self.attrs if f.default is not REQUIRED}

    @property
    def input_names(self) -> tuple[str, ...]:
        """TVM's Python parameter names of the inputs: extras["input_names"], else input_names.py's
        table, else TVM's conventions (`data` for one input, `lhs`/`rhs` for a binary elementwise one)."""
        names = self.extras.get("input_names")
        if names is not None:
            return tuple(names)
        from .input_names import TVM_INPUT_NAMES

        if self.name in TVM_INPUT_NAMES:
            return TVM_INPUT_NAMES[self.name]
        if self.num_inputs == 1 or self.tuple_input:
            return ("data",)
        if self.num_inputs == 2 and not self.attrs and self.pattern in (OpPattern.ELEMWISE, OpPattern.BROADCAST):
            return ("lhs", "rhs")
        return ()

    def bind_input_keywords(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """Moves inputs passed by keyword (`relay.nn.relu(data=x)`) to their positions."""
        names = self.input_names
        if not kwargs or not any(name in kwargs for name in names):
            return args, kwargs
        args, kwargs = list(args), dict(kwargs)
        for position, name in enumerate(names):
            if name not in kwargs:
                continue
            if position < len(args):
                raise TypeError(f"{self.name} got input {name!r} twice")
            if position > len(args):
                raise TypeError(f"{self.name}: input {names[len(args)]!r} is missing before {name!r}")
            args.append(kwargs.pop(name))
        return tuple(args), kwargs

    def wrap_outputs(self, call):
        """The builder's result: a TupleWrapper for operators TVM's builders returned one for."""
        count = self.extras.get("tuple_outputs")
        if count is None:
            return call
        from ..expr import TupleWrapper

        return TupleWrapper(call, count(call) if callable(count) else int(count))

    def __call__(self, *args, **kwargs):
        """Builder API: inputs positionally (or by TVM's name), then attributes positionally or by keyword."""
        from ..expr import Tuple, to_expr

        args, kwargs = self.bind_input_keywords(args, kwargs)
        n = self.num_inputs if self.num_inputs is not None else len(args)
        if len(args) < n:
            raise TypeError(f"{self.name} takes {n} input(s), got {len(args)}")
        inputs = list(args[:n])
        if self.tuple_input and inputs and isinstance(inputs[0], (list, tuple)):
            inputs[0] = Tuple([to_expr(x) for x in inputs[0]])
        extra = args[n:]
        if len(extra) > len(self.attrs):
            raise TypeError(f"{self.name} got {len(extra)} positional attributes, expects at most {len(self.attrs)}")
        given = dict(kwargs)
        for attr_field, value in zip(self.attrs, extra):
            if attr_field.name in given:
                raise TypeError(f"{self.name} got attribute {attr_field.name!r} twice")
            given[attr_field.name] = value
        return self.wrap_outputs(make_call(self.name, [to_expr(x) for x in inputs], given))


_REGISTRY: dict[str, OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    if opdef.name in _REGISTRY:
        raise ValueError(f"operator {opdef.name} registered twice")
    _REGISTRY[opdef.name] = opdef
    return opdef


def _ensure_loaded() -> None:
    # The operator families register themselves on import; import them once, lazily,
    # so that `registry` itself has no import cycle with the families.
    from . import families  # noqa: F401


def lookup(name: str) -> OpDef | None:
    _ensure_loaded()
    return _REGISTRY.get(name)


def get(name: str) -> OpDef:
    opdef = lookup(name)
    if opdef is None:
        raise KeyError(f"operator {name} is not in the registry")
    return opdef


def registered_ops() -> list[OpDef]:
    _ensure_loaded()
    return list(_REGISTRY.values())


def normalize_attrs(opdef: OpDef, given: dict | Attrs | None) -> Attrs:
    """Fill defaults, convert values, and reject unknown or missing attributes (ValueError)."""
    given = dict(given or {})
    out = {}
    for attr_field in opdef.attrs:
        if attr_field.name in given:
            value = given.pop(attr_field.name)
        elif attr_field.default is REQUIRED:
            raise ValueError(f"operator {opdef.name} requires attribute {attr_field.name!r}")
        else:
            value = attr_field.default
        if attr_field.convert is not None and value is not None:
            value = attr_field.convert(value)
        out[attr_field.name] = freeze_attr_value(value)
    if given:
        unknown = ", ".join(sorted(given))
        raise ValueError(f"operator {opdef.name} has no attribute(s) {unknown}; it takes {', '.join(opdef.attr_names) or 'none'}")
    return Attrs(out)


def make_call(name: str, args, attrs: dict | None = None, span=None):
    """A Call of a registered operator with normalized attributes."""
    from ..expr import Call, Op

    opdef = get(name)
    dynamic_form = opdef.extras.get("dynamic_form")
    if dynamic_form is not None and attrs:
        # TVM's builders made the `dyn.` operator when a shape attribute was an expression (families/dynamic.py).
        dynamic_call = dynamic_form(list(args), dict(attrs), span)
        if dynamic_call is not None:
            return dynamic_call
    if opdef.num_inputs is not None and len(args) != opdef.num_inputs:
        raise TypeError(f"{name} takes {opdef.num_inputs} input(s), got {len(args)}")
    return Call(Op.get(name), list(args), normalize_attrs(opdef, attrs), span=span)
