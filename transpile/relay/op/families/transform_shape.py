"""Shape-changing operators: reshape (with TVM's special codes), transpose, squeeze, expand_dims, layout_transform."""

from __future__ import annotations

import re

import numpy as np

from ...ty import AnyDim, TensorType
from ..common import fmt_type
from ..registry import AttrField, OpDef, OpPattern, RelationError, REQUIRED, register
from .support import (
    as_out,
    is_any,
    static_prod,
    tensor_args,
    to_bool,
    to_int,
    to_int_list,
    to_optional_int_list,
)
from .te_support import is_static, require, static_shape

__all__ = ["infer_reshape", "parse_layout", "layout_transform_shape"]


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


# ---------------------------------------------------------------- reshape


def infer_reshape(ishape, newshape, allowzero=False, reverse=False, op_name="reshape") -> tuple:
    """TVM's InferNewShape: codes 0 (copy), -1 (infer), -2 (copy rest), -3 (merge two), -4 (split)."""
    ishape = list(reversed(ishape)) if reverse else list(ishape)
    newshape = list(reversed(newshape)) if reverse else list(newshape)
    oshape: list = []
    used_in: set[int] = set()
    used_out: set[int] = set()
    src = 0
    infer_idx = -1
    i = 0
    while i < len(newshape):
        code = newshape[i]
        if code > 0 or (code == 0 and allowzero):
            oshape.append(code)
            src += 1
        elif code == 0:
            if src >= len(ishape):
                raise RelationError(
                    f"{op_name}: newshape {list(newshape)} copies dimension {src} (code 0) of a rank-{len(ishape)} input"
                )
            used_in.add(src)
            used_out.add(len(oshape))
            oshape.append(ishape[src])
            src += 1
        elif code == -1:
            if infer_idx >= 0:
                raise RelationError(f"{op_name}: newshape {list(newshape)} has more than one -1")
            infer_idx = len(oshape)
            oshape.append(1)
            src += 1
        elif code == -2:
            while src < len(ishape):
                used_in.add(src)
                used_out.add(len(oshape))
                oshape.append(ishape[src])
                src += 1
        elif code == -3:
            if src + 1 >= len(ishape):
                raise RelationError(f"{op_name}: code -3 in newshape {list(newshape)} needs two more input dimensions")
            used_in.update((src, src + 1))
            d1, d2 = ishape[src], ishape[src + 1]
            src += 2
            used_out.add(len(oshape))
            oshape.append(AnyDim() if is_any(d1) or is_any(d2) else d1 * d2)
        elif code == -4:
            if i + 2 >= len(newshape) or src >= len(ishape):
                raise RelationError(f"{op_name}: code -4 in newshape {list(newshape)} needs two following values")
            used_in.add(src)
            d0 = ishape[src]
            src += 1
            d1, d2 = newshape[i + 1], newshape[i + 2]
            i += 2
            if d1 == -1 and d2 == -1:
                raise RelationError(f"{op_name}: split dimensions after -4 cannot both be -1")
            if d1 == -1:
                d1 = AnyDim() if is_any(d0) else _exact_div(d0, d2, op_name)
            elif d2 == -1:
                d2 = AnyDim() if is_any(d0) else _exact_div(d0, d1, op_name)
            used_out.update((len(oshape), len(oshape) + 1))
            oshape.extend((d1, d2))
        else:
            raise RelationError(f"{op_name}: unsupported special value {code} in newshape {list(newshape)}")
        i += 1
    if infer_idx >= 0:
        rest_in = static_prod([d for k, d in enumerate(ishape) if k not in used_in])
        rest_out = static_prod([d for k, d in enumerate(oshape) if k not in used_out and k != infer_idx])
        if rest_in is None or rest_out is None:
            oshape[infer_idx] = AnyDim()
        elif rest_out == 0:
            raise RelationError(f"{op_name}: cannot infer -1 in newshape {list(newshape)} next to a zero dimension")
        else:
            oshape[infer_idx] = rest_in // rest_out
    return tuple(reversed(oshape)) if reverse else tuple(oshape)


def _exact_div(total, part, op_name):
    if part <= 0:
        raise RelationError(f"{op_name}: invalid split size {part} after -4")
    return total // part


def _reshape_rel(op_name, reverse=False):
    def rel(arg_types, attrs):
        (data,) = tensor_args(arg_types, 1, op_name, ["data"])
        oshape = infer_reshape(data.shape, attrs.newshape, bool(attrs.allowzero), reverse, op_name)
        out_size, in_size = static_prod(oshape), static_prod(data.shape)
        if out_size is not None and in_size is not None and out_size != in_size:
            raise RelationError(
                f"{op_name}: cannot reshape {fmt_type(data)} to {_shape_text(oshape)} "
                f"(newshape={list(attrs.newshape)}): {in_size} elements vs {out_size}"
            )
        return TensorType(oshape, data.dtype)

    return rel


def _reshape_impl(op_name, reverse=False):
    def impl(args, attrs, out_type):
        x = np.asarray(args[0])
        shape = out_type.shape
        if any(is_any(d) for d in shape):
            shape = infer_reshape(x.shape, attrs.newshape, bool(attrs.allowzero), reverse, op_name)
        return as_out(x.reshape(shape), out_type)

    return impl


def _reshape_like_shape(lhs, rhs, attrs):
    def norm(v, n):
        return v + n if v < 0 else v

    lb = norm(attrs.lhs_begin, len(lhs))
    le = norm(len(lhs) if attrs.lhs_end is None else attrs.lhs_end, len(lhs))
    rb = norm(attrs.rhs_begin, len(rhs))
    re_ = norm(len(rhs) if attrs.rhs_end is None else attrs.rhs_end, len(rhs))
    return tuple(lhs[:lb]) + tuple(rhs[rb:re_]) + tuple(lhs[le:])


def _reshape_like_rel(arg_types, attrs):
    data, like = tensor_args(arg_types, 2, "reshape_like", ["data", "shape_like"])
    oshape = _reshape_like_shape(data.shape, like.shape, attrs)
    in_size, out_size = static_prod(data.shape), static_prod(oshape)
    if in_size is not None and out_size is not None and in_size != out_size:
        raise RelationError(
            f"reshape_like: cannot reshape {fmt_type(data)} to {_shape_text(oshape)} (taken from {fmt_type(like)})"
        )
    return TensorType(oshape, data.dtype)


def _reshape_like_impl(args, attrs, out_type):
    x, like = (np.asarray(a) for a in args)
    return as_out(x.reshape(_reshape_like_shape(x.shape, like.shape, attrs)), out_type)


# ---------------------------------------------------------------- transpose, squeeze, expand_dims


def _transpose_axes(ndim, axes, op_name="transpose"):
    if axes is None:
        return tuple(reversed(range(ndim)))
    if len(axes) != ndim:
        raise RelationError(f"{op_name}: axes {list(axes)} has {len(axes)} elements, but the data has rank {ndim}")
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise RelationError(f"{op_name}: axis {a} in axes {list(axes)} is out of range for rank {ndim}")
        a = a + ndim if a < 0 else a
        if a in out:
            raise RelationError(f"{op_name}: axis {a} is repeated in axes {list(axes)}")
        out.append(a)
    return tuple(out)


def _transpose_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "transpose", ["data"])
    perm = _transpose_axes(data.ndim, attrs.axes)
    return TensorType(tuple(data.shape[a] for a in perm), data.dtype)


def _transpose_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    return as_out(np.transpose(x, _transpose_axes(x.ndim, attrs.axes)), out_type)


def _squeeze_axes(shape, axis, data=None):
    ndim = len(shape)
    if axis is None:
        if any(is_any(d) for d in shape):
            raise RelationError(
                f"squeeze: axis must be given for an input with unknown dimensions, got {fmt_type(data)}"
            )
        return tuple(i for i, d in enumerate(shape) if d == 1)
    out = []
    for a in axis:
        if not -ndim <= a < ndim:
            raise RelationError(f"squeeze: axis {a} is out of range for {fmt_type(data) if data else f'rank {ndim}'}")
        a = a + ndim if a < 0 else a
        if not is_any(shape[a]) and shape[a] != 1:
            raise RelationError(
                f"squeeze: cannot squeeze axis {a} of {fmt_type(data) if data else shape}: its dimension is {shape[a]}, not 1"
            )
        out.append(a)
    return tuple(out)


def _squeeze_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "squeeze", ["data"])
    axes = _squeeze_axes(data.shape, attrs.axis, data)
    return TensorType(tuple(d for i, d in enumerate(data.shape) if i not in axes), data.dtype)


def _squeeze_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    axes = _squeeze_axes(x.shape, attrs.axis)
    return as_out(x.reshape([d for i, d in enumerate(x.shape) if i not in axes]), out_type)


def _expand_dims_shape(shape, axis, num_newaxis, data=None):
    ndim = len(shape)
    if num_newaxis < 0:
        raise RelationError(f"expand_dims: num_newaxis must be >= 0, got {num_newaxis}")
    if not -ndim - 1 <= axis <= ndim:
        what = fmt_type(data) if data is not None else f"a rank-{ndim} tensor"
        raise RelationError(f"expand_dims: axis {axis} is out of range [{-ndim - 1}, {ndim}] for {what}")
    pivot = axis + ndim + 1 if axis < 0 else axis
    return tuple(shape[:pivot]) + (1,) * num_newaxis + tuple(shape[pivot:])


def _expand_dims_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "expand_dims", ["data"])
    return TensorType(_expand_dims_shape(data.shape, attrs.axis, attrs.num_newaxis, data), data.dtype)


def _expand_dims_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    return as_out(x.reshape(_expand_dims_shape(x.shape, attrs.axis, attrs.num_newaxis)), out_type)


# ---------------------------------------------------------------- layout_transform

_LAYOUT_AXIS = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str, op_name="layout_transform") -> list[tuple[str, int | None]]:
    """'NCHW4c' -> [('N', None), ('C', None), ('H', None), ('W', None), ('c', 4)]."""
    if not isinstance(layout, str) or not layout or layout == "__undef__":
        raise RelationError(f"{op_name}: cannot convert from/to undefined layout {layout!r}")
    axes, pos = [], 0
    for m in _LAYOUT_AXIS.finditer(layout):
        if m.start() != pos:
            break
        pos = m.end()
        digits, name = m.groups()
        if name.isupper():
            if digits:
                raise RelationError(f"{op_name}: invalid layout {layout!r}: primal axis {name} cannot have a factor")
            axes.append((name, None))
        else:
            if not digits or int(digits) <= 0:
                raise RelationError(f"{op_name}: invalid layout {layout!r}: sub-axis {name} needs a positive factor")
            axes.append((name, int(digits)))
    names = [n for n, _ in axes]
    if pos != len(layout) or len(set(names)) != len(names):
        raise RelationError(f"{op_name}: invalid layout {layout!r}")
    for name, factor in axes:
        if factor is not None and name.upper() not in names:
            raise RelationError(
                f"{op_name}: invalid layout {layout!r}: sub-axis {name} has no primal axis {name.upper()}"
            )
    return axes


def _check_convertible(src, dst, src_text, dst_text):
    if sorted(n for n, f in src if f is None) != sorted(n for n, f in dst if f is None):
        raise RelationError(f"layout_transform: cannot convert from {src_text} to {dst_text}")


def layout_transform_shape(shape, src_layout: str, dst_layout: str, data=None) -> tuple:
    src, dst = parse_layout(src_layout), parse_layout(dst_layout)
    _check_convertible(src, dst, src_layout, dst_layout)
    if len(shape) != len(src):
        what = fmt_type(data) if data is not None else _shape_text(shape)
        raise RelationError(f"layout_transform: layout {src_layout} has {len(src)} axes but the data is {what}")
    totals = {}
    for (name, factor), dim in zip(src, shape):
        if factor is not None:
            if not is_any(dim) and dim != factor:
                raise RelationError(
                    f"layout_transform: axis {factor}{name} of {src_layout} has dimension {dim}, expected {factor}"
                )
            continue
        sub = dict(src).get(name.lower())
        totals[name] = AnyDim() if is_any(dim) else dim * (sub or 1)
    out = []
    dst_factors = dict(dst)
    for name, factor in dst:
        if factor is not None:
            out.append(factor)
            continue
        total, split = totals[name], dst_factors.get(name.lower())
        if split and not is_any(total) and total % split:
            raise RelationError(
                f"layout_transform: dimension {name}={total} is not divisible by {split} ({src_layout} -> {dst_layout})"
            )
        out.append(total if is_any(total) or not split else total // split)
    return tuple(out)


def _layout_transform_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "layout_transform", ["data"])
    return TensorType(layout_transform_shape(data.shape, attrs.src_layout, attrs.dst_layout, data), data.dtype)


def _layout_transform_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    src, dst = parse_layout(attrs.src_layout), parse_layout(attrs.dst_layout)
    names = [n for n, _ in src]
    primals = [n for n, f in src if f is None]
    # Unpack: every primal axis followed by its sub-axis, merged into one dimension.
    perm, merged = [], []
    for p in primals:
        perm.append(names.index(p))
        size = x.shape[names.index(p)]
        if p.lower() in names:
            perm.append(names.index(p.lower()))
            size *= x.shape[names.index(p.lower())]
        merged.append(size)
    y = np.transpose(x, perm).reshape(merged)
    # Pack: reorder the primal axes, split the factored ones, then place the sub-axes.
    dst_names = [n for n, _ in dst]
    dst_primals = [n for n, f in dst if f is None]
    y = np.transpose(y, [primals.index(p) for p in dst_primals])
    split_shape, split_names = [], []
    for p, size in zip(dst_primals, y.shape):
        factor = dict(dst).get(p.lower())
        if factor:
            split_shape += [size // factor, factor]
            split_names += [p, p.lower()]
        else:
            split_shape.append(size)
            split_names.append(p)
    y = y.reshape(split_shape)
    return as_out(np.transpose(y, [split_names.index(n) for n in dst_names]), out_type)


# ---------------------------------------------------------------- TE lowerings (te_impl)


def _te_reshape_with(symbolic_shape):
    """A reshape lowering; with `?` dims the target shape is `symbolic_shape(dims, inputs, attrs)`
    over the input's symbolic dims (products and floordivs of them), or the type's when static;
    either way the element count must stay the same at run time."""

    def te_impl(inputs, attrs, out_type):
        from tvm import topi

        x = inputs[0]
        dims = _te_dims(x)
        if not any(is_any(d) for d in out_type.shape):
            shape = list(static_shape(out_type, "reshape"))
            if all(is_static(d) for d in dims):  # the type relation checked the element count
                return topi.reshape(x, shape)
        else:
            shape = list(symbolic_shape(dims, inputs, attrs))
        total_in, total_out = 1, 1
        for d in dims:
            total_in = total_in * d
        for d in shape:
            total_out = total_out * d
        require(total_in == total_out, "reshape: the element count changes")
        return topi.reshape(x, shape)

    return te_impl


def _te_dims(x) -> list:
    return [int(d) if is_static(d) else d for d in x.shape]


_te_reshape = _te_reshape_with(lambda dims, inputs, attrs: infer_reshape(dims, attrs.newshape, bool(attrs.allowzero)))
_te_reverse_reshape = _te_reshape_with(
    lambda dims, inputs, attrs: infer_reshape(dims, attrs.newshape, bool(attrs.allowzero), reverse=True)
)
_te_reshape_like = _te_reshape_with(lambda dims, inputs, attrs: _reshape_like_shape(dims, _te_dims(inputs[1]), attrs))


def _te_transpose(inputs, attrs, out_type):
    from tvm import topi

    x = inputs[0]
    return topi.transpose(x, list(_transpose_axes(len(x.shape), attrs.axes)))


def _te_squeeze(inputs, attrs, out_type):
    from tvm import te

    x = inputs[0]
    shape = [int(d) if is_static(d) else AnyDim() for d in x.shape]
    axes = set(_squeeze_axes(shape, attrs.axis))
    for a in axes:
        if not is_static(x.shape[a]):
            require(x.shape[a] == 1, f"squeeze: dimension {a} is not 1")
    kept = [i for i in range(len(shape)) if i not in axes]

    def body(*idx):
        position = dict(zip(kept, idx))
        return x(*[position.get(i, 0) for i in range(len(shape))])

    return te.compute([x.shape[i] for i in kept], body, name="T_squeeze")


def _te_expand_dims(inputs, attrs, out_type):
    from tvm import te

    x = inputs[0]
    ndim = len(x.shape)
    pivot = attrs.axis + ndim + 1 if attrs.axis < 0 else attrs.axis
    n = attrs.num_newaxis
    shape = list(x.shape[:pivot]) + [1] * n + list(x.shape[pivot:])
    return te.compute(shape, lambda *idx: x(*(idx[:pivot] + idx[pivot + n :])), name="T_expand_dims")


def _te_layout_transform(inputs, attrs, out_type):
    from tvm import te

    x = inputs[0]
    src, dst = parse_layout(attrs.src_layout), parse_layout(attrs.dst_layout)
    src_names, dst_names = [n for n, _ in src], [n for n, _ in dst]
    src_factor = {n.upper(): f for n, f in src if f is not None}
    dst_factor = {n.upper(): f for n, f in dst if f is not None}

    def body(*idx):
        # The logical coordinate of every primal axis, then split it the way the source layout does.
        at = dict(zip(dst_names, idx))
        coords = {}
        for name in (n for n, f in dst if f is None):
            coord = at[name]
            if name in dst_factor:
                coord = coord * dst_factor[name] + at[name.lower()]
            coords[name] = coord
        src_idx = []
        for name, factor in src:
            if factor is not None:
                src_idx.append(coords[name.upper()] % factor)
            elif name in src_factor:
                src_idx.append(coords[name] // src_factor[name])
            else:
                src_idx.append(coords[name])
        return x(*src_idx)

    return te.compute(static_shape(out_type, "layout_transform"), body, name="T_layout_trans")


# ---------------------------------------------------------------- registration


def _register_all():
    reshape_attrs = (AttrField("newshape", REQUIRED, to_int_list), AttrField("allowzero", False, to_bool))
    register(
        OpDef(
            "reshape",
            1,
            _reshape_rel("reshape"),
            OpPattern.INJECTIVE,
            _reshape_impl("reshape"),
            attrs=reshape_attrs,
            te_impl=_te_reshape,
        )
    )
    register(
        OpDef(
            "contrib_reverse_reshape",
            1,
            _reshape_rel("contrib_reverse_reshape", reverse=True),
            OpPattern.INJECTIVE,
            _reshape_impl("contrib_reverse_reshape", reverse=True),
            attrs=reshape_attrs,
            te_impl=_te_reverse_reshape,
        )
    )
    register(
        OpDef(
            "reshape_like",
            2,
            _reshape_like_rel,
            OpPattern.INJECTIVE,
            _reshape_like_impl,
            attrs=(
                AttrField("lhs_begin", 0, to_int),
                AttrField("lhs_end", None, to_int),
                AttrField("rhs_begin", 0, to_int),
                AttrField("rhs_end", None, to_int),
            ),
            te_impl=_te_reshape_like,
        )
    )
    register(
        OpDef(
            "transpose",
            1,
            _transpose_rel,
            OpPattern.INJECTIVE,
            _transpose_impl,
            attrs=(AttrField("axes", None, to_optional_int_list, "permutation; None reverses the axes"),),
            # TVM's TransposeAttrs.axes has no C++ default, so its printer always printed it.
            extras={"always_print": ("axes",)},
            te_impl=_te_transpose,
        )
    )
    register(
        OpDef(
            "squeeze",
            1,
            _squeeze_rel,
            OpPattern.INJECTIVE,
            _squeeze_impl,
            attrs=(AttrField("axis", None, to_optional_int_list),),
            te_impl=_te_squeeze,
        )
    )
    register(
        OpDef(
            "expand_dims",
            1,
            _expand_dims_rel,
            OpPattern.BROADCAST,
            _expand_dims_impl,
            attrs=(AttrField("axis", REQUIRED, to_int), AttrField("num_newaxis", 1, to_int)),
            te_impl=_te_expand_dims,
        )
    )
    register(
        OpDef(
            "layout_transform",
            1,
            _layout_transform_rel,
            OpPattern.INJECTIVE,
            _layout_transform_impl,
            attrs=(AttrField("src_layout", REQUIRED, str), AttrField("dst_layout", REQUIRED, str)),
            te_impl=_te_layout_transform,
        )
    )


_register_all()
