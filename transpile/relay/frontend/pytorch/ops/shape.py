"""Converters of ATen shape operators: view/reshape, permute, expand, squeeze, cat, split, slice, select, flip."""

from __future__ import annotations

from .... import expr as E
from ....ty import AnyDim
from ..converters import converter
from .support import cast, normalize_axis, normalize_axes

_INT64_MAX = (1 << 63) - 1


# ---------------------------------------------------------------- aliases and copies


@converter(
    "aten.clone.default",
    "aten.alias.default",
    "aten.detach.default",
    "aten.lift_fresh_copy.default",
    "aten.contiguous.default",
)
def identity(ctx):
    return ctx.tensor("self")


# ---------------------------------------------------------------- reshaping


def _target_shape(ctx, x, sizes) -> list[int]:
    """A view's size list as Relay newshape: static sizes; dynamic ones as 0 (keep x's dimension) or -1."""
    shape = []
    for position, size in enumerate(sizes):
        if isinstance(size, E.Expr):
            data = ctx.b.value_of(size)
            if data is None:
                # Relay's 0 copies the input's dimension at the same position.
                shape.append(0 if _same_symbolic_dim(ctx, position) else -1)
                continue
            size = data.reshape(()).item()
        shape.append(int(size))
    if shape.count(-1) > 1:
        raise ctx.unsupported(f"a view to {len(sizes)} dimensions of which several are dynamic")
    if 0 in [s for s, given in zip(shape, sizes) if not isinstance(given, E.Expr)]:
        raise ctx.unsupported("zero-size tensors")
    return shape


def _same_symbolic_dim(ctx, position, offset=0) -> bool:
    """Whether size `position` of a view/expand is, symbolically, dimension `position - offset` of its input."""
    size_nodes = ctx.node.args[1] if len(ctx.node.args) > 1 else ctx.node.kwargs.get("size")
    source = ctx.node.args[0].meta.get("val")
    size_node = size_nodes[position] if isinstance(size_nodes, (list, tuple)) else None
    size = getattr(size_node, "meta", {}).get("val")
    if source is None or size is None or not 0 <= position - offset < source.dim():
        return False
    dim = source.shape[position - offset]
    return not isinstance(dim, int) and str(dim) == str(size)


@converter("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.view_copy.default")
def view(ctx):
    x = ctx.tensor("self")
    newshape = _target_shape(ctx, x, ctx.arg("size"))
    current = ctx.b.shape_of(x)
    if len(current) == len(newshape) and all(
        not isinstance(d, AnyDim) and int(d) == n for d, n in zip(current, newshape)
    ):
        return x
    return ctx.b.call("reshape", x, newshape=newshape)


@converter("aten.permute.default")
def permute(ctx):
    x = ctx.tensor("self")
    axes = normalize_axes(ctx, ctx.ints("dims"), ctx.b.ndim_of(x))
    if axes == sorted(axes):
        return x
    return ctx.b.call("transpose", x, axes=axes)


@converter("aten.t.default")
def t(ctx):
    x = ctx.tensor("self")
    return x if ctx.b.ndim_of(x) < 2 else ctx.b.call("transpose", x, axes=[1, 0])


@converter("aten.transpose.int")
def transpose(ctx):
    x = ctx.tensor("self")
    ndim = ctx.b.ndim_of(x)
    if ndim == 0:
        return x
    first, second = normalize_axes(ctx, [ctx.arg("dim0"), ctx.arg("dim1")], ndim)
    axes = list(range(ndim))
    axes[first], axes[second] = axes[second], axes[first]
    return x if first == second else ctx.b.call("transpose", x, axes=axes)


@converter("aten.expand.default")
def expand(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    sizes = ctx.arg("size")
    current = b.shape_of(x)
    lead = len(sizes) - len(current)
    if lead < 0:
        raise b.error(f"cannot expand a {len(current)}-d tensor to {len(sizes)} dimensions")
    shape, changed = [], lead > 0
    for i, size in enumerate(sizes):
        if i >= lead and _keeps_dimension(ctx, size, i, lead):
            shape.append(current[i - lead])
            continue
        shape.append(ctx.static_int(size, "an expanded size"))
        if i >= lead:
            have = current[i - lead]
            changed = changed or isinstance(have, AnyDim) or int(have) != shape[-1]
    if not changed:
        return x
    if any(isinstance(n, AnyDim) for n in shape):
        raise ctx.unsupported("broadcasting a tensor with a dynamic dimension")
    return b.call("broadcast_to", x, shape=[int(n) for n in shape])


def _keeps_dimension(ctx, size, position, lead) -> bool:
    """-1, or a dynamic size that is symbolically the input's own dimension."""
    if not isinstance(size, E.Expr):
        return int(size) == -1
    return ctx.b.value_of(size) is None and _same_symbolic_dim(ctx, position, offset=lead)


@converter("aten.unsqueeze.default")
def unsqueeze(ctx):
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim"), ctx.b.ndim_of(x) + 1)
    return ctx.b.call("expand_dims", x, axis=axis)


@converter("aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims")
def squeeze(ctx):
    """Removes the given (default: all) dimensions of size 1; others are left alone, as in PyTorch."""
    b = ctx.b
    x = ctx.tensor("self")
    shape = b.shape_of(x)
    if not shape:
        return x
    dims = ctx.arg("dim")
    axes = (
        range(len(shape))
        if dims is None
        else normalize_axes(ctx, dims if isinstance(dims, list) else [dims], len(shape))
    )
    if any(isinstance(shape[a], AnyDim) for a in axes):
        raise ctx.unsupported("squeezing a dynamic dimension")
    ones = sorted({a for a in axes if int(shape[a]) == 1})
    return b.call("squeeze", x, axis=ones) if ones else x


# ---------------------------------------------------------------- joining and splitting


@converter("aten.cat.default", "aten.concat.default")
def cat(ctx):
    b = ctx.b
    dtype = ctx.out_dtype
    # PyTorch skips 1-d empty tensors in cat (a legacy rule); Relay has no zero-size tensors.
    tensors = [cast(b, t, dtype) for t in ctx.arg("tensors") if b.shape_of(t) != [0]]
    if not tensors:
        raise ctx.unsupported("concatenating only empty tensors")
    axis = normalize_axis(ctx, ctx.arg("dim", 0), b.ndim_of(tensors[0]))
    return tensors[0] if len(tensors) == 1 else b.call("concatenate", tensors, axis=axis)


@converter("aten.stack.default")
def stack(ctx):
    b = ctx.b
    dtype = ctx.out_dtype
    tensors = [cast(b, t, dtype) for t in ctx.arg("tensors")]
    axis = normalize_axis(ctx, ctx.arg("dim", 0), b.ndim_of(tensors[0]) + 1)
    return b.call("stack", tensors, axis=axis)


def _split_at(ctx, x, sizes, axis):
    b = ctx.b
    if len(sizes) == 1:
        return [x]
    indices, offset = [], 0
    for size in sizes[:-1]:
        offset += size
        indices.append(offset)
    parts = b.call("split", x, indices_or_sections=indices, axis=axis)
    return [b.get(parts, i) for i in range(len(sizes))]


@converter("aten.split.Tensor", "aten.split_with_sizes.default")
def split(ctx):
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim", 0), ctx.b.ndim_of(x))
    total = ctx.b.shape_of(x)[axis]
    if isinstance(total, AnyDim):
        raise ctx.unsupported("splitting a dynamic dimension")
    total = int(total)
    if ctx.target == "aten.split.Tensor":
        step = ctx.static_int(ctx.arg("split_size"), "split_size")
        sizes = [min(step, total - start) for start in range(0, total, step)]
    else:
        sizes = ctx.ints("split_sizes")
        if sum(sizes) != total:
            raise ctx.b.error(f"split sizes {sizes} do not add up to the dimension ({total})")
    if 0 in sizes:
        raise ctx.unsupported("zero-size split pieces")
    return _split_at(ctx, x, sizes, axis)


@converter("aten.unbind.int")
def unbind(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim", 0), b.ndim_of(x))
    total = b.static_shape(x, "an unbound tensor")[axis]
    return [b.call("squeeze", part, axis=[axis]) for part in _split_at(ctx, x, [1] * total, axis)]


# ---------------------------------------------------------------- slicing


@converter("aten.slice.Tensor")
def slice_(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim", 0), b.ndim_of(x))
    step = ctx.static_int(ctx.arg("step", 1), "step")
    if step <= 0:
        raise b.error(f"slice step must be positive, got {step}")
    start = ctx.static_int(ctx.arg("start", 0), "start")
    end = ctx.arg("end")
    end = _INT64_MAX if end is None else ctx.static_int(end, "end")
    dim = b.shape_of(x)[axis]
    if not isinstance(dim, AnyDim):
        dim = int(dim)
        start = min(max(start + dim if start < 0 else start, 0), dim)
        end = min(max(end + dim if end < 0 else end, 0), dim)
        if end <= start:
            raise ctx.unsupported("an empty slice (zero-size tensors)")
        if start == 0 and end == dim and step == 1:
            return x
    return b.call("strided_slice", x, begin=[start], end=[end], strides=[step], axes=[axis])


@converter("aten.select.int")
def select(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    axis = normalize_axis(ctx, ctx.arg("dim"), b.ndim_of(x))
    index = ctx.static_int(ctx.arg("index"), "index")
    dim = b.shape_of(x)[axis]
    if index < 0:
        if isinstance(dim, AnyDim):
            raise ctx.unsupported("a negative index into a dynamic dimension")
        index += int(dim)
    part = b.call("strided_slice", x, begin=[index], end=[index + 1], strides=[1], axes=[axis])
    return b.call("squeeze", part, axis=[axis])


@converter("aten.flip.default")
def flip(ctx):
    x = ctx.tensor("self")
    for axis in sorted(set(normalize_axes(ctx, ctx.ints("dims"), ctx.b.ndim_of(x)))):
        x = ctx.b.call("reverse", x, axis=axis)
    return x


@converter("aten.repeat.default")
def repeat(ctx):
    return ctx.b.call("tile", ctx.tensor("self"), reps=ctx.ints("repeats"))
