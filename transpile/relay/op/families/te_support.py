"""Helpers for the TE lowerings (`te_impl`) of the elementwise, reduction and transform operators.

tvm is imported inside the functions: `import transpile.relay` must not import tvm.
Semantics follow the registry's numpy_impl (the reference), not TVM's own quirks.
"""

from __future__ import annotations

import contextlib
import contextvars
import math

from ...ty import AnyDim

__all__ = [
    "dynamic_shape_error",
    "dtype_of",
    "static_shape",
    "out_shape",
    "const",
    "float_zero",
    "int_minimum",
    "uint_zero",
    "known_constant",
    "logical_not",
    "cast",
    "is_float_dtype",
    "is_signed_dtype",
    "bits_of",
    "broadcast_index",
    "broadcast_compute",
    "map_compute",
    "reduce_compute",
    "comm_reducer",
    "has_zero_extent",
    "require",
    "require_equal",
    "collect_requirements",
    "require_values",
    "checked",
    "collect_value_checks",
    "VALUE_CHECK_ATTR",
    "EMPTY_GUARDED_ATTR",
    "is_static",
]


def dynamic_shape_error(op_name: str, detail: str = ""):
    from ....errors import UnsupportedFeatureError

    return UnsupportedFeatureError(
        f"{op_name} with a data-dependent output shape", "te", detail=detail or "the TE lowering needs static shapes"
    )


def static_shape(ty, op_name: str) -> tuple[int, ...]:
    """The shape of a tensor type, which must be fully static."""
    if any(isinstance(d, AnyDim) for d in ty.shape):
        raise dynamic_shape_error(op_name)
    return tuple(int(d) for d in ty.shape)


def require(condition, message: str) -> None:
    """Declares a condition on symbolic (`?`) dimensions the lowering relies on (e.g. broadcastable
    operands); the caller of the kernel checks it at run time before running the kernel.

    Outside `collect_requirements` (e.g. lowering one operator in a test) it is not recorded.
    A condition that simplifies to true is dropped.
    """
    from tvm import sym, tirx

    sink = _REQUIREMENTS.get()
    if sink is None:
        return
    condition = sym.Analyzer().simplify(condition)
    if isinstance(condition, tirx.IntImm) and int(condition.value):
        return
    sink.append((condition, message))


def require_equal(dims, message: str) -> None:
    """Requires dimensions the lowering indexes as one to be equal at run time (static ones are
    already checked by the type relation)."""
    dims = list(dims)
    for dim in dims[1:]:
        if not (is_static(dim) and is_static(dims[0])):
            require(dim == dims[0], message)


@contextlib.contextmanager
def _collecting(variable: contextvars.ContextVar):
    """A fresh list set as `variable`'s sink while the block runs."""
    sink: list = []
    token = variable.set(sink)
    try:
        yield sink
    finally:
        variable.reset(token)


def collect_requirements():
    """Collects the `require`d conditions of the lowerings run inside it into the yielded list."""
    return _collecting(_REQUIREMENTS)


_REQUIREMENTS: contextvars.ContextVar = contextvars.ContextVar("te_requirements", default=None)

# The block annotation of a reduction whose result is only read when its axes are not empty (so
# its initialization may stay inside its loops, the form schedules recognize).
EMPTY_GUARDED_ATTR = "transpile_empty_guarded"

# The block annotation naming a value check (its message); transpile.kernels.lower finds it there.
VALUE_CHECK_ATTR = "transpile_value_check"


def require_values(shape, predicate, message: str):
    """Declares a condition on the *values* of the operands (e.g. every index within its axis):
    `predicate(*index)` must hold at every index of `shape`. Returns a 0-d bool tensor, true when it
    does; the lowering must make its result depend on it (`checked`), so that it is computed first.

    The kernel evaluates the check before what depends on it and fails the call with `message`
    (a TIR assert, see transpile.kernels.lower) when it is false. The lowering must stay memory
    safe on its own (clamp what it reads): the check decides the error, not the safety.
    Outside `collect_value_checks` (e.g. lowering one operator in a test) nothing is recorded and
    the result is constant true.
    """
    from tvm import te, tirx

    sink = _VALUE_CHECKS.get()
    if sink is None:
        return te.compute((), lambda: tirx.const(True, "bool"), name="T_no_value_check")
    axes = [te.reduce_axis((0, dim), name=f"c{i}") for i, dim in enumerate(shape)]
    # One more axis of extent 1 keeps even a 0-d check a reduction block: schedules do not inline
    # reductions, and the assert reads the check's buffer.
    axes.append(te.reduce_axis((0, 1), name="c_once"))
    every = te.comm_reducer(lambda a, b: tirx.And(a, b), lambda dtype: tirx.const(True, dtype), name="all")

    def body():
        return every(tirx.And(predicate(*axes[:-1]), axes[-1] == 0), axis=axes)

    check = te.compute((), body, name="T_value_check", attrs={VALUE_CHECK_ATTR: message})
    sink.append((check, message))
    return check


def checked(check, value):
    """`value`, read only once `check` (from require_values) has been computed."""
    from tvm import tirx

    return tirx.Select(check(), value, tirx.const(0, dtype_of(value)))


def collect_value_checks():
    """Collects the `require_values` checks of the lowerings run inside it into the yielded list."""
    return _collecting(_VALUE_CHECKS)


_VALUE_CHECKS: contextvars.ContextVar = contextvars.ContextVar("te_value_checks", default=None)


def is_static(dim) -> bool:
    return isinstance(getattr(dim, "value", dim), int)


def out_shape(ty, like_tensors=(), op_name: str = "operator"):
    """The broadcast output shape: static dims from the type, unknown ones computed from the inputs'
    symbolic dims (numpy broadcasting: a dim of 1 stretches), with the broadcast requirement recorded."""
    from tvm import tirx

    shape = []
    rank = len(ty.shape)
    for i, dim in enumerate(ty.shape):
        dims = []
        for t in like_tensors:
            k = i - (rank - len(t.shape))
            if k >= 0 and not _is_one(t.shape[k]):
                dims.append(t.shape[k])
        symbolic = [d for d in dims if not is_static(d)]
        if not isinstance(dim, AnyDim):
            for d in symbolic:
                require(tirx.Or(d == int(dim), d == 1), f"{op_name}: dimension {i} must be {int(dim)} or 1")
            shape.append(int(dim))
            continue
        if not dims:
            raise dynamic_shape_error(op_name, f"dimension {i} of the output is unknown")
        found = dims[0]
        for d in dims[1:]:
            if d.same_as(found):
                continue
            require(
                tirx.Or(tirx.Or(d == found, d == 1), found == 1),
                f"{op_name}: operand dimensions do not broadcast (axis {i} of the output)",
            )
            found = tirx.Select(found == 1, d, found)
        shape.append(found)
    return shape


def _is_one(dim) -> bool:
    value = getattr(dim, "value", dim)
    return isinstance(value, int) and value == 1


def dtype_of(expr) -> str:
    """The dtype of a PrimExpr (tvm 0.27 exprs carry it as `.ty`, a PrimType; comparisons are lazy objects)."""
    if not hasattr(expr, "ty") and hasattr(expr, "asobject"):
        expr = expr.asobject()
    ty = getattr(expr, "ty", None)
    return str(ty.dtype) if ty is not None else str(expr.dtype)


def is_float_dtype(dtype: str) -> bool:
    return dtype.startswith("float") or dtype.startswith("bfloat")


def is_signed_dtype(dtype: str) -> bool:
    return dtype.startswith("int")


def bits_of(dtype: str) -> int:
    if dtype == "bool":
        return 8
    return int("".join(ch for ch in dtype if ch.isdigit()))


def const(value, dtype: str):
    """A literal; a float zero is `float_zero`, a signed integer's minimum `int_minimum`, an
    unsigned zero `uint_zero` (see there)."""
    from tvm import tirx

    if dtype == "bool":
        return tirx.const(bool(value), "bool")
    if is_float_dtype(dtype):
        value = float(value)
        return float_zero(dtype, negative=math.copysign(1.0, value) < 0) if value == 0 else tirx.const(value, dtype)
    if is_signed_dtype(dtype) and int(value) == -(1 << (bits_of(dtype) - 1)):
        return int_minimum(dtype)
    if dtype.startswith("uint") and int(value) == 0:
        return uint_zero(dtype)
    return tirx.const(int(value), dtype)


def uint_zero(dtype: str):
    """An unsigned 0 that TVM's simplifier cannot see: all ones (a reinterpreted -1) xor all ones.

    TVM's simplifier treats unsigned integers as if they could not wrap: a literal 0u minuend
    aborts the build ("Minuend's value is 0U ... negative uint") and `0u - x` is bounded to [0, 0],
    i.e. folded to 0. (Not a reinterpreted 0: TVM's LLVM codegen takes that for a null pointer.)
    """
    from tvm import tirx

    bits = bits_of(dtype)
    all_ones = tirx.reinterpret(dtype, tirx.const(-1, f"int{bits}"))
    return all_ones ^ tirx.const((1 << bits) - 1, dtype)


def known_constant(expr):
    """The value (a 0-d numpy array) `expr` has wherever it is evaluated, when that is evident: a
    literal, a reinterpreted or cast one, or a read of a tensor computed as one (a fill, and
    reshapes, broadcasts or casts of it). None otherwise.

    Once kernels are inlined, TVM's simplifier and LLVM see such values as constants: lowerings
    use this to keep them out of folds that do not follow numpy (see `cast`).
    """
    import numpy as np
    from tvm import te, tirx

    while True:
        if not hasattr(expr, "ty") and hasattr(expr, "asobject"):  # a TensorSlice, x[i]
            expr = expr.asobject()
        if isinstance(expr, (tirx.IntImm, tirx.FloatImm)):
            dtype = dtype_of(expr)
            return None if dtype.startswith("bfloat") else np.asarray(expr.value).astype(dtype)
        if isinstance(expr, tirx.Cast):
            inner = known_constant(expr.value)
            return None if inner is None else _numpy_cast(inner, dtype_of(expr))
        op_name = getattr(getattr(expr, "op", None), "name", None)
        if op_name == "tirx.reinterpret":
            inner = known_constant(expr.args[0])
            dtype = dtype_of(expr)
            if inner is None or dtype.startswith("bfloat") or inner.dtype.itemsize * 8 != bits_of(dtype):
                return None
            return inner.reshape(1).view(dtype).reshape(())
        if op_name != "te.tensor_load":
            return None
        tensor = expr.args[0]
        op = tensor.op
        if not isinstance(op, te.ComputeOp) or len(op.reduce_axis):
            return None
        expr = op.body[tensor.value_index]


def _numpy_cast(value, dtype: str):
    """numpy's astype as the registry's cast does it (floats to integers by float_to_integer)."""
    import numpy as np

    from .support import float_to_integer

    if dtype.startswith("bfloat"):
        return None
    if value.dtype.kind == "f" and dtype != "bool" and not is_float_dtype(dtype):
        return float_to_integer(value, dtype)
    with np.errstate(all="ignore"):
        return value.astype(dtype)


def int_minimum(dtype: str):
    """A signed integer type's minimum that TVM's simplifier cannot see: its bits, reinterpreted.

    TVM's rewrite rules negate literals: `x * MIN` (int32, int64) and `x // MIN`, `x % MIN` (every
    width) abort the build with "Literal value 2147483648 exceeds range of int32". LLVM folds the
    bitcast itself.
    """
    from tvm import tirx

    bits = bits_of(dtype)
    return tirx.reinterpret(dtype, tirx.const(1 << (bits - 1), f"uint{bits}"))


def float_zero(dtype: str, negative: bool = False):
    """A float ±0 that TVM's simplifier cannot see: the bits of -0 reinterpreted (times -1 for +0).

    TVM folds a float literal 0 as if floats were integers: `0 / x` and `0 * x` become 0 (IEEE: nan
    for x = 0, nan or inf), `x / 0` aborts the build ("Divide by zero"), `x + 0` drops the sign of
    -0. Those literals come from the kernels' constants (`zeros`, `full`, scalar constants) once
    inlined into their consumers. LLVM folds the bitcast and the product, then applies IEEE rules
    itself. (+0 is not a reinterpreted integer 0: TVM's LLVM codegen takes that for a null pointer.)
    """
    from tvm import tirx

    bits = bits_of(dtype)
    negative_zero = tirx.reinterpret(dtype, tirx.const(1 << (bits - 1), f"uint{bits}"))
    # +0 as -0 * -1, not fabs(-0): the C target (standalone bundles) has no lowering for fabs
    return negative_zero if negative else negative_zero * tirx.const(-1.0, dtype)


def logical_not(condition):
    """not condition, as a select: TVM rewrites Not(a < b) into b <= a, which is wrong for a nan."""
    from tvm import tirx

    return tirx.Select(condition, tirx.const(False, "bool"), tirx.const(True, "bool"))


def cast(value, dtype: str):
    """numpy's astype: to bool means `!= 0` (nan is True); float to int as support.float_to_integer."""
    from tvm import tirx

    source = dtype_of(value)
    if source == dtype:
        return value
    # A constant is cast here: TVM would fold the cast into a plain literal (a float or unsigned
    # 0, INT_MIN) that the lowerings of its consumers could no longer keep from TVM's own folds.
    known = known_constant(value)
    if known is not None:
        converted = _numpy_cast(known, dtype)
        if converted is not None:
            return const(converted.item(), dtype)
    if dtype == "bool":
        if is_float_dtype(source):
            # LLVM's ordered `!=` (and simplified Not(x == 0)) would turn nan into False.
            return tirx.Or(value != const(0, source), tirx.isnan(value))
        return value != const(0, source)
    if is_float_dtype(source) and not is_float_dtype(dtype):
        return _float_to_integer(value, dtype)
    return value.astype(dtype)


def _float_to_integer(value, dtype: str):
    """support.float_to_integer: through a signed register, low bits kept, nan/inf/out of range
    give the register's minimum. Never LLVM's fptosi of such a value, which is poison."""
    from tvm import tirx

    register = "int64" if bits_of(dtype) == 64 or dtype == "uint32" else "int32"
    bound = 2.0 ** (bits_of(register) - 1)
    work = value if bits_of(dtype_of(value)) >= 32 else value.astype("float32")
    work_dtype = dtype_of(work)
    # |x| < 2**(bits-1): one compare (nan fails it; -2**(bits-1) fails it too, and its result is the minimum anyway)
    fits = tirx.abs(work) < tirx.const(bound, work_dtype)
    # (LLVM's fptosi of a value that does not fit is poison, which a select not taking it discards)
    held = tirx.Select(fits, work.astype(register), tirx.min_value(register))
    if dtype != "uint64":
        return held.astype(dtype)
    high = tirx.And(work >= tirx.const(bound, work_dtype), work < tirx.const(2 * bound, work_dtype))
    shifted = tirx.Select(high, work - tirx.const(bound, work_dtype), const(0, work_dtype)).astype("int64")
    upper = shifted.astype("uint64") + tirx.const(1 << 63, "uint64")
    return tirx.Select(high, upper, held.astype("uint64"))


def broadcast_index(tensor, indices, shape=None):
    """Numpy broadcasting: the index into `tensor` for an output index (dims of size 1 read 0).

    A symbolic dim may be 1 at run time: it reads `select(dim == 1, 0, i)` unless it is the
    output dim itself (`shape`, when given)."""
    from tvm import tirx

    offset = len(indices) - len(tensor.shape)
    index = []
    for k, dim in enumerate(tensor.shape):
        i = indices[offset + k]
        if _is_one(dim):
            index.append(0)
        elif is_static(dim) or (shape is not None and dim.same_as(shape[offset + k])):
            index.append(i)
        else:
            index.append(tirx.Select(dim == 1, tirx.const(0, dtype_of(i)), i))
    return index


def broadcast_compute(inputs, out_type, fn, name: str):
    """out[i] = fn(*[x[broadcast i] for x in inputs]) over the output type's shape."""
    from tvm import te

    shape = out_shape(out_type, inputs, name[2:] if name.startswith("T_") else name)

    def body(*indices):
        return fn(*[t(*broadcast_index(t, indices, shape)) for t in inputs])

    return te.compute(shape, body, name=name)


def map_compute(x, fn, name: str):
    """An elementwise compute of one tensor."""
    from tvm import te

    return te.compute(x.shape, lambda *i: fn(x(*i)), name=name)


def comm_reducer(combine, identity_of, name: str):
    from tvm import te

    return te.comm_reducer(combine, lambda dtype: identity_of(dtype), name=name)


def has_zero_extent(x, axes) -> bool:
    return any(_is_zero(x.shape[a]) for a in axes)


def _is_zero(dim) -> bool:
    value = getattr(dim, "value", dim)
    return isinstance(value, int) and value == 0


def reduce_compute(x, axes, keepdims: bool, reducer, name: str, value_fn=None, empty=0):
    """reducer(value_fn(x[...])) over `axes` (sorted, normalized) with or without kept dims.

    `reducer` is te.sum / te.max / te.min or a te.comm_reducer. `empty` is the result of a reduction
    over zero elements (a TIR reduction over an empty loop would never run its init).
    """
    from tvm import te

    axes = tuple(axes)
    rvars = {a: te.reduce_axis((0, x.shape[a]), name=f"k{a}") for a in axes}
    if keepdims:
        shape = [1 if i in axes else x.shape[i] for i in range(len(x.shape))]
    else:
        shape = [x.shape[i] for i in range(len(x.shape)) if i not in axes]

    def element(full):
        value = x(*full)
        return value_fn(value) if value_fn is not None else value

    if has_zero_extent(x, axes):
        fill = const(empty, dtype_of(element([0] * len(x.shape))))
        return te.compute(shape, lambda *indices: fill, name=name)

    def body(*indices):
        full, pos = [], 0
        for i in range(len(x.shape)):
            if i in rvars:
                full.append(rvars[i])
                pos += 1 if keepdims else 0
            else:
                full.append(indices[pos])
                pos += 1
        return reducer(element(full), axis=[rvars[a] for a in axes])

    symbolic = [x.shape[a] for a in axes if not is_static(x.shape[a])]
    if not symbolic:
        return te.compute(shape, body, name=name)
    # A `?` reduced axis may be empty at run time, and then the reduction's init never runs.
    from tvm import tirx

    reduced = te.compute(shape, body, name=f"{name}_reduce", attrs={EMPTY_GUARDED_ATTR: 1})
    fill = const(empty, str(reduced.dtype))
    nonempty = symbolic[0] > 0
    for dim in symbolic[1:]:
        nonempty = tirx.And(nonempty, dim > 0)
    return te.compute(shape, lambda *indices: tirx.Select(nonempty, reduced(*indices), fill), name=name)
