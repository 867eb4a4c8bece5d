"""TE lowerings of gather_nd, adv_index, unravel_index (te.compute) and of the scatters (hand-written TIR).

They follow the registry's numpy_impl (scatter_gather.py): negative indices wrap once, then
gathers clamp and scatters skip what is still out of range. topi's gather_nd, adv_index and
scatter kernels read and write raw indices (no negative ones, no bounds), topi's
scatter_elements assumes indices and updates of the data's shape, and topi's unravel_index
divides by the run-time shape (a 0 there would trap): hence these definitions.
tvm is imported inside the functions.
"""

from __future__ import annotations

from .te_support import broadcast_index, is_static, out_shape, require, require_equal

__all__ = ["te_gather_nd", "te_adv_index", "te_unravel_index", "te_scatter_elements", "te_scatter_nd"]


def _int64(value):
    from tvm import tirx

    return tirx.const(value, "int64") if isinstance(value, int) else value.astype("int64")


def _wrapped(index, extent):
    """The index as int64, a negative one counted from the end of an axis of `extent`."""
    from tvm import tirx

    index = index.astype("int64")
    return tirx.Select(index < 0, index + _int64(extent), index)


def _clamped(index, extent):
    """The wrapped index clamped into [0, extent - 1], as an int32 buffer index."""
    from tvm import tirx

    last = tirx.max(_int64(extent) - 1, tirx.const(0, "int64"))
    return tirx.max(tirx.min(_wrapped(index, extent), last), tirx.const(0, "int64")).astype("int32")


def _read_within(data, coords, extents, out_shape, op_name: str):
    """data[coords] with coords already clamped; an axis in `extents` may be empty, with nothing to
    read: numpy raises unless the result is empty too, so the kernel requires that (a shape
    condition) and reads nothing there anyway."""
    from tvm import tirx

    value = data(*coords)
    possibly_empty = [e for e in extents if not (is_static(e) and int(e) > 0)]
    if not possibly_empty:
        return value
    nonempty = tirx.const(True, "bool")
    for extent in possibly_empty:
        nonempty = tirx.And(nonempty, _int64(extent) > 0)
    no_result = tirx.const(False, "bool")
    for dim in out_shape:
        no_result = tirx.Or(no_result, _int64(dim) == 0)
    require(tirx.Or(nonempty, no_result), f"{op_name}: cannot index into an empty axis")
    return tirx.if_then_else(nonempty, value, tirx.const(0, str(data.dtype)))


def _require_at_most(small, big, message: str) -> None:
    """A run-time check (before the kernel runs) that a `?` extent stays within another."""
    if not (is_static(small) and is_static(big)):
        require(small <= big, message)


def _prod(dims):
    total = 1
    for d in dims:
        total = total * d
    return total


def _flat(coords, shape):
    """Row-major offset of `coords` in a buffer of `shape`."""
    offset = 0
    for c, d in zip(coords, shape):
        offset = offset * d + c
    return offset


def _unflat(offset, shape):
    """The row-major coordinates of `offset` in `shape`."""
    coords = []
    for d in reversed(list(shape)):
        coords.append(offset % d)
        offset = offset // d
    return list(reversed(coords))


# ---------------------------------------------------------------- gathers


def te_gather_nd(inputs, attrs, out_type):
    from tvm import te

    data, indices = inputs
    batch = attrs.batch_dims
    m = int(indices.shape[0]) if attrs.index_rank is None else int(attrs.index_rank)
    k = len(indices.shape) - 1
    require_equal([indices.shape[0], m], "gather_nd: the first axis of indices must be index_rank long")
    for i in range(batch):
        require_equal([data.shape[i], indices.shape[i + 1]], f"gather_nd: batch dimension {i} differs")
    shape = list(indices.shape[1:]) + list(data.shape[m + batch :])

    def body(*o):
        y, rest = o[:k], o[k:]
        tuple_ = [_clamped(indices(i, *y), data.shape[batch + i]) for i in range(m)]
        extents = [data.shape[batch + i] for i in range(m)]
        return _read_within(data, list(y[:batch]) + tuple_ + list(rest), extents, shape, "gather_nd")

    return te.compute(shape, body, name="T_gather_nd")


def te_adv_index(inputs, attrs, out_type):
    from tvm import te

    data, *indices = inputs[0]
    n_broadcast = len(out_type.shape) - (len(data.shape) - len(indices))
    broadcast_type = type(out_type)(out_type.shape[:n_broadcast], out_type.dtype)
    bshape = out_shape(broadcast_type, indices, "adv_index")
    shape = list(bshape) + list(data.shape[len(indices) :])

    def body(*o):
        b, rest = o[:n_broadcast], o[n_broadcast:]
        coords = [_clamped(t(*broadcast_index(t, b, bshape)), data.shape[i]) for i, t in enumerate(indices)]
        extents = [data.shape[i] for i in range(len(indices))]
        return _read_within(data, coords + list(rest), extents, shape, "adv_index")

    return te.compute(shape, body, name="T_adv_index")


def te_unravel_index(inputs, attrs, out_type):
    from tvm import te, tirx

    indices, shape = inputs
    count = int(shape.shape[0])
    dtype = out_type.dtype

    def body(v, *i):
        if count == 0:
            return tirx.const(0, dtype)
        index = indices(*i).astype("int64")
        dims = [tirx.max(shape(u).astype("int64"), tirx.const(1, "int64")) for u in range(count)]
        coords, rest = [], index
        for dim in reversed(dims):
            coords.append(tirx.floormod(rest, dim))
            rest = tirx.floordiv(rest, dim)
        coords.reverse()
        result = coords[-1]
        for u in range(count - 2, -1, -1):
            result = tirx.Select(v == u, coords[u], result)
        return result.astype(dtype)

    return te.compute([count] + list(indices.shape), body, name="T_unravel_index")


# ---------------------------------------------------------------- scatters


def _combine(reduction: str, dtype: str):
    """new element = f(old, update) for a reduction (bool: add is `or`, mul is `and`, as numpy)."""
    from tvm import tirx

    if reduction == "update":
        return lambda old, new: new
    if dtype == "bool":
        combine = {"add": tirx.Or, "mul": tirx.And, "min": tirx.And, "max": tirx.Or}[reduction]
        return lambda old, new: combine(old, new)
    if reduction in ("add", "mean"):
        return lambda old, new: old + new
    if reduction == "mul":
        return lambda old, new: old * new
    floating = dtype.startswith(("float", "bfloat"))
    pick_new = (lambda old, new: new < old) if reduction == "min" else (lambda old, new: new > old)
    if not floating:
        return lambda old, new: tirx.Select(pick_new(old, new), new, old)
    # numpy's minimum/maximum: a nan on either side wins.
    return lambda old, new: tirx.Select(tirx.Or(tirx.isnan(new), pick_new(old, new)), new, old)


def _scope():
    """A frame holding several consecutive statements (IRBuilder needs one at the top level)."""
    from tvm.script.ir_builder import tirx as T

    return T.attr(0, "extern_scope", 0)


def _scatter_elements_ir(data, indices, updates, out, axis: int, reduction: str):
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    dtype = str(data.dtype)
    shape, ishape, ushape = list(data.shape), list(indices.shape), list(updates.shape)
    extent, steps = shape[axis], ishape[axis]
    line_shape = ishape[:axis] + ishape[axis + 1 :]
    combine = _combine(reduction, dtype)
    with IRBuilder() as builder:
        src, ind, upd, dst = (T.buffer_proxy(b) for b in (data, indices, updates, out))
        with _scope():
            with T.parallel(0, _prod(shape)) as i:
                dst[i] = src[i]
            if reduction == "mean":
                counts = T.buffer_proxy(T.decl_buffer([_prod(shape)], "int32"))
                with T.parallel(0, _prod(shape)) as i:
                    counts[i] = 1
            # Repeated targets of one element differ only along `axis`: a line keeps their order.
            with T.parallel(0, _prod(line_shape)) as line:
                outer = _unflat(line, line_shape)
                with T.serial(0, steps) as k:
                    at = outer[:axis] + [k] + outer[axis:]
                    target = _wrapped(ind[_flat(at, ishape)], extent)
                    with T.If(tirx.And(target >= 0, target < _int64(extent))):
                        with T.Then():
                            position = _flat(at[:axis] + [target.astype("int32")] + at[axis + 1 :], shape)
                            dst[position] = combine(dst[position], upd[_flat(at, ushape)])
                            if reduction == "mean":
                                counts[position] = counts[position] + 1
            if reduction == "mean":
                with T.parallel(0, _prod(shape)) as i:
                    if dtype.startswith(("float", "bfloat")):
                        dst[i] = dst[i] / counts[i].astype(dtype)
                    else:
                        dst[i] = tirx.floordiv(dst[i].astype("int64"), counts[i].astype("int64")).astype(dtype)
        return builder.get()


def te_scatter_elements(inputs, attrs, out_type):
    from tvm import te

    data, indices, updates = inputs
    axis = attrs.axis % len(data.shape)
    for i, (d, k, u) in enumerate(zip(data.shape, indices.shape, updates.shape)):
        _require_at_most(k, u, f"scatter_elements: indices exceed updates on axis {i}")
        if i != axis:
            _require_at_most(k, d, f"scatter_elements: indices exceed data on axis {i}")
    return te.extern(
        [data.shape],
        [data, indices, updates],
        lambda ins, outs: _scatter_elements_ir(ins[0], ins[1], ins[2], outs[0], axis, attrs.reduction),
        dtype=str(data.dtype),
        name="T_scatter_elements",
    )


def _scatter_nd_ir(data, indices, updates, out, mode: str):
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    shape = list(data.shape)
    m = int(indices.shape[0])
    tuples = _prod(indices.shape[1:])
    width = _prod(shape[m:])  # elements of the slice each index tuple addresses
    combine = _combine(mode, str(data.dtype))
    with IRBuilder() as builder:
        src, ind, upd, dst = (T.buffer_proxy(b) for b in (data, indices, updates, out))
        with _scope():
            with T.parallel(0, _prod(shape)) as i:
                dst[i] = src[i]
            # Tuples naming the same slice are applied in order: they run serially per column.
            with T.parallel(0, width) as j:
                with T.serial(0, tuples) as t:
                    targets = [_wrapped(ind[i * tuples + t], shape[i]) for i in range(m)]
                    valid = tirx.const(True, "bool")
                    for i, target in enumerate(targets):
                        valid = tirx.And(valid, tirx.And(target >= 0, target < _int64(shape[i])))
                    with T.If(valid):
                        with T.Then():
                            row = _flat([target.astype("int32") for target in targets], shape[:m])
                            position = row * width + j
                            dst[position] = combine(dst[position], upd[t * width + j])
        return builder.get()


def te_scatter_nd(inputs, attrs, out_type):
    from tvm import te

    data, indices, updates = inputs
    m, k = int(indices.shape[0]), len(indices.shape) - 1
    for i in range(k):
        require_equal([indices.shape[i + 1], updates.shape[i]], f"scatter_nd: indices and updates differ on axis {i}")
    for i in range(m, len(data.shape)):
        require_equal([updates.shape[i - m + k], data.shape[i]], f"scatter_nd: updates and data differ on axis {i}")
    return te.extern(
        [data.shape],
        [data, indices, updates],
        lambda ins, outs: _scatter_nd_ir(ins[0], ins[1], ins[2], outs[0], attrs.mode),
        dtype=str(data.dtype),
        name="T_scatter_nd",
    )
