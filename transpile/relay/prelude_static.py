"""TVM's static tensor arrays: per-(dtype, shape) tensor ADTs and tensor-array functions in a Prelude's module.

`StaticTensorArrayOps(prelude, "float32", [Any(), 3]).register()` adds to `prelude.mod` the type

    type static_tensor_float32_any_3_t {
      tensor_nil_float32_any_3,
      tensor_constructor_float32_any_3(Tensor[(?, 3), float32]),
    }

and the functions over it and over `List[static_tensor_float32_any_3_t]` (tensor arrays):
tensor_take, tensor_concatenate, tensor_expand_dims, tensor_array, tensor_array_read/write/unstack/
scatter/split/concat/stack/gather and tensor_get_data, each named `<canonical>_<dtype>_<dims>` as TVM
named them (code ported from TVM looks them up by these names). Functions whose result has another
shape (take: `?` first dim; stack: one more dim) define the ADT of that shape too. Defining what
the module already has leaves it as it is, so registering one (dtype, shape) twice changes nothing.
"""

from __future__ import annotations

import re

from ..errors import TranspileError
from .expr import Clause, Constructor, Function, GlobalVar, If, Match, PatternConstructor, PatternVar, TypeData, Var
from .expr import const
from .prelude_static_arrays import StaticTensorArrayCombinators
from .ty import Any, AnyDim, GlobalTypeVar, SymbolicDim, TensorType, TypeCall, as_dim, scalar_type

__all__ = [
    "StaticTensorArrayOps",
    "StaticTensorArrayLookups",
    "TensorArrayLookupError",
    "static_name",
    "get_tensor_array_shape",
]


class TensorArrayLookupError(TranspileError, KeyError):
    """A tensor-array type, constructor or function that the module does not define."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


_DTYPE = re.compile(r"bool|u?int(8|16|32|64)|float(16|32|64)|bfloat16")


def check_dtype(dtype) -> str:
    """`dtype` when it names a tensor element type; tensor-array names are spelled with it."""
    if not isinstance(dtype, str) or not _DTYPE.fullmatch(dtype):
        raise TranspileError(f"a tensor array needs a dtype such as 'float32' or 'int64', got {dtype!r}")
    return dtype


def _dims(shape) -> list:
    """The dims of a static shape (ints, Any, symbolic vars) as TensorType stores them."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TranspileError(f"a static tensor array needs a shape (a list of dims), got {shape!r}")
    dims = []
    for dim in shape:
        try:
            dims.append(as_dim(dim))
        except (TypeError, ValueError):
            raise TranspileError(
                f"dimension {dim!r} of static tensor array shape {list(shape)!r} is not an int or Any"
            ) from None
    return dims


def _shape_str(shape) -> str:
    """TVM's spelling of a shape in names: dims joined by `_`, a run-time (`?`) dim as `any`."""
    names = []
    for dim in _dims(shape):
        if isinstance(dim, SymbolicDim):
            names.append(dim.name)  # TVM printed a tir Var dim by its name
        elif isinstance(dim, AnyDim):
            names.append("any")
        else:
            names.append(str(dim))
    return "_".join(names)


def static_name(canonical: str, dtype: str, shape, batch_dim=None, extra_shapes=None) -> str:
    """The name of a static tensor-array definition (TVM's _get_name_static).

    `static_tensor_<dtype>_<dims>_t` for the type, `<canonical>_<dtype>_<dims>` otherwise (`scalar`
    for no dims); with batch_dim 1 the functions are `<canonical>_<dtype>_batch1_<dims>`.
    `extra_shapes` ({name: shape}) appends `_<name>_<dims>` for variants with more static shapes.
    """
    shape_str = _shape_str(shape)
    for extra_name, extra_shape in (extra_shapes or {}).items():
        shape_str += f"_{extra_name}_{_shape_str(extra_shape)}"
    if not shape_str:
        shape_str = "scalar"
    if canonical == "tensor_t":
        return f"static_tensor_{dtype}_{shape_str}_t"
    if batch_dim is None or canonical in ("tensor_constructor", "tensor_nil") or batch_dim != 1:
        return f"{canonical}_{dtype}_{shape_str}"
    return f"{canonical}_{dtype}_batch{batch_dim}_{shape_str}"


def _global_var(mod, name: str) -> GlobalVar:
    for gv in mod.get_global_vars():
        if gv.name_hint == name:
            return gv
    raise TensorArrayLookupError(
        f"the module has no function @{name} (define it first, e.g. with StaticTensorArrayOps(...).register())"
    )


def _type_var(mod, name: str) -> GlobalTypeVar:
    for gtv in mod.get_global_type_vars():
        if gtv.name_hint == name:
            return gtv
    raise TensorArrayLookupError(
        f"the module has no type {name} (define it first, e.g. with StaticTensorArrayOps(...).register())"
    )


def _constructor(mod, type_name: str, ctor_name: str) -> Constructor:
    gtv = _type_var(mod, type_name)
    constructors = mod[gtv].constructors
    for ctor in constructors:
        if ctor.name_hint == ctor_name:
            return ctor
    names = ", ".join(c.name_hint for c in constructors)
    raise TensorArrayLookupError(f"type {type_name} has no constructor {ctor_name} (its constructors: {names})")


class StaticTensorArrayLookups:
    """The static tensor-array lookups of TVM's Prelude (mixed into Prelude; needs `self.mod`)."""

    @staticmethod
    def get_name_static(canonical: str, dtype: str, shape, batch_dim=None) -> str:
        """The name of a static tensor-array definition, e.g. ("tensor_array_read", "float32", [2]) ->
        tensor_array_read_float32_2."""
        return static_name(canonical, dtype, shape, batch_dim)

    def get_global_var_static(self, canonical: str, dtype: str, shape, batch_dim=None) -> GlobalVar:
        return _global_var(self.mod, static_name(canonical, dtype, shape, batch_dim))

    def get_type_static(self, canonical: str, dtype: str, shape) -> GlobalTypeVar:
        return _type_var(self.mod, static_name(canonical, dtype, shape))

    def get_ctor_static(self, ty_name: str, name: str, dtype: str, shape) -> Constructor:
        """A constructor of a static tensor type by canonical names, e.g. ("tensor_t", "tensor_nil", ...)."""
        return _constructor(self.mod, static_name(ty_name, dtype, shape), static_name(name, dtype, shape))

    def get_tensor_ctor_static(self, name: str, dtype: str, shape) -> Constructor:
        return self.get_ctor_static("tensor_t", name, dtype, shape)


def get_tensor_array_shape(expr, dtype: str, prelude):
    """The static shape of the tensor array `expr` (a tuple of ints and Any), None if it is not static.

    As in TVM the shape is read back from the name of the array's element type, after type-checking
    `expr` against `prelude.mod` (which, unlike TVM's version, keeps its @main).
    """
    from .typing import infer_type_expr

    checked = infer_type_expr(expr, prelude.mod).checked_type
    if not isinstance(checked, TypeCall) or not checked.args or not isinstance(checked.args[0], TypeCall):
        raise TranspileError(f"get_tensor_array_shape: expected a tensor array (a List of tensor_t), got {checked}")
    type_name = checked.args[0].func.name_hint
    prefix = f"static_tensor_{dtype}_"
    if not type_name.startswith(prefix):
        return None
    shape_str = type_name[len(prefix) :].removesuffix("_t")
    if shape_str == "scalar":
        return ()
    return tuple(int(dim) if dim.isdigit() else Any() for dim in shape_str.split("_"))


class StaticTensorArrayOps(StaticTensorArrayCombinators):
    """Defines the static tensor array of one (dtype, shape) in `prelude.mod` (TVM's class of that name).

    The functions combining several elements (unstack, scatter, split, concat, stack, gather) are
    in prelude_static_arrays.py.
    """

    def __init__(self, prelude, dtype: str, shape, batch_dim=None):
        self.prelude = prelude
        self.dtype = check_dtype(dtype)
        self.shape = _dims(shape)
        self.batch_dim = batch_dim
        self.list, self.cons, self.nil = prelude.mod.get_type("List")
        self._tensor_type_var = None

    # ----- names and lookups ----------------------------------------------------------------
    def get_name(self, canonical: str, extra_shapes=None) -> str:
        return static_name(canonical, self.dtype, self.shape, self.batch_dim, extra_shapes)

    def get_global_var(self, canonical: str) -> GlobalVar:
        return _global_var(self.prelude.mod, self.get_name(canonical))

    def get_type(self, canonical: str) -> GlobalTypeVar:
        return _type_var(self.prelude.mod, static_name(canonical, self.dtype, self.shape))

    def get_ctor(self, canonical: str) -> Constructor:
        type_name = static_name("tensor_t", self.dtype, self.shape)
        return _constructor(self.prelude.mod, type_name, static_name(canonical, self.dtype, self.shape))

    def is_cached(self, name: str) -> bool:
        """Whether the module already has a function of this name."""
        return any(gv.name_hint == name for gv in self.prelude.mod.get_global_vars())

    @property
    def tensor_type_var(self) -> GlobalTypeVar:
        """The GlobalTypeVar of this shape's tensor ADT (defined on first use)."""
        if self._tensor_type_var is None:
            self.define_tensor_adt()
        return self._tensor_type_var

    @tensor_type_var.setter
    def tensor_type_var(self, value: GlobalTypeVar) -> None:
        self._tensor_type_var = value

    def _tensor_t(self) -> TypeCall:
        return self.tensor_type_var()

    def _tensor_array_t(self) -> TypeCall:
        return self.list(self.tensor_type_var())

    def _get_adt_by_shape(self, shape):
        """(GlobalTypeVar, tensor_constructor, ops) of another shape of this dtype, its ADT defined (TVM's helper)."""
        ops = StaticTensorArrayOps(self.prelude, self.dtype, shape, self.batch_dim)
        ops.define_tensor_adt()
        return ops.tensor_type_var, ops.get_ctor("tensor_constructor"), ops

    def _new_axis(self):
        """The leading dim stack/gather add: `?` (results are concatenated), 1 with batch_dim 1."""
        return 1 if self.batch_dim == 1 else Any()

    def _helper_var(self, canonical: str, extra_shapes=None) -> GlobalVar:
        """The GlobalVar of a helper function: the module's when it has one of that name, else new."""
        name = self.get_name(canonical, extra_shapes)
        return _global_var(self.prelude.mod, name) if self.is_cached(name) else GlobalVar(name)

    def _define(self, canonical: str, build, force_update: bool = False, extra_shapes=None) -> None:
        """Adds `build(GlobalVar)` as the function `canonical` unless the module has it already."""
        if self.is_cached(self.get_name(canonical, extra_shapes)) and not force_update:
            return
        gv = self._helper_var(canonical, extra_shapes)
        self.prelude.mod[gv] = build(gv)

    # ----- the tensor ADT and the functions over one tensor ---------------------------------
    def define_tensor_adt(self) -> None:
        """`type static_tensor_<dtype>_<dims>_t { tensor_nil_…, tensor_constructor_…(Tensor[shape, dtype]) }`."""
        type_name = self.get_name("tensor_t")
        existing = [gtv for gtv in self.prelude.mod.get_global_type_vars() if gtv.name_hint == type_name]
        if existing:
            self._tensor_type_var = existing[0]
            return
        gtv = GlobalTypeVar(type_name)
        nil = Constructor(self.get_name("tensor_nil"), [], gtv)
        tensor = Constructor(self.get_name("tensor_constructor"), [TensorType(self.shape, self.dtype)], gtv)
        self.prelude.mod[gtv] = TypeData(gtv, [], [nil, tensor])
        self._tensor_type_var = gtv

    def _unwrap_into(self, tensor_value, body_of):
        """`match (tensor_value) { tensor_constructor(%t) => body_of(%t) }` (tensor_nil is not matched)."""
        t = Var("t")
        clause = Clause(PatternConstructor(self.get_ctor("tensor_constructor"), [PatternVar(t)]), body_of(t))
        return Match(tensor_value, [clause], False)

    def define_tensor_take(self) -> None:
        """tensor_take(t, lower, upper): rows lower..upper-1 of the tensor, as a tensor of first dim `?`."""
        if not self.shape:
            return
        from . import op

        def build(gv):
            _, out_ctor, _ = self._get_adt_by_shape([Any(), *self.shape[1:]])
            tensor = Var("tensor", self._tensor_t())
            lower = Var("lower", scalar_type("int32"))
            upper = Var("upper", scalar_type("int32"))
            rows = lambda t: out_ctor(op.take(t, op.arange(lower, upper, dtype="int32"), axis=0))  # noqa: E731
            return Function([tensor, lower, upper], self._unwrap_into(tensor, rows), out_ctor.belong_to(), [])

        self._define("tensor_take", build)

    def define_tensor_concatenate(self) -> None:
        """tensor_concatenate(x, y): the two tensors joined on axis 0, as a tensor of first dim `?`."""
        if not self.shape:
            return
        from . import op

        def build(gv):
            _, out_ctor, _ = self._get_adt_by_shape([Any(), *self.shape[1:]])
            x = Var("x", self._tensor_t())
            y = Var("y", self._tensor_t())
            body = self._unwrap_into(
                x, lambda t1: self._unwrap_into(y, lambda t2: out_ctor(op.concatenate([t1, t2], axis=0)))
            )
            return Function([x, y], body, out_ctor.belong_to(), [])

        self._define("tensor_concatenate", build)

    def define_tensor_expand_dims(self) -> None:
        """tensor_expand_dims(x): the tensor with a new leading axis, typed `?` (1 with batch_dim 1)."""
        from . import op

        def build(gv):
            _, out_ctor, _ = self._get_adt_by_shape([self._new_axis(), *self.shape])
            x = Var("x", self._tensor_t())
            body = self._unwrap_into(x, lambda t: out_ctor(op.expand_dims(t, 0, 1)))
            return Function([x], body, out_ctor.belong_to(), [])

        self._define("tensor_expand_dims", build)

    def define_tensor_get_data(self) -> None:
        """tensor_get_data(t): the Tensor[shape, dtype] inside a tensor_constructor."""

        def build(gv):
            tensor = Var("tensor", self._tensor_t())
            return Function([tensor], self._unwrap_into(tensor, lambda t: t), TensorType(self.shape, self.dtype), [])

        self._define("tensor_get_data", build)

    # ----- tensor arrays: List[static_tensor_t] ---------------------------------------------
    def define_tensor_array(self) -> None:
        """tensor_array(n): a list of n tensor_nil."""
        from . import op

        def build(gv):
            n = Var("x", scalar_type("int32"))
            nil_tensor = self.get_ctor("tensor_nil")
            body = If(op.equal(n, const(0)), self.nil(), self.cons(nil_tensor(), gv(op.subtract(n, const(1)))))
            return Function([n], body, self._tensor_array_t(), [])

        self._define("tensor_array", build)

    def define_tensor_array_read(self) -> None:
        """tensor_array_read(ta, n): element n."""

        def build(gv):
            tensor_array = Var("tensor_array", self._tensor_array_t())
            n = Var("x", scalar_type("int32"))
            return Function([tensor_array, n], self.prelude.nth(tensor_array, n), self._tensor_t(), [])

        self._define("tensor_array_read", build)

    def define_tensor_array_write(self) -> None:
        """tensor_array_write(ta, n, v): the array with element n replaced by v."""

        def build(gv):
            tensor_array = Var("tensor_array", self._tensor_array_t())
            n = Var("x", scalar_type("int32"))
            v = Var("v", self._tensor_t())
            return Function([tensor_array, n, v], self.prelude.update(tensor_array, n, v), self._tensor_array_t(), [])

        self._define("tensor_array_write", build)

    def register(self) -> None:
        """Defines the ADT and every function of this (dtype, shape) in the module."""
        self.define_tensor_adt()
        self.define_tensor_take()
        self.define_tensor_concatenate()
        self.define_tensor_expand_dims()
        self.define_tensor_array()
        self.define_tensor_array_read()
        self.define_tensor_array_write()
        self.define_tensor_array_unstack()
        self.define_tensor_array_scatter()
        self.define_tensor_array_split()
        self.define_tensor_array_concat()
        self.define_tensor_array_stack()
        self.define_tensor_array_gather()
        self.define_tensor_get_data()
