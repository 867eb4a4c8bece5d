"""Shared pieces of the nn operators: attribute converters, layouts, padding, dtypes, builders."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ....attrs import MetaRef
from ....ty import AnyDim, TensorType, normalize_dtype
from ...common import dim_eq, expect_tensor, fmt_type
from ...registry import OpDef, RelationError, make_call

# ---------------------------------------------------------------------------------------------
# attribute converters (applied by normalize_attrs to parsed text and builder values alike)


def _scalar(value):
    # Parsed attribute literals may arrive as numpy scalars or 0-d Constants.
    data = getattr(value, "data", None)
    if isinstance(data, np.ndarray):
        return data.item()
    if hasattr(value, "item") and not isinstance(value, (list, tuple)):
        return value.item()
    return value


def _keep_meta(convert):
    # `meta[Kind][i]` references stand for objects we do not model: leave them untouched.
    def wrapper(value):
        if isinstance(value, MetaRef):
            return value
        try:
            return convert(value)
        except (TypeError, ValueError, AttributeError) as error:
            raise ValueError(f"cannot read {value!r} as {convert.__name__[3:]}: {error}") from None

    wrapper.__name__ = convert.__name__
    wrapper.__doc__ = convert.__doc__
    return wrapper


@_keep_meta
def to_int(value) -> int:
    return int(_scalar(value))


@_keep_meta
def to_float(value) -> float:
    return float(_scalar(value))


@_keep_meta
def to_bool(value) -> bool:
    value = _scalar(value)
    if isinstance(value, str):
        return value.lower() in ("1", "true")
    return bool(value)


@_keep_meta
def to_str(value) -> str:
    return str(value)


@_keep_meta
def to_dtype(value) -> str:
    value = str(value)
    return normalize_dtype(value) if value else ""


@_keep_meta
def to_ints(value) -> tuple:
    """An int or a sequence of ints as a tuple; `None` entries are kept (adaptive pools)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(None if v is None else to_int(v) for v in value)
    return (to_int(value),)


@_keep_meta
def to_floats(value) -> tuple:
    """A number or a sequence of numbers as a tuple of floats."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(to_float(v) for v in value)
    return (to_float(value),)


@_keep_meta
def to_int_pairs(value) -> tuple:
    return tuple(to_ints(pair) for pair in value)


def is_any(dim) -> bool:
    return isinstance(dim, AnyDim)


# ---------------------------------------------------------------------------------------------
# builders that mirror tvm.relay.nn's Python signatures (positional order and Python defaults
# differ from the C++ attribute schema for a few operators, e.g. batch_matmul's transpose_b)


class NNOpDef(OpDef):
    """An OpDef whose builder follows the tvm.relay.nn Python function, not the attribute order.

    extras["builder_params"]: attribute names in the Python positional order;
    extras["builder_defaults"]: Python-side defaults that differ from the C++ ones;
    extras["builder_normalize"]: fn(dict) -> dict applied to the given attributes (e.g. padding
    widened to 4 values by get_pad_tuple2d, as TVM's Python builder did);
    extras["builder_post"]: fn(call) -> expr (dropout returns the first tuple field).
    """

    def __call__(self, *args, **kwargs):
        from ....expr import to_expr

        args, kwargs = self.bind_input_keywords(args, kwargs)
        n = self.num_inputs
        if len(args) < n:
            raise TypeError(f"{self.name} takes {n} input(s), got {len(args)}")
        inputs = [to_expr(x) for x in args[:n]]
        params = self.extras.get("builder_params", self.attr_names)
        extra = args[n:]
        if len(extra) > len(params):
            raise TypeError(f"{self.name} got {len(extra)} positional attributes, expects at most {len(params)}")
        given = dict(self.extras.get("builder_defaults", {}))
        for name, value in zip(params, extra):
            if name in kwargs:
                raise TypeError(f"{self.name} got attribute {name!r} twice")
            given[name] = value
        given.update(kwargs)
        normalize = self.extras.get("builder_normalize")
        if normalize is not None:
            given = normalize(dict(given))
        call = make_call(self.name, inputs, given)
        post = self.extras.get("builder_post")
        return post(call) if post is not None else self.wrap_outputs(call)


def pad_tuple2d(padding) -> tuple:
    """TVM's get_pad_tuple2d: 1 -> 4, 2 -> (top, left, top, left), 4 kept."""
    values = to_ints(padding)
    if len(values) == 1:
        return values * 4
    if len(values) == 2:
        return values + values
    return values


def pad_tuple3d(padding) -> tuple:
    """TVM's get_pad_tuple3d: 1 -> 6, 3 -> (front, top, left) twice, 6 kept."""
    values = to_ints(padding)
    if len(values) == 1:
        return values * 6
    if len(values) == 3:
        return values + values
    return values


def widen(value, count: int):
    """An int (or 1-sequence) repeated `count` times, as TVM's builders widen strides and sizes."""
    values = to_ints(value)
    return values * count if len(values) == 1 else values


def widen_pair(value):
    return widen(value, 2)


def normalizer(
    pairs: Sequence[str] = (), pad4: Sequence[str] = (), triples: Sequence[str] = (), pad6: Sequence[str] = ()
) -> Callable[[dict], dict]:
    def normalize(given: dict) -> dict:
        for names, widened in ((pairs, widen_pair), (triples, lambda v: widen(v, 3))):
            for name in names:
                if given.get(name) is not None:
                    given[name] = widened(given[name])
        for names, padded in ((pad4, pad_tuple2d), (pad6, pad_tuple3d)):
            for name in names:
                if given.get(name) is not None:
                    given[name] = padded(given[name])
        return given

    return normalize


# ---------------------------------------------------------------------------------------------
# type relation helpers


SPATIAL_NAMES = {"D": "depth", "H": "height", "W": "width"}


def layout_positions(layout: str, primal: str, op_name: str, what: str) -> dict:
    """Position of each axis of `primal` (e.g. 'NCHW') in `layout`, which must be a permutation."""
    if sorted(layout) != sorted(primal):
        raise RelationError(f"{op_name}: {what} {layout!r} is not supported; expected a permutation of {primal!r}")
    return {axis: layout.index(axis) for axis in primal}


def layout_axes(layout: str, op_name: str, what: str) -> list[str]:
    """Split a layout like 'NCHW16c' into axes ['N', 'C', 'H', 'W', '16c']."""
    axes, digits = [], ""
    for char in layout:
        if char.isdigit():
            digits += char
        elif char.isalpha():
            if digits and not char.islower():
                raise RelationError(f"{op_name}: invalid {what} {layout!r}")
            axes.append(digits + char)
            digits = ""
        else:
            raise RelationError(f"{op_name}: invalid {what} {layout!r}")
    primal = [a for a in axes if a.isupper()]
    if digits or not axes or len(set(primal)) != len(primal):
        raise RelationError(f"{op_name}: invalid {what} {layout!r}")
    return axes


def spatial_pair(value, op_name: str, name: str, count: int = 2, minimum: int | None = None) -> tuple:
    values = tuple(value)
    if len(values) == 1:
        values = values * count
    if len(values) != count:
        raise RelationError(f"{op_name}: {name} must have 1 or {count} values, got {list(value)}")
    if minimum is not None and any(v is None or v < minimum for v in values):
        raise RelationError(f"{op_name}: {name} must be >= {minimum}, got {list(value)}")
    return values


def padding_2d(padding, op_name: str) -> tuple:
    """(top, left, bottom, right) from TVM's 1-, 2- or 4-value padding."""
    values = tuple(padding)
    if len(values) == 1:
        return values * 4
    if len(values) == 2:
        return values + values
    if len(values) == 4:
        return values
    raise RelationError(f"{op_name}: padding must have 1, 2 or 4 values, got {list(values)}")


def padding_nd(padding, nd: int, op_name: str) -> tuple:
    """(before..., after...) per spatial axis from TVM's 1-, nd- or 2*nd-value padding.

    1 value pads every side; nd values pad both sides of each axis; 2*nd values are given as
    (before..., after...), e.g. (front, top, left, back, bottom, right) for 3-D.
    """
    values = tuple(padding)
    if len(values) == 1:
        return values * (2 * nd)
    if len(values) == nd:
        return values + values
    if len(values) == 2 * nd:
        return values
    counts = sorted({1, nd, 2 * nd})
    listed = ", ".join(str(c) for c in counts[:-1]) + f" or {counts[-1]}"
    raise RelationError(f"{op_name}: padding must have {listed} values, got {list(values)}")


def padding_1d(padding, op_name: str) -> tuple:
    values = tuple(padding)
    if len(values) == 1:
        return values * 2
    if len(values) == 2:
        return values
    raise RelationError(f"{op_name}: padding must have 1 or 2 values, got {list(values)}")


def shape_text(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def type_matches(found: TensorType, expected: TensorType) -> bool:
    """Same dtype and rank, dims equal up to Any."""
    return (
        found.dtype == expected.dtype
        and found.ndim == expected.ndim
        and all(dim_eq(a, b) for a, b in zip(found.shape, expected.shape))
    )


# ---------------------------------------------------------------------------------------------
# argument inference (OpDef.infer_args): the types TVM's relations assigned to unknown inputs


def vector_inference(op_name: str, positions: Sequence[int], axis_of: Callable) -> Callable:
    """Unknown arguments at `positions` become vectors as long as the data's axis `axis_of(data, attrs)`,
    in the data's dtype (TVM's BiasAddRel, PReluRel, BatchNormRel, LayerNormRel assigning them)."""

    def infer(arg_types, attrs):
        data = arg_types[0]
        if data is None:
            return {}
        data = expect_tensor(data, op_name, "data")
        vector = TensorType((data.shape[axis_of(data, attrs)],), data.dtype)
        return {position: vector for position in positions}

    return infer


def weight_inference(op_name: str, data_primal: str, kernel_primal: str, primal_weight: Callable) -> Callable:
    """A convolution's unknown weight when channels and kernel_size are given, as TVM's Conv*DRel:
    `primal_weight(in_channels, channels, groups, kernel)` lists its dims in `kernel_primal` order;
    the type lays them out in kernel_layout, with the data's dtype."""
    spatial = len(data_primal) - 2

    def infer(arg_types, attrs):
        data = arg_types[0]
        if data is None or attrs.channels is None or attrs.kernel_size is None:
            return {}
        data = expect_tensor(data, op_name, "data")
        positions = layout_positions(attrs.data_layout, data_primal, op_name, "data_layout")
        layout_positions(attrs.kernel_layout, kernel_primal, op_name, "kernel_layout")
        rank = len(data_primal)
        if data.ndim != rank:
            layout = attrs.data_layout
            raise RelationError(f"{op_name}: data must have rank {rank} for layout {layout}, got {fmt_type(data)}")
        if attrs.groups < 1:
            raise RelationError(f"{op_name}: groups must be >= 1, got {attrs.groups}")
        kernel = spatial_pair(attrs.kernel_size, op_name, "kernel_size", spatial, minimum=1)
        primal = primal_weight(data.shape[positions["C"]], attrs.channels, attrs.groups, kernel)
        shape = [primal[kernel_primal.index(axis)] for axis in attrs.kernel_layout]
        return {1: TensorType(shape, data.dtype)}

    return infer


def divide_dim(size, parts):
    """size // parts, unknown (`?`) when either is."""
    return AnyDim() if is_any(size) or is_any(parts) else size // parts


# ---------------------------------------------------------------------------------------------
# numpy helpers


def compute_dtype(dtype) -> np.dtype:
    """Accumulation dtype: float16 sums in float32, integers in int64 (wrapped back on cast)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.dtype(np.float32) if dtype.itemsize < 4 else dtype
    if dtype.kind in "iub":
        return np.dtype(np.int64)
    return dtype


def lowest_value(dtype) -> float | int:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind == "b":
        return False
    return np.iinfo(dtype).min
