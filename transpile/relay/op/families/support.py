"""Helpers shared by the elemwise, reduce and transform families: dtypes, converters, builders."""

from __future__ import annotations

import numpy as np

from ...attrs import MetaRef
from ...ty import AnyDim, TensorType, Type, normalize_dtype
from ..common import expect_tensor
from ..registry import OpDef, RelationError, make_call

__all__ = [
    "PyOrderOpDef",
    "expect_arity",
    "tensor_args",
    "is_int",
    "is_uint",
    "is_float",
    "is_bool",
    "is_integral",
    "to_dtype",
    "to_optional_dtype",
    "to_float",
    "to_int",
    "to_bool",
    "to_int_list",
    "to_optional_int_list",
    "as_out",
    "quiet",
    "is_any",
    "static_prod",
    "constant_data",
]


class PyOrderOpDef(OpDef):
    """An OpDef whose builder takes positional attributes in the order of TVM's Python builder.

    The attribute schema keeps the order of TVM's C++ attrs struct (what the printer emits); the
    Python builders (relay.take, relay.argmax, ...) took their keyword arguments in another order.
    `extras["py_order"]` names the attributes in the Python order.
    """

    def __call__(self, *args, **kwargs):
        from ...expr import Tuple, to_expr

        args, kwargs = self.bind_input_keywords(args, kwargs)
        n = self.num_inputs if self.num_inputs is not None else len(args)
        if len(args) < n:
            raise TypeError(f"{self.name} takes {n} input(s), got {len(args)}")
        inputs = list(args[:n])
        if self.tuple_input and inputs and isinstance(inputs[0], (list, tuple)):
            inputs[0] = Tuple([to_expr(x) for x in inputs[0]])
        order = self.extras.get("py_order", self.attr_names)
        extra = args[n:]
        if len(extra) > len(order):
            raise TypeError(f"{self.name} got {len(extra)} positional attributes, expects at most {len(order)}")
        given = dict(kwargs)
        for name, value in zip(order, extra):
            if name in given:
                raise TypeError(f"{self.name} got attribute {name!r} twice")
            given[name] = value
        # Attributes whose Python builder turned None into the default (strided_slice's strides).
        for name in self.extras.get("none_is_default", ()):
            if name in given and given[name] is None:
                del given[name]
        return self.wrap_outputs(make_call(self.name, [to_expr(x) for x in inputs], given))


def expect_arity(arg_types, count: int, op_name: str) -> None:
    if len(arg_types) != count:
        raise RelationError(f"{op_name}: expected {count} argument(s), got {len(arg_types)}")


def tensor_args(arg_types, count: int, op_name: str, names=None) -> list[TensorType]:
    """Check the arity and that every argument is a tensor; return the tensor types."""
    expect_arity(arg_types, count, op_name)
    names = names or [f"argument {i + 1}" for i in range(count)]
    return [expect_tensor(t, op_name, name) for t, name in zip(arg_types, names)]


def is_int(dtype: str) -> bool:
    return dtype.startswith("int")


def is_uint(dtype: str) -> bool:
    return dtype.startswith("uint")


def is_float(dtype: str) -> bool:
    return dtype.startswith("float") or dtype.startswith("bfloat")


def is_bool(dtype: str) -> bool:
    return dtype == "bool"


def is_integral(dtype: str) -> bool:
    return is_int(dtype) or is_uint(dtype)


def constant_data(value):
    """The array of a relay Constant (numpy scalars also have a `.data`, a memoryview: skip them)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value
    data = getattr(value, "data", None)
    return data if isinstance(data, np.ndarray) else value


def _unwrap_scalar(value):
    # Attribute values parsed from text can arrive as Constants (e.g. `a_min=-128f`).
    value = constant_data(value)
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"expected a scalar, got an array of shape {value.shape}")
        value = value.reshape(()).item()
    elif isinstance(value, np.generic):
        value = value.item()
    return value


def to_dtype(value):
    if isinstance(value, MetaRef):
        return value
    return normalize_dtype(value)


def to_optional_dtype(value):
    # TVM's Python builders spell "no dtype" as "" (DataType()), ours as None.
    if value is None or value == "":
        return None
    return to_dtype(value)


def to_float(value):
    if isinstance(value, MetaRef):
        return value
    return float(_unwrap_scalar(value))


def to_int(value):
    if isinstance(value, MetaRef):
        return value
    value = _unwrap_scalar(value)
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"expected an integer, got {value}")
    return int(value)


def to_bool(value):
    if isinstance(value, MetaRef):
        return value
    return bool(_unwrap_scalar(value))


def to_int_list(value):
    """An int or a sequence of ints as a tuple of ints (TVM accepted a bare int for axes)."""
    if isinstance(value, MetaRef):
        return value
    value = constant_data(value)
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(to_int(v) for v in value)
    return (to_int(value),)


def to_optional_int_list(value):
    return None if value is None else to_int_list(value)


def quiet():
    """Numpy error state for reference kernels: C semantics never warn (x/0, nan casts)."""
    return np.errstate(all="ignore")


def as_out(value, out_type: Type) -> np.ndarray:
    """The result as an array of exactly the output dtype (0-d arrays for scalars); floats become
    integers by `float_to_integer`."""
    target = np.dtype(out_type.dtype)
    value = np.asarray(value)
    if value.dtype.kind == "f" and target.kind in "iu":
        return float_to_integer(value, target)
    with quiet():
        return np.asarray(value, dtype=target)


def float_register(target: np.dtype):
    """The signed register a float goes through on its way to `target` (x86 cvttss2si / cvttsd2si)."""
    return np.dtype(np.int64) if target.itemsize == 8 or target == np.uint32 else np.dtype(np.int32)


def float_to_integer(value: np.ndarray, target) -> np.ndarray:
    """Float to integer, the same on every backend (numpy's own cast of nan, inf or a value out of
    range depends on whether its SIMD loop or its scalar tail converts the element).

    The value is truncated toward zero into a signed register (int32; int64 for uint32, int64 and
    uint64) and the register's low bits are kept: 1000.0 -> int8 is -24, -1.0 -> uint8 is 255.
    nan, ±inf and values the register cannot hold give its minimum (x86's "integer indefinite"),
    then the low bits: 0 for the 8/16-bit types and uint32, INT32_MIN for int32, INT64_MIN for
    int64, 2**63 for uint64. uint64 also holds [2**63, 2**64) exactly.
    """
    target = np.dtype(target)
    register = float_register(target)
    bound = 2.0 ** (register.itemsize * 8 - 1)
    with quiet():
        wide = np.asarray(value).astype(np.float64)  # exact for every float dtype
        fits = (wide >= -bound) & (wide < bound)
        held = np.where(fits, wide, 0.0).astype(register)
        held = np.where(fits, held, np.iinfo(register).min)
        result = held.astype(target)
        if target == np.uint64:
            high = (wide >= bound) & (wide < 2.0 * bound)
            upper = (np.where(high, wide - bound, 0.0).astype(np.int64).astype(np.uint64)) + np.uint64(2**63)
            result = np.where(high, upper, result)
    return np.asarray(result, dtype=target)


def is_any(dim) -> bool:
    return isinstance(dim, AnyDim)


def static_prod(dims):
    """Product of dims, or None when one of them is Any."""
    total = 1
    for d in dims:
        if is_any(d):
            return None
        total *= d
    return total
