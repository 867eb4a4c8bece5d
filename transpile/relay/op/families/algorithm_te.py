"""TE lowerings of the sorting and searching operators: hand-written TIR (a stable merge sort, a binary search).

topi.sort/argsort/topk call `tvm.contrib.sort.*` packed functions, which live in
libtvm_runtime_extra (not linked into our libraries), support a handful of dtypes and leave nan
order undefined. These kernels are plain TIR: every dtype, numpy's order (see algorithm.py) and
no run-time dependency. tvm is imported inside the functions.
"""

from __future__ import annotations

from .te_support import is_static, require, require_equal

__all__ = ["te_sort", "te_topk", "te_searchsorted", "ordered_before"]


def _prod(dims):
    total = 1
    for d in dims:
        total = total * d
    return total


def ordered_before(a, b, ascend: bool, dtype: str):
    """Whether value `a` goes strictly before `b` (both of `dtype`): numpy order, nan largest."""
    from tvm import tirx

    if dtype == "bool":  # LLVM has no ordered comparison of i1 values
        a, b = a.astype("int8"), b.astype("int8")
    if not dtype.startswith(("float", "bfloat")):
        return a < b if ascend else a > b
    if ascend:
        return tirx.Or(a < b, tirx.And(tirx.isnan(b), tirx.Not(tirx.isnan(a))))
    return tirx.Or(a > b, tirx.And(tirx.isnan(a), tirx.Not(tirx.isnan(b))))


def _not_after(a, b, dtype: str):
    """a <= b in numpy's ascending order (spelled without negating a float comparison, which the
    simplifier would turn into an ordered `>=` that is false for nan)."""
    from tvm import tirx

    if dtype == "bool":
        a, b = a.astype("int8"), b.astype("int8")
    if not dtype.startswith(("float", "bfloat")):
        return a <= b
    return tirx.Or(tirx.isnan(b), a <= b)


def _sort_rows_ir(data, outputs, axis: int, ascend: bool, count):
    """Sorts every row of `data` along `axis` (a bottom-up merge sort of indices, stable) and writes
    the first `count` positions of each sorted row into `outputs`: ("values" | "indices", buffer)."""
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    shape = list(data.shape)
    dtype = str(data.dtype)
    n = shape[axis]
    inner = _prod(shape[axis + 1 :])
    rows = _prod(shape[:axis]) * inner
    with IRBuilder() as builder:
        x = T.buffer_proxy(data)
        outs = [(kind, T.buffer_proxy(buf), str(buf.dtype)) for kind, buf in outputs]
        with T.parallel(0, rows) as row:
            base = (row // inner) * n * inner + row % inner  # flat offset of the row's first element
            out_base = (row // inner) * count * inner + row % inner
            order = T.buffer_proxy(T.decl_buffer([n], "int32"))
            merged = T.buffer_proxy(T.decl_buffer([n], "int32"))
            # width, left cursor, right cursor, take-right flag
            state = T.buffer_proxy(T.decl_buffer([4], "int32", scope="local"))

            def value(position):
                return x[base + order[position] * inner]

            with T.serial(0, n) as t:
                order[t] = t
            state[0] = 1
            with T.While(state[0] < n):
                width = state[0]
                with T.serial(0, (n + 2 * width - 1) // (2 * width)) as pair:
                    lo = pair * 2 * width
                    mid = tirx.min(lo + width, n)
                    hi = tirx.min(lo + 2 * width, n)
                    state[1] = lo
                    state[2] = mid
                    with T.serial(0, hi - lo) as k:
                        # Nested ifs: a cursor past its run must not be read.
                        state[3] = 0
                        with T.If(state[2] < hi):
                            with T.Then():
                                with T.If(state[1] >= mid):
                                    with T.Then():
                                        state[3] = 1
                                    with T.Else():
                                        # Equal elements take the left run first: stable.
                                        with T.If(ordered_before(value(state[2]), value(state[1]), ascend, dtype)):
                                            with T.Then():
                                                state[3] = 1
                        with T.If(state[3] == 1):
                            with T.Then():
                                merged[lo + k] = order[state[2]]
                                state[2] = state[2] + 1
                            with T.Else():
                                merged[lo + k] = order[state[1]]
                                state[1] = state[1] + 1
                with T.serial(0, n) as t:
                    order[t] = merged[t]
                state[0] = width * 2
            with T.serial(0, count) as t:
                for kind, out, dtype in outs:
                    out[out_base + t * inner] = value(t) if kind == "values" else order[t].astype(dtype)
        return builder.get()


def _extern_sort(x, axis: int, ascend: bool, count, kinds, index_dtype: str, name: str):
    from tvm import te

    axis = axis % len(x.shape)
    shape = list(x.shape)
    shape[axis] = count
    dtypes = [str(x.dtype) if kind == "values" else index_dtype for kind in kinds]
    outs = te.extern(
        [shape] * len(kinds),
        [x],
        lambda ins, outs: _sort_rows_ir(ins[0], list(zip(kinds, outs)), axis, ascend, count),
        dtype=dtypes,
        name=name,
    )
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def te_sort(kind: str):
    """te_impl of `sort` (kind "values") and `argsort` (kind "indices")."""

    def te_impl(inputs, attrs, out_type):
        (x,) = inputs
        axis = attrs.axis % len(x.shape)
        what = "values" if kind == "sort" else "indices"
        (out,) = _extern_sort(x, axis, bool(attrs.is_ascend), x.shape[axis], [what], out_type.dtype, f"T_{kind}")
        return out

    return te_impl


def te_topk(inputs, attrs, out_type):
    (x,) = inputs
    axis = attrs.axis % len(x.shape)
    count = int(attrs.k) if attrs.k >= 1 else x.shape[axis]
    if not is_static(x.shape[axis]):
        require(x.shape[axis] >= count, f"topk: k={count} exceeds the length of axis {axis}")
    kinds = {"both": ["values", "indices"], "values": ["values"], "indices": ["indices"]}[attrs.ret_type]
    index_dtype = out_type.fields[1].dtype if attrs.ret_type == "both" else out_type.dtype
    outs = _extern_sort(x, axis, bool(attrs.is_ascend), count, kinds, index_dtype, "T_topk")
    return outs if attrs.ret_type == "both" else outs[0]


def _searchsorted_ir(sequence, values, out, right: bool):
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    n = sequence.shape[-1]
    dtype = str(sequence.dtype)
    per_row = values.shape[-1]
    with IRBuilder() as builder:
        seq, vals, result = T.buffer_proxy(sequence), T.buffer_proxy(values), T.buffer_proxy(out)
        with T.parallel(0, _prod(values.shape)) as i:
            offset = (i // per_row) * n if len(sequence.shape) > 1 else 0
            bounds = T.buffer_proxy(T.decl_buffer([2], "int32", scope="local"))
            bounds[0] = 0
            bounds[1] = n
            value = vals[i]
            with T.While(bounds[0] < bounds[1]):
                mid = bounds[0] + ((bounds[1] - bounds[0]) >> 1)
                probe = seq[offset + mid]
                # left: the first position whose element is not before the value; right: the
                # first whose element is after it.
                if right:
                    go_right = _not_after(probe, value, dtype)
                else:
                    go_right = ordered_before(probe, value, True, dtype)
                with T.If(go_right):
                    with T.Then():
                        bounds[0] = mid + 1
                    with T.Else():
                        bounds[1] = mid
            result[i] = bounds[0].astype(str(out.dtype))
        return builder.get()


def te_searchsorted(inputs, attrs, out_type):
    from tvm import te

    sequence, values = inputs
    if len(sequence.shape) > 1:
        for axis in range(len(values.shape) - 1):
            require_equal([sequence.shape[axis], values.shape[axis]], f"searchsorted: outer axis {axis} differs")
    return te.extern(
        values.shape,
        [sequence, values],
        lambda ins, outs: _searchsorted_ir(ins[0], ins[1], outs[0], bool(attrs.right)),
        dtype=out_type.dtype,
        name="T_searchsorted",
    )
