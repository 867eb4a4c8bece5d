"""Integer add, subtract, multiply (and negative, abs, sums, products) for the TE lowerings that
wrap modulo 2**bits as numpy does, whatever TVM's simplifier and LLVM assume of a plain `a + b`.

A plain TIR `a + b` does not wrap reliably:
- TVM's simplifier treats integers as mathematical integers: it rewrites `a + b > a` to `b > 0`
  and pushes a widening cast of a sum into its terms (`int64(a + b)` to `int64(a) + int64(b)`);
- TVM's LLVM codegen marks every 32- and 64-bit integer add, sub and mul `nsw` (signed) or `nuw`
  (unsigned): an overflowing result is poison, and LLVM folds on that (the same comparison
  rewrite; `sub nuw 0, x` became 0).
So each value is computed where it cannot overflow, and hidden from TVM's simplifier:
- 8 and 16 bits: in their own type (LLVM wraps: TVM adds no flags below 32 bits), then xor-ed
  twice with a constant (`_hidden`): TVM has no rewrite rule for xor and bounds it as anything;
- 32 bits: the operands' bits zero-extended to uint64, where no sum, difference (a + ~b + 1) or
  product overflows, the low 32 bits kept (and reinterpreted for int32);
- 64 bits: in 32-bit halves with an explicit carry (no partial result reaches 2**34); products of
  halves in uint64.
LLVM folds all of it back to the one flag-free instruction of the original width (add, sub, mul;
checked in the LLVM IR), except a 64-bit add or subtract: a few and/add instructions.
No cast to int32 or int64 (TVM's index types) wraps a whole operand: the canonical simplifier
visits the operand of such a cast twice, so n inlined operations took 2**n steps to simplify.
Only values the operator lowerings compute go through here: TVM's own index arithmetic is untouched.
tvm is imported inside the functions.
"""

from __future__ import annotations

import numpy as np

from .te_support import bits_of, const, dtype_of, is_static, known_constant, reduce_compute

__all__ = [
    "wrapping_add",
    "wrapping_subtract",
    "wrapping_multiply",
    "wrapping_negative",
    "wrapping_abs",
    "wrapping_sum",
    "wrapping_sum_reducer",
    "wrapping_prod_reducer",
]

_NUMPY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply}


def wrapping_add(a, b):
    return _wrapping("add", a, b)


def wrapping_subtract(a, b):
    return _wrapping("subtract", a, b)


def wrapping_multiply(a, b):
    return _wrapping("multiply", a, b)


def wrapping_negative(v):
    """0 - v, wrapping (the negative of a signed minimum is itself; of an unsigned v, 2**bits - v)."""
    from tvm import tirx

    return _wrapping("subtract", tirx.const(0, dtype_of(v)), v)


def wrapping_abs(v):
    """|v| for an integer, as np.abs: a signed minimum stays itself (tirx.abs negates it with `sub
    nsw`: poison, and LLVM then knows the result is not negative)."""
    from tvm import tirx

    dtype = dtype_of(v)
    if dtype.startswith("uint"):
        return v
    return tirx.Select(v < tirx.const(0, dtype), wrapping_negative(v), v)


def _wrapping(kind, a, b):
    dtype = dtype_of(a)
    known_a, known_b = known_constant(a), known_constant(b)
    if known_a is not None and known_b is not None:
        with np.errstate(over="ignore"):
            return const(_NUMPY[kind](known_a, known_b).astype(dtype).item(), dtype)
    bits = bits_of(dtype)
    if bits < 32:
        return _hidden(_native(kind, a, b))
    if bits == 32:
        return _in_64_bits(kind, a, b)
    if kind == "multiply":
        return _multiply_in_halves(a, b)
    if kind == "subtract" and known_b is not None:  # a + (-b): a constant's complement is folded here
        with np.errstate(over="ignore"):
            return _add_in_halves(a, const((-known_b).astype(dtype).item(), dtype), carry=0)
    if kind == "subtract":  # a - b = a + ~b + 1
        return _add_in_halves(a, b ^ _all_ones(dtype), carry=1)
    return _add_in_halves(a, b, carry=0)


def _native(kind, a, b):
    """a `kind` b in their own (8- or 16-bit) type: LLVM wraps those (TVM adds no flags below 32 bits)."""
    if kind == "add":
        return a + b
    if kind == "multiply":
        return a * b
    if dtype_of(a).startswith("uint"):  # a + ~b + 1: TVM's simplifier aborts on a literal 0u - x
        return a + (b ^ _all_ones(dtype_of(b))) + _one(dtype_of(a))
    return a - b


def _in_64_bits(kind, a, b):
    """a `kind` b for 32-bit a, b: their bits zero-extended to uint64, where no result overflows
    (a difference as a + (2**32 - 1 - b) + 1), and the low 32 bits kept.

    No cast to or from int32/int64 (an index type to TVM) appears: the canonical simplifier
    visits the operand of such a cast twice, so a chain of n inlined operations took 2**n steps
    to simplify (a sum of 36 terms never finished building). Signed values change type by a
    reinterpret (`_reinterpret`); a cast of a negative literal to an unsigned type aborts TVM."""
    from tvm import tirx

    dtype = dtype_of(a)
    mask = tirx.const(0xFFFFFFFF, "uint64")

    def widened(value):
        if dtype.startswith("int"):
            value = _reinterpret("uint32", value)
        return value.astype("uint64")

    wide_a, wide_b = widened(a), widened(b)
    if kind == "add":
        wide = wide_a + wide_b
    elif kind == "subtract":
        wide = wide_a + (wide_b ^ mask) + tirx.const(1, "uint64")
    else:
        wide = wide_a * wide_b
    low = (wide & mask).astype("uint32")
    return low if dtype == "uint32" else _reinterpret("int32", low)


# A bit pattern no value is expected to equal: an xor with it hides a value from TVM's simplifier
# (which has no rewrite rules for xor and bounds it as anything), and LLVM cancels the pair.
_SCRAMBLE = 0x5A3C96E1D2B4F087


def _scramble(dtype):
    from tvm import tirx

    bits = bits_of(dtype)
    pattern = _SCRAMBLE & ((1 << bits) - 1)
    if dtype.startswith("int") and pattern >= 1 << (bits - 1):
        pattern -= 1 << bits
    return tirx.const(pattern, dtype)


def _hidden(value):
    """`value`, opaque to TVM's simplifier: `a + b > a` can no longer become `b > 0`."""
    scramble = _scramble(dtype_of(value))
    return (value ^ scramble) ^ scramble


def _reinterpret(dtype, value):
    """The bits of `value` (an integer of dtype's width) as `dtype`; a known constant converted here.

    Otherwise scrambled on the way: TVM's LLVM codegen takes a reinterpreted literal 0 for a null
    pointer (and aborts), and `value` may still fold to a literal once kernels are inlined (and
    TVM's C target then takes the address of a signed literal: the standalone bundle's kernels
    do not compile; a known constant never gets there)."""
    from tvm import tirx

    known = known_constant(value)
    if known is not None:
        return tirx.const(known.reshape(1).view(dtype)[0].item(), dtype)
    return tirx.reinterpret(dtype, value ^ _scramble(dtype_of(value))) ^ _scramble(dtype)


def _one(dtype):
    from tvm import tirx

    return tirx.const(1, dtype)


def _all_ones(dtype):
    from tvm import tirx

    return tirx.const(-1 if dtype.startswith("int") else (1 << bits_of(dtype)) - 1, dtype)


def _add_in_halves(a, b, carry):
    """a + b + carry for 64-bit a, b: the low and high 32-bit halves added separately (no partial
    result reaches 2**34), the high one taking the low one's carry, then shifted back together."""
    from tvm import tirx

    dtype = dtype_of(a)
    mask, shift = tirx.const(0xFFFFFFFF, dtype), tirx.const(32, dtype)
    low = (a & mask) + (b & mask)
    if carry:
        low = low + tirx.const(carry, dtype)
    high = ((a >> shift) & mask) + ((b >> shift) & mask) + (low >> shift)
    # (a shift left does not overflow in TIR: TVM emits LLVM's shl without flags)
    return ((high & mask) << shift) | (low & mask)


def _multiply_in_halves(a, b):
    """a * b modulo 2**64 from the 32-bit halves: aL*bL + ((aL*bH + aH*bL) mod 2**32) * 2**32, each
    product of halves taken in uint64 (below 2**64), the cross terms cut to 32 bits before adding."""
    from tvm import tirx

    dtype = dtype_of(a)
    work = "uint64"
    mask, shift = tirx.const(0xFFFFFFFF, work), tirx.const(32, work)

    def halves(v):
        own_mask, own_shift = tirx.const(0xFFFFFFFF, dtype), tirx.const(32, dtype)
        return (v & own_mask).astype(work), ((v >> own_shift) & own_mask).astype(work)

    (a_low, a_high), (b_low, b_high) = halves(a), halves(b)
    low_product = a_low * b_low
    cross = ((a_low * b_high) & mask) + ((a_high * b_low) & mask)
    # (to int64 by a reinterpret: TVM bounds a cast of a uint64 to int64 as [0, 2**63), the uint64
    # range clipped, and folded `product < 0` to false)
    product = ((((low_product >> shift) + cross) & mask) << shift) | (low_product & mask)
    return product if dtype == "uint64" else _reinterpret(dtype, product)


def wrapping_sum(x, axes, keepdims: bool, name: str, value_fn=None):
    """np.sum of an integer tensor over `axes` (te_support.reduce_compute's arguments), wrapping.

    64 bits: the low and the high 32-bit halves of the elements are summed apart (one loop, two
    plain sums that cannot overflow below 2**31 elements, which LLVM vectorizes) and joined; a
    wrapping add of halves per element (`wrapping_sum_reducer`) would run 14x slower."""
    from tvm import te, tirx

    def element(*index):
        value = x(*index)
        return value_fn(value) if value_fn is not None else value

    dtype = dtype_of(element(*([0] * len(x.shape))))
    count = 1
    for axis in axes:
        count *= int(x.shape[axis]) if is_static(x.shape[axis]) else 1 << 31
    if bits_of(dtype) < 64 or not 0 < count < 1 << 31:
        return reduce_compute(x, axes, keepdims, wrapping_sum_reducer(), name, value_fn)
    mask, shift = tirx.const(0xFFFFFFFF, dtype), tirx.const(32, dtype)
    rvars = {a: te.reduce_axis((0, x.shape[a]), name=f"k{a}") for a in axes}
    kept = [i for i in range(len(x.shape)) if i not in axes]
    shape = [1 if i in axes else x.shape[i] for i in range(len(x.shape))] if keepdims else [x.shape[i] for i in kept]
    pair_sum = te.comm_reducer(
        lambda p, q: (p[0] + q[0], p[1] + q[1]),
        lambda low_dtype, high_dtype: (tirx.const(0, low_dtype), tirx.const(0, high_dtype)),
        name="halves_sum",
    )

    def body(*indices):
        kept_indices = [indices[i] for i in kept] if keepdims else list(indices)
        by_axis = dict(zip(kept, kept_indices))
        value = element(*[rvars[i] if i in rvars else by_axis[i] for i in range(len(x.shape))])
        return pair_sum((value & mask, (value >> shift) & mask), axis=[rvars[a] for a in axes])

    low, high = te.compute(shape, body, name=f"{name}_halves")

    def join(*indices):
        low_value, high_value = low(*indices), high(*indices)
        return (((high_value + (low_value >> shift)) & mask) << shift) | (low_value & mask)

    return te.compute(shape, join, name=name)


def wrapping_sum_reducer():
    """te.sum for integers, wrapping (a te.sum of int32 or int64 adds `nsw`)."""
    from tvm import te, tirx

    return te.comm_reducer(lambda x, y: wrapping_add(x, y), lambda dtype: tirx.const(0, dtype), name="wrapping_sum")


def wrapping_prod_reducer():
    """The product reducer for integers, wrapping."""
    from tvm import te, tirx

    return te.comm_reducer(
        lambda x, y: wrapping_multiply(x, y), lambda dtype: tirx.const(1, dtype), name="wrapping_prod"
    )
