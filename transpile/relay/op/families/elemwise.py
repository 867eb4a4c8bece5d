"""Elementwise operators: unary math, binary broadcast arithmetic/comparison/logic, where, cast, clip.

Edge values (the numpy implementations define them; every TE lowering computes the same, checked by
tests/test_edge_semantics.py):
- floats follow IEEE 754 as numpy does: 0 / 0 and x - x for x = inf are nan, x / 0 is ±inf, -0 keeps
  its sign through negative, tanh, multiply; maximum/minimum/clip/nn.relu propagate nan
  (np.maximum: nan in, nan out; relu(-0) and clip(-0, 0, 1) are +0);
- float mod is C fmod, float floor_mod is np.remainder (exact; a zero result has the divisor's
  sign), float floor_divide is floor(a / b);
- integer add, subtract, multiply, negative and abs wrap modulo 2**bits in every context (abs and
  negative of INT_MIN are INT_MIN; the TE lowerings use te_wrapping, see there why);
- integer division and remainder by 0 give 0, and INT_MIN / -1 wraps to INT_MIN (no trap);
- float -> integer cast: support.float_to_integer (truncation through a signed register, low
  bits kept; nan, inf and out-of-range values give the register's minimum), never numpy's
  position-dependent astype of such values.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ....errors import UnsupportedFeatureError
from ...ty import TensorType
from ..common import broadcast_shapes, fmt_type, same_dtype
from ..registry import AttrField, OpDef, OpPattern, RelationError, REQUIRED, register
from .support import as_out, is_float, is_integral, quiet, tensor_args, to_dtype, to_float, to_int
from .te_support import bits_of, broadcast_compute, dtype_of, logical_not, map_compute
from .te_support import cast as te_cast
from .te_support import const as te_const
from .te_wrapping import wrapping_abs, wrapping_add, wrapping_multiply, wrapping_negative, wrapping_subtract

__all__ = ["UNARY_OPS", "BINARY_OPS", "COMPARISON_OPS"]


# ---------------------------------------------------------------- type relations


def identity_rel(op_name):
    def rel(arg_types, attrs):
        (data,) = tensor_args(arg_types, 1, op_name, ["data"])
        return TensorType(data.shape, data.dtype)

    return rel


def bitwise_not_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "bitwise_not", ["data"])
    if not (is_integral(data.dtype) or data.dtype == "bool"):
        raise RelationError(f"bitwise_not: expects an integer or bool tensor, got {fmt_type(data)}")
    return TensorType(data.shape, data.dtype)


def identity_comp_rel(op_name):
    def rel(arg_types, attrs):
        (data,) = tensor_args(arg_types, 1, op_name, ["data"])
        return TensorType(data.shape, "bool")

    return rel


def broadcast_rel(op_name, out_dtype=None, integral_only=False, allow_bool=True):
    """TVM's BroadcastRel / BroadcastCompRel: equal dtypes, numpy broadcasting of shapes."""

    def rel(arg_types, attrs):
        lhs, rhs = tensor_args(arg_types, 2, op_name, ["lhs", "rhs"])
        dtype = same_dtype([lhs, rhs], op_name)
        if dtype == "bool" and op_name in _NO_BOOL_OPERANDS:
            raise RelationError(f"{op_name} does not take bool operands; cast them to an integer type")
        if integral_only and dtype == "bool" and not allow_bool:
            raise RelationError(f"{op_name}: expects integer tensors, got {fmt_type(lhs)} and {fmt_type(rhs)}")
        # Float operands type-check, as in TVM's BroadcastRel (passes such as FuseOps take such
        # programs); no kernel exists for them, so evaluating or lowering one fails (_integer_kernel).
        shape = broadcast_shapes(lhs.shape, rhs.shape, op_name)
        return TensorType(shape, out_dtype or dtype)

    return rel


# Division and remainder have no bool result: numpy promotes bools (np.floor_divide, np.remainder,
# np.fmod give int8, np.divide float64), TVM accepted them and then failed lowering (tirx.floordiv
# of bool), and a bool-valued True // False (a division by zero) would be a third convention.
_NO_BOOL_OPERANDS = frozenset({"divide", "floor_divide", "trunc_divide", "mod", "trunc_mod", "floor_mod"})


def where_rel(arg_types, attrs):
    cond, x, y = tensor_args(arg_types, 3, "where", ["condition", "x", "y"])
    if x.dtype != y.dtype:
        raise RelationError(f"where: x and y must have the same dtype, got {fmt_type(x)} and {fmt_type(y)}")
    shape = broadcast_shapes(x.shape, y.shape, "where")
    shape = broadcast_shapes(cond.shape, shape, "where")
    return TensorType(shape, x.dtype)


def cast_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "cast", ["data"])
    return TensorType(data.shape, attrs.dtype)


def cast_like_rel(arg_types, attrs):
    data, like = tensor_args(arg_types, 2, "cast_like", ["data", "dtype_like"])
    return TensorType(data.shape, like.dtype)


def reinterpret_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "reinterpret", ["data"])
    if _bits(data.dtype) != _bits(attrs.dtype):
        raise RelationError(f"reinterpret: cannot reinterpret {fmt_type(data)} as {attrs.dtype} (bit widths differ)")
    return TensorType(data.shape, attrs.dtype)


def _bits(dtype: str) -> int:
    if dtype == "bool":
        return 8
    digits = "".join(ch for ch in dtype if ch.isdigit())
    return int(digits) if digits else 0


# ---------------------------------------------------------------- numpy kernels


def _erf(x):
    # numpy has no erf; math.erf is exact to double precision.
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _round(x):
    # tir.round lowers to llvm.nearbyint: ties to even, like np.round.
    return np.round(x)


def _in_float(fn):
    """Apply a float function; integer inputs are computed in float64 and cast back by as_out."""

    def kernel(x):
        if not is_float(x.dtype.name):
            x = x.astype(np.float64)
        return fn(x)

    return kernel


UNARY_OPS = {
    "negative": np.negative,
    "abs": np.abs,
    "exp": _in_float(np.exp),
    "fast_exp": _in_float(np.exp),
    "log": _in_float(np.log),
    "log2": _in_float(np.log2),
    "log10": _in_float(np.log10),
    "sqrt": _in_float(np.sqrt),
    "rsqrt": _in_float(lambda x: 1.0 / np.sqrt(x)),
    "sigmoid": _in_float(_sigmoid),
    "tanh": _in_float(np.tanh),
    "fast_tanh": _in_float(np.tanh),
    "erf": _in_float(_erf),
    "fast_erf": _in_float(_erf),
    "sin": _in_float(np.sin),
    "cos": _in_float(np.cos),
    "tan": _in_float(np.tan),
    "sinh": _in_float(np.sinh),
    "cosh": _in_float(np.cosh),
    "asin": _in_float(np.arcsin),
    "acos": _in_float(np.arccos),
    "atan": _in_float(np.arctan),
    "asinh": _in_float(np.arcsinh),
    "acosh": _in_float(np.arccosh),
    "atanh": _in_float(np.arctanh),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": _round,
    "trunc": np.trunc,
    "sign": np.sign,
    "logical_not": np.logical_not,
    "bitwise_not": np.invert,
    "copy": lambda x: np.array(x, copy=True),
    "zeros_like": np.zeros_like,
    "ones_like": np.ones_like,
}

_INTEGER_IDENTITY = {"floor", "ceil", "round", "trunc"}

_BOOL_RESULT = {
    "isnan": np.isnan,
    "isfinite": np.isfinite,
    "isinf": np.isinf,
}


def _unary_impl(name, fn):
    def impl(args, attrs, out_type):
        x = np.asarray(args[0])
        if name in _INTEGER_IDENTITY and not is_float(x.dtype.name):
            return as_out(x, out_type)
        if x.dtype == np.bool_ and name in ("negative", "abs", "sign"):
            x = x.astype(np.int8)
        with quiet():
            return as_out(fn(x), out_type)

    return impl


def _bool_impl(fn):
    def impl(args, attrs, out_type):
        x = np.asarray(args[0])
        if not is_float(x.dtype.name):
            # Integers are never nan or inf (isfinite is always true).
            x = x.astype(np.float64)
        return as_out(fn(x), out_type)

    return impl


def _trunc_div(a, b):
    if is_integral(a.dtype.name):
        # C semantics: the quotient rounds toward zero (numpy's // floors).
        q = np.floor_divide(a, b)
        r = np.remainder(a, b)
        adjust = (r != 0) & ((a < 0) != (b < 0))
        return q + adjust.astype(q.dtype)
    return np.divide(a, b)


def _trunc_mod(a, b):
    return np.fmod(a, b)


def _floor_div(a, b):
    if is_integral(a.dtype.name):
        return np.floor_divide(a, b)
    return np.floor(np.divide(a, b))


def _floor_mod(a, b):
    # Floats: np.remainder, exact (fmod moved into b's sign), where a - floor(a / b) * b rounds
    # differently with and without a fused multiply-add once a / b is large.
    return np.remainder(a, b)


def _power(a, b):
    if is_integral(a.dtype.name):
        # numpy rejects negative integer exponents; compute in double precision like C pow.
        return np.power(a.astype(np.float64), b.astype(np.float64))
    return np.power(a, b)


def _trunc_divide(a, b):
    if is_integral(a.dtype.name):
        return _trunc_div(a, b)
    return np.trunc(np.divide(a, b))


BINARY_OPS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": _trunc_div,
    "floor_divide": _floor_div,
    "trunc_divide": _trunc_divide,
    "mod": _trunc_mod,
    "trunc_mod": _trunc_mod,
    "floor_mod": _floor_mod,
    "power": _power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "right_shift": np.right_shift,
    "left_shift": np.left_shift,
}

COMPARISON_OPS = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}


def _binary_impl(fn):
    def impl(args, attrs, out_type):
        a, b = (np.asarray(x) for x in args)
        with quiet():
            return as_out(fn(a, b), out_type)

    return impl


def _float_bit_operation(name: str, dtype: str):
    return UnsupportedFeatureError(
        f"{name} of {dtype} tensors",
        "any",
        detail="bit operations have kernels for integer (and bool) tensors only; "
        "the program type-checks, as in TVM, but cannot be evaluated or compiled",
    )


def _integer_kernel(name: str, impl):
    """impl, refusing float operands: a bit operation's relation admits them, its kernels do not."""

    def checked(args, attrs, out_type):
        dtype = out_type.dtype if isinstance(out_type, TensorType) else ""
        if is_float(dtype):
            raise _float_bit_operation(name, dtype)
        return impl(args, attrs, out_type)

    return checked


def _where_impl(args, attrs, out_type):
    cond, x, y = (np.asarray(a) for a in args)
    try:
        np.broadcast_shapes(cond.shape, x.shape, y.shape)
    except ValueError:  # `?` dims: the relation's broadcast promise, checked at run time (TVM's words)
        raise ValueError(f"where: Invalid broadcast shapes {cond.shape}, {x.shape} and {y.shape}") from None
    return as_out(np.where(cond.astype(bool), x, y), out_type)


def _cast_impl(args, attrs, out_type):
    return as_out(np.asarray(args[0]), out_type)


def _reinterpret_impl(args, attrs, out_type):
    x = np.require(np.asarray(args[0]), requirements="C")  # (ascontiguousarray makes a 0-d array 1-d)
    return x.view(np.dtype(out_type.dtype)).reshape(x.shape)


def _clip_impl(args, attrs, out_type):
    x = np.asarray(args[0])
    # TVM casts a_min/a_max to the tensor's dtype before comparing.
    with quiet():
        lo = np.asarray(attrs.a_min).astype(x.dtype)
        hi = np.asarray(attrs.a_max).astype(x.dtype)
    return as_out(np.minimum(np.maximum(x, lo), hi), out_type)


def _fixed_point_multiply_impl(args, attrs, out_type):
    # tir.q_multiply_shift with q=31, as lowered by TVM: widen, shift left, multiply, round, shift right.
    x = np.asarray(args[0]).astype(np.int64)
    shift = int(attrs.shift)
    left, right = (shift, 0) if shift > 0 else (0, -shift)
    x = x << left
    x = x * np.int64(attrs.multiplier)
    total_right = right + 31
    x = (x + (np.int64(1) << (total_right - 1))) >> total_right
    return as_out(x, out_type)


# ---------------------------------------------------------------- TE lowerings (te_impl)
# Each matches the numpy kernel above exactly; tvm is imported inside the functions.


def _te_float_math(fn_name):
    """A float function of tirx; integers go through float64, float16 through float32 (like numpy)."""

    def math_fn(v):
        from tvm import tirx

        dtype = dtype_of(v)
        work = v if dtype in ("float32", "float64") else v.astype("float64" if not is_float(dtype) else "float32")
        if fn_name == "rsqrt":
            out = tirx.const(1.0, dtype_of(work)) / tirx.sqrt(work)
        elif fn_name == "sigmoid":
            out = tirx.const(1.0, dtype_of(work)) / (tirx.const(1.0, dtype_of(work)) + tirx.exp(-work))
        elif fn_name == "tanh":
            out = _accurate_tanh(work)
        elif fn_name in ("sinh", "cosh"):
            out = _hyperbolic(work, fn_name)
        else:
            out = getattr(tirx, fn_name)(work)
        return out

    return math_fn


def _accurate_tanh(x):
    """tanh to a few ulp everywhere: TVM's x86 lowering of tirx.tanh loses the relative precision near 0 (1e-2 at 1e-6).

    Near 0 an odd Taylor polynomial (below 0.125 for float32, 0.02 for float64: the next term stays
    under the type's rounding, and past it the cancellation in 1 - e costs a few ulp; x times an
    even polynomial, so tanh(-0) is -0); elsewhere (1 - e) / (1 + e) with e = exp(-2|x|), which
    never overflows, and x's sign.
    """
    from tvm import tirx

    dtype = dtype_of(x)

    def c(value):
        return tirx.const(value, dtype)

    magnitude = tirx.abs(x)
    e = tirx.exp(c(-2.0) * magnitude)
    far = (c(1.0) - e) / (c(1.0) + e)
    x2 = x * x
    near = x * (c(1.0) + x2 * (c(-1 / 3) + x2 * (c(2 / 15) + x2 * (c(-17 / 315) + x2 * c(62 / 2835)))))
    signed_far = tirx.Select(x < c(0.0), far * c(-1.0), far)
    # a nan compares false: `signed_far` carries it
    return tirx.Select(magnitude < c(0.125 if dtype == "float32" else 0.02), near, signed_far)


def _hyperbolic(x, name):
    """sinh / cosh through exp: TVM's LLVM codegen has no vector sinh/cosh ("unknown intrinsic" once vectorized).

    sinh near 0 is an odd Taylor polynomial (below 0.5 for float32, 0.05 for float64), where the
    difference of exponentials would cancel; (e^x -/+ e^-x) / 2 elsewhere, which overflows to inf as numpy does.
    """
    from tvm import tirx

    dtype = dtype_of(x)

    def c(value):
        return tirx.const(value, dtype)

    half = c(0.5)
    if name == "cosh":
        return half * (tirx.exp(x) + tirx.exp(-x))
    far = half * (tirx.exp(x) - tirx.exp(-x))
    x2 = x * x
    terms = [1 / 6, 1 / 120, 1 / 5040, 1 / 362880, 1 / 39916800]
    poly = c(terms[-1])
    for coefficient in reversed(terms[:-1]):
        poly = c(coefficient) + x2 * poly
    near = x + x * x2 * poly
    return tirx.Select(tirx.abs(x) < c(0.5 if dtype == "float32" else 0.05), near, far)


_TE_FLOAT_MATH = {
    "exp": "exp",
    # The fast_* variants are computed exactly: the numpy reference is exact, TVM's were approximations.
    "fast_exp": "exp",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "fast_tanh": "tanh",
    "erf": "erf",
    "fast_erf": "erf",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "sinh": "sinh",
    "cosh": "cosh",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "asinh": "asinh",
    "acosh": "acosh",
    "atanh": "atanh",
}


def nan_max(a, b):
    """np.maximum: a nan operand gives nan (tirx.max would return the other one)."""
    return _nan_pick(a, b, "max")


def nan_min(a, b):
    return _nan_pick(a, b, "min")


def _nan_pick(a, b, kind):
    from tvm import tirx

    picked = tirx.max(a, b) if kind == "max" else tirx.min(a, b)
    if not is_float(dtype_of(a)):
        return picked
    return tirx.Select(tirx.isnan(a), a, tirx.Select(tirx.isnan(b), b, picked))


def _te_unary_fn(name):
    """The scalar function (PrimExpr -> PrimExpr, before the cast to the output dtype)."""
    from tvm import tirx

    if name in _TE_FLOAT_MATH:
        return _te_float_math(_TE_FLOAT_MATH[name])
    if name in ("floor", "ceil", "round", "trunc"):
        # tirx.round is llvm.nearbyint: ties to even, like np.round. Integers are unchanged.
        return lambda v: getattr(tirx, name)(v) if is_float(dtype_of(v)) else v
    if name == "negative":
        return _te_negative
    if name == "abs":
        return lambda v: v if dtype_of(v) == "bool" else (tirx.abs(v) if is_float(dtype_of(v)) else wrapping_abs(v))
    if name == "sign":

        def sign(v):
            if dtype_of(v) == "bool":
                return v
            one, zero = tirx.const(1, dtype_of(v)), tirx.const(0, dtype_of(v))
            if dtype_of(v).startswith("uint"):
                return tirx.Select(v > zero, one, zero)
            # A float nan falls through both tests and stays nan, like np.sign; v + 0 turns -0 into +0.
            otherwise = v + te_const(0, dtype_of(v)) if is_float(dtype_of(v)) else zero
            return tirx.Select(v > zero, one, tirx.Select(v < zero, tirx.const(-1, dtype_of(v)), otherwise))

        return sign
    if name == "logical_not":
        return lambda v: logical_not(te_cast(v, "bool"))
    if name == "bitwise_not":
        return lambda v: logical_not(v) if dtype_of(v) == "bool" else ~v
    if name == "copy":
        return lambda v: v
    if name in ("zeros_like", "ones_like"):
        value = 0 if name == "zeros_like" else 1
        return lambda v: te_const(value, dtype_of(v))
    if name in ("isnan", "isinf", "isfinite"):
        # Integers are never nan or inf.
        return lambda v: getattr(tirx, name)(v) if is_float(dtype_of(v)) else tirx.const(name == "isfinite", "bool")
    raise KeyError(name)


def _te_negative(v):
    from tvm import tirx

    dtype = dtype_of(v)
    if dtype == "bool":
        return v
    if is_float(dtype):
        return v * tirx.const(-1.0, dtype)  # IEEE negation: -(+0) is -0, which 0 - x is not
    return wrapping_negative(v)


def _te_float_subtract(a, b):
    """a - b as a + b * -1 (LLVM emits one fsub): TVM's simplifier cancels float differences as if
    they were integers (x - x -> 0, (x + y) - y -> x, select(c, y, z) - z -> select(c, y - z, 0)),
    which is wrong for inf and nan."""
    from tvm import tirx

    return a + b * tirx.const(-1.0, dtype_of(a))


def _te_unary(name):
    def te_impl(inputs, attrs, out_type):
        fn = _te_unary_fn(name)
        return map_compute(inputs[0], lambda v: te_cast(fn(v), out_type.dtype), f"T_{name}")

    return te_impl


def _nontrapping_divisor(b):
    """b, except 1 where dividing by b could trap: b = 0, and b = -1 for signed types (MIN / -1).

    The test is opaque to TVM's simplifier: the bits of b converted to a float, reinterpreted
    (exact: only 0 converts to +0.0, whose bits are 0, and only -1 to -1.0). Spelled `b == 0`, it
    was folded away: the simplifier rewrites the false branch of the callers' `select(b == 0, 0,
    ...)`, and the branches of any select around the operator (`where(b != 0, a / b, 0)`),
    assuming the select's condition, and a value bound such as b in [0, 255] turns a bit trick on
    b back into `b == 0`. A vectorized select evaluates both of its sides, so the unguarded
    division ran for the lanes where b was 0: SIGFPE (fuzz seed 6112). A float, not b itself, is
    reinterpreted: TVM's LLVM codegen aborts on a reinterpreted integer literal 0, which b becomes
    once a zero fill is inlined.
    """
    from tvm import tirx

    dtype = dtype_of(b)
    float_dtype = "float64" if bits_of(dtype) > 32 else "float32"
    bits_dtype = "int64" if float_dtype == "float64" else "int32"
    pattern = tirx.reinterpret(bits_dtype, b.astype(float_dtype))
    special = pattern == tirx.const(0, bits_dtype)
    if dtype.startswith("int"):
        minus_one = np.array(-1.0, float_dtype).view(bits_dtype).item()
        special = tirx.Or(special, pattern == tirx.const(minus_one, bits_dtype))
    return tirx.Select(special, tirx.const(1, dtype), b)


def _opaque_operand(b):
    """b, in a form TVM's simplifier cannot fold to a literal 0; LLVM folds it back to b for free.

    Divisors, and both operands of a float multiply or divide: TVM folds 0 * x and 0 / x to 0 once
    it has derived the 0 itself (less(cast(bool), 0) is False), where IEEE gives nan for x = inf or 0
    (fuzz seed 111069).

    TVM aborts the build on a division or remainder by a literal 0 ("Divide by zero", from its
    constant folder), and its simplifier makes such literals of values the registry defines at run
    time: x && False, x != x, where(False, x, 0), casts of those (x * 0 and x - x too, unless
    they wrap in a wider type), and, in a branch it has decided, a guarded divisor
    `select(special, 1, b)` whose test it took as an assumption: in mod(x, mod(3, 0)) the inner
    guard's test is the outer one's, so the inner divisor folds to 0. The operands' own constants
    (te_support.float_zero) cannot cover what TVM derives itself. A float goes through its bits
    (reinterpreted there and back; a reinterpreted float literal 0 is fine for TVM's LLVM codegen,
    an integer one is not: it takes it for a null pointer), an integer is xor-ed with a 0 TVM
    cannot see (all ones reinterpreted, xor all ones).
    """
    from tvm import tirx

    dtype = dtype_of(b)
    bits = bits_of(dtype)
    if is_float(dtype):
        return tirx.reinterpret(dtype, tirx.reinterpret(f"int{bits}", b))
    if dtype.startswith("uint"):
        all_ones, ones_literal = tirx.const(-1, f"int{bits}"), tirx.const((1 << bits) - 1, dtype)
    else:
        all_ones, ones_literal = tirx.const((1 << bits) - 1, f"uint{bits}"), tirx.const(-1, dtype)
    return b ^ (tirx.reinterpret(dtype, all_ones) ^ ones_literal)


def _on_opaque_operands(op):
    """op(a, b) with both operands opaque to TVM's zero folding (see _opaque_operand)."""
    return lambda a, b: op(_opaque_operand(a), _opaque_operand(b))


def _te_safe_int_div(a, b, div):
    """Integer division that never traps: x / 0 gives 0 and MIN / -1 wraps to MIN, as in numpy."""
    from tvm import tirx

    zero = tirx.const(0, dtype_of(a))
    quotient = div(a, _opaque_operand(_nontrapping_divisor(b)))
    if not dtype_of(a).startswith("int"):
        return tirx.Select(b == zero, zero, quotient)
    minus_one = tirx.const(-1, dtype_of(a))
    return tirx.Select(b == zero, zero, tirx.Select(b == minus_one, wrapping_negative(a), quotient))


def _te_safe_int_mod(a, b, mod):
    """Integer remainder that never traps: x % 0 gives 0, and x % -1 is 0 (MIN % -1 would trap)."""
    from tvm import tirx

    zero = tirx.const(0, dtype_of(a))
    return tirx.Select(b == zero, zero, mod(a, _opaque_operand(_nontrapping_divisor(b))))


def _te_shift(name):
    """numpy's shifts: an amount outside [0, bits) gives 0 (or -1 for a negative value shifted right)."""

    def shift(a, b):
        from tvm import tirx

        dtype = dtype_of(a)
        bits = bits_of(dtype)
        zero = tirx.const(0, dtype)
        # Bit tests, not comparisons. In range means no bit above the low log2(bits) is set (a
        # negative amount has its sign bit set). TVM's canonical simplifier aborts on `0 < 8` in a
        # uint type once the 0 is a folded fill ("Minuend's value is 0U ... negative uint").
        high_bits = ~(bits - 1) if dtype.startswith("int") else (1 << bits) - bits
        in_range = (b & tirx.const(high_bits, dtype)) == zero
        # The shift itself gets its amount masked into range (the same amount where in_range holds):
        # TVM's constant folder aborts the build on a literal shift by a negative amount or by
        # >= bits, even in the untaken branch. (Not a select on in_range: within the outer select's
        # true branch the simplifier assumes in_range, turning that select back into b.)
        amount = b & tirx.const(bits - 1, dtype)
        if name == "left_shift":
            return tirx.Select(in_range, a << amount, zero)
        overflow = tirx.Select(a < zero, tirx.const(-1, dtype), zero) if dtype.startswith("int") else zero
        return tirx.Select(in_range, a >> amount, overflow)

    return shift


def _te_binary_fn(name):
    from tvm import tirx

    def truthy(v):
        return te_cast(v, "bool")

    def not_equal(a, b):
        if is_float(dtype_of(a)):
            # LLVM's `!=` is ordered: nan != x would be False, numpy says True.
            return tirx.Or(a != b, tirx.Or(tirx.isnan(a), tirx.isnan(b)))
        return a != b

    def xor(p, q):
        return tirx.Or(tirx.And(p, logical_not(q)), tirx.And(logical_not(p), q))

    def equal(a, b):
        if is_float(dtype_of(a)):
            # TVM simplifies x == x to True for floats too; nan == nan is False.
            return tirx.And(a == b, tirx.Not(tirx.isnan(a)))
        return a == b

    def floor_of_div(a, b):
        return tirx.floor(_on_opaque_operands(operator.truediv)(a, b))

    table = {
        # Integers wrap (te_wrapping): a plain TIR a + b is taken as not overflowing.
        "add": _bool_float_int(tirx.Or, lambda a, b: a + b, wrapping_add),
        "subtract": _bool_float_int(lambda a, b: a - b, _te_float_subtract, wrapping_subtract),
        "multiply": _bool_float_int(tirx.And, _on_opaque_operands(operator.mul), wrapping_multiply),
        "maximum": lambda a, b: nan_max(a, b),
        "minimum": lambda a, b: nan_min(a, b),
        "logical_and": lambda a, b: tirx.And(truthy(a), truthy(b)),
        "logical_or": lambda a, b: tirx.Or(truthy(a), truthy(b)),
        "logical_xor": lambda a, b: xor(truthy(a), truthy(b)),
        "bitwise_and": lambda a, b: a & b,
        "bitwise_or": lambda a, b: a | b,
        "bitwise_xor": lambda a, b: a ^ b,
        "left_shift": _te_shift("left_shift"),
        "right_shift": _te_shift("right_shift"),
        "equal": equal,
        "not_equal": not_equal,
        "less": lambda a, b: a < b,
        "less_equal": lambda a, b: a <= b,
        "greater": lambda a, b: a > b,
        "greater_equal": lambda a, b: a >= b,
    }
    if name in table:
        return table[name]
    if name in ("divide", "trunc_divide"):

        def float_fn(a, b):
            quotient = _on_opaque_operands(operator.truediv)(a, b)
            return quotient if name == "divide" else tirx.trunc(quotient)

        return _int_or_float(lambda a, b: _te_safe_int_div(a, b, tirx.truncdiv), float_fn)
    if name == "floor_divide":
        return _int_or_float(lambda a, b: _te_safe_int_div(a, b, tirx.floordiv), floor_of_div)
    if name in ("mod", "trunc_mod"):
        return _int_or_float(lambda a, b: _te_safe_int_mod(a, b, tirx.truncmod), _te_fmod)
    if name == "floor_mod":
        return _int_or_float(lambda a, b: _te_safe_int_mod(a, b, tirx.floormod), _te_float_floor_mod)
    if name == "power":

        def power(a, b):
            if is_float(dtype_of(a)) and dtype_of(a) != "float16":
                return tirx.pow(a, b)
            work = "float32" if dtype_of(a) == "float16" else "float64"
            return tirx.pow(a.astype(work), b.astype(work))

        return power
    raise KeyError(name)


def _te_fmod(a, b):
    """C fmod (exact, like np.fmod): LLVM has no lowering of tirx.fmod, so call libm."""
    from tvm import tirx

    dtype = dtype_of(a)
    if dtype == "float64":
        return tirx.call_pure_extern("float64", "fmod", a, b)
    # fmod is exact, so float16 through float32 rounds back to the same value.
    out = tirx.call_pure_extern("float32", "fmodf", a.astype("float32"), b.astype("float32"))
    return out if dtype == "float32" else out.astype(dtype)


def _te_float_floor_mod(a, b):
    """np.remainder exactly: fmod, moved into b's sign; a zero result takes b's sign."""
    from tvm import tirx

    zero = te_const(0, dtype_of(a))
    remainder = _te_fmod(a, b)
    # (a nan remainder is not moved: its != is ordered)
    moved = tirx.And(remainder != zero, tirx.Select(remainder < zero, b > zero, b < zero))
    signed_zero = tirx.Select(b < zero, te_const(-0.0, dtype_of(a)), zero)
    return tirx.Select(moved, remainder + b, tirx.Select(remainder == zero, signed_zero, remainder))


def _int_or_float(int_fn, float_fn):
    return lambda a, b: float_fn(a, b) if is_float(dtype_of(a)) else int_fn(a, b)


def _bool_float_int(bool_fn, float_fn, int_fn):
    def fn(a, b):
        dtype = dtype_of(a)
        if dtype == "bool":
            return bool_fn(a, b)
        return float_fn(a, b) if is_float(dtype) else int_fn(a, b)

    return fn


# LLVM has no ordering, min/max or equality of i1: bools are compared as int8.
_TE_BOOL_AS_INT8 = {"maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def _te_binary(name):
    def te_impl(inputs, attrs, out_type):
        fn = _te_binary_fn(name)

        def body(a, b):
            if name in _TE_BOOL_AS_INT8 and dtype_of(a) == "bool":
                a, b = a.astype("int8"), b.astype("int8")
            return te_cast(fn(a, b), out_type.dtype)

        return broadcast_compute(list(inputs), out_type, body, f"T_{name}")

    return te_impl


def _te_where(inputs, attrs, out_type):
    from tvm import tirx

    def select(c, x, y):
        return tirx.Select(te_cast(c, "bool"), x, y)

    return broadcast_compute(list(inputs), out_type, select, "T_where")


def _te_cast(inputs, attrs, out_type):
    return map_compute(inputs[0], lambda v: te_cast(v, out_type.dtype), "T_cast")


def _te_reinterpret(inputs, attrs, out_type):
    from tvm import tirx

    def reinterpret(v):
        if dtype_of(v) == "bool" or out_type.dtype == "bool":
            # bool is stored as one byte holding 0 or 1.
            return te_cast(v, out_type.dtype)
        return tirx.reinterpret(out_type.dtype, v)

    return map_compute(inputs[0], reinterpret, "T_reinterpret")


def _te_clip(inputs, attrs, out_type):
    dtype = out_type.dtype
    with quiet():
        # The bounds are cast to the tensor's dtype first, as numpy_impl (and TVM) do.
        lo = np.asarray(attrs.a_min).astype(dtype).item()
        hi = np.asarray(attrs.a_max).astype(dtype).item()
    from tvm import tirx

    if is_float(dtype) and (np.isnan(lo) or np.isnan(hi)):  # np.minimum/np.maximum with a nan bound: all nan
        return map_compute(inputs[0], lambda v: te_const(float("nan"), dtype), "T_clip")
    ordered = lo <= hi
    with quiet():
        low_result = np.minimum(np.asarray(lo, dtype), np.asarray(hi, dtype)).item()  # min(max(v, lo), hi) for v <= lo
    lo, hi, low_result = te_const(lo, dtype), te_const(hi, dtype), te_const(low_result, dtype)

    def clip(v):
        if not is_float(dtype):
            return tirx.min(tirx.max(v, lo), hi)
        if ordered:
            # Two compare-selects: a nan fails both tests and stays nan (LLVM's min/max would drop it),
            # and the pair is a vector blend, so ReLU6 fused into a convolution costs what ReLU does
            # (an isnan select made it 1.6x slower). <= and >= take the bound on a tie, as numpy does
            # (clip(-0, 0, 1) is +0).
            return tirx.Select(v <= lo, low_result, tirx.Select(v >= hi, hi, v))
        return tirx.Select(tirx.isnan(v), v, hi)  # a_min > a_max: numpy gives a_max (nan stays nan)

    return map_compute(inputs[0], clip, "T_clip")


def _te_fixed_point_multiply(inputs, attrs, out_type):
    from tvm import tirx

    shift = int(attrs.shift)
    left, right = (shift, 0) if shift > 0 else (0, -shift)
    total_right = right + 31

    def fpm(v):
        x = v.astype("int64") << tirx.const(left, "int64")
        x = x * tirx.const(int(attrs.multiplier), "int64")
        x = (x + tirx.const(1 << (total_right - 1), "int64")) >> tirx.const(total_right, "int64")
        return x.astype(out_type.dtype)

    return map_compute(inputs[0], fpm, "T_fixed_point_multiply")


# ---------------------------------------------------------------- registration

_SHIFT_OUT_OF_RANGE = (
    " An amount outside [0, bits) (negative, or at least the bit width) is numpy's: the result is "
    "{}, not C's undefined behaviour."
)
_SHIFT_DESCRIPTIONS = {
    "left_shift": "lhs shifted left by rhs bits (wrapping)." + _SHIFT_OUT_OF_RANGE.format("0"),
    "right_shift": "lhs shifted right by rhs bits (arithmetic for signed types)."
    + _SHIFT_OUT_OF_RANGE.format("-1 for a negative signed lhs, else 0"),
}


def _register_all():
    for name, fn in UNARY_OPS.items():
        rel = bitwise_not_rel if name == "bitwise_not" else identity_rel(name)
        register(OpDef(name, 1, rel, OpPattern.ELEMWISE, _unary_impl(name, fn), te_impl=_te_unary(name)))
    for name, fn in _BOOL_RESULT.items():
        register(OpDef(name, 1, identity_comp_rel(name), OpPattern.ELEMWISE, _bool_impl(fn), te_impl=_te_unary(name)))
    for name, fn in BINARY_OPS.items():
        shift = name.endswith("_shift")
        bit_operation = shift or name.startswith("bitwise_")
        rel = broadcast_rel(name, None, bit_operation, allow_bool=not shift)
        numpy_impl, te_impl = _binary_impl(fn), _te_binary(name)
        if bit_operation:
            numpy_impl, te_impl = _integer_kernel(name, numpy_impl), _integer_kernel(name, te_impl)
        register(
            OpDef(
                name,
                2,
                rel,
                OpPattern.BROADCAST,
                numpy_impl,
                te_impl=te_impl,
                description=_SHIFT_DESCRIPTIONS.get(name, ""),
            )
        )
    for name, fn in COMPARISON_OPS.items():
        register(
            OpDef(name, 2, broadcast_rel(name, "bool"), OpPattern.BROADCAST, _binary_impl(fn), te_impl=_te_binary(name))
        )
    register(OpDef("where", 3, where_rel, OpPattern.BROADCAST, _where_impl, te_impl=_te_where))
    register(
        OpDef(
            "cast",
            1,
            cast_rel,
            OpPattern.ELEMWISE,
            _cast_impl,
            attrs=(AttrField("dtype", REQUIRED, to_dtype),),
            te_impl=_te_cast,
        )
    )
    register(OpDef("cast_like", 2, cast_like_rel, OpPattern.ELEMWISE, _cast_impl, te_impl=_te_cast))
    register(
        OpDef(
            "reinterpret",
            1,
            reinterpret_rel,
            OpPattern.ELEMWISE,
            _reinterpret_impl,
            attrs=(AttrField("dtype", REQUIRED, to_dtype),),
            te_impl=_te_reinterpret,
        )
    )
    register(
        OpDef(
            "clip",
            1,
            identity_rel("clip"),
            OpPattern.ELEMWISE,
            _clip_impl,
            attrs=(AttrField("a_min", REQUIRED, to_float), AttrField("a_max", REQUIRED, to_float)),
            te_impl=_te_clip,
        )
    )
    register(
        OpDef(
            "fixed_point_multiply",
            1,
            identity_rel("fixed_point_multiply"),
            OpPattern.ELEMWISE,
            _fixed_point_multiply_impl,
            attrs=(AttrField("multiplier", REQUIRED, to_int), AttrField("shift", REQUIRED, to_int)),
            te_impl=_te_fixed_point_multiply,
        )
    )


_register_all()
