"""Generator producers of tensor operators: elementwise, broadcast, comparisons, casts, reductions, shape ops, nn."""

from __future__ import annotations

import math

from .gentypes import Dim, TensorT, is_static

__all__ = ["TensorProducers"]

# Unary float operators that give bit-identical results on every correct backend (given exact input);
# the rounding ones are discontinuous, so their input must be exact too.
FLOAT_UNARY_EXACT = ("negative", "abs", "nn.relu", "clip")
FLOAT_UNARY_ROUNDING = ("floor", "ceil", "round", "trunc", "sign")
FLOAT_UNARY_INEXACT = ("exp", "tanh", "sigmoid", "sqrt", "log", "sin", "cos", "erf", "rsqrt")
INT_UNARY = ("negative", "abs", "sign", "clip", "bitwise_not")
INT_BINARY = (
    "add", "subtract", "multiply", "divide", "floor_divide", "floor_mod", "mod",
    "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
)  # fmt: skip
FLOAT_BINARY_INEXACT = ("add", "subtract", "multiply", "divide", "power")
FLOAT_BINARY_ROUNDING = ("floor_mod", "floor_divide")  # discontinuous in their operands
INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
COMPARISONS = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}


def _dims(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _factorize(size: int, rank: int, rng) -> tuple:
    """A random shape of `rank` dims whose product is `size` (> 0)."""
    dims = [1] * rank
    n, p = size, 2
    while n > 1:
        while n % p == 0:
            dims[rng.randrange(rank)] *= p
            n //= p
        p += 1
    return tuple(dims)


class TensorProducers:
    """Mixin of ProgramGenerator: each `t_*` method returns an expression of tensor type `t` or None."""

    def tensor_producers(self, t: TensorT) -> list:
        static = is_static(t)
        weighted = [(3, self.t_unary), (4, self.t_binary), (1.5, self.t_cast), (1.5, self.t_where), (2, self.t_reduce)]
        if t.dtype == "bool":
            weighted.append((4, self.t_compare))
        weighted += [(1, self.t_transpose), (1, self.t_expand_dims), (1, self.t_squeeze)]
        if static:
            weighted += [(1, self.t_reshape), (1, self.t_concatenate), (1, self.t_take), (1, self.t_strided_slice)]
        if t.is_float:
            weighted += [(0.7, self.t_softmax)]
            if static and t.rank == 2:
                weighted.append((2, self.t_dense))
            if static and t.rank == 4:
                weighted += [(2, self.t_conv2d), (2, self.t_pool)]
        return weighted

    # ------------------------------------------------------------------ shapes
    def reduced_shape(self, shape: tuple) -> tuple | None:
        """A static shape that broadcasts against `shape` to `shape` (leading axes dropped, others 1)."""
        drop = self.rng.randint(0, len(shape)) if self.chance(0.4) else 0
        out = []
        for d in shape[drop:]:
            out.append(1 if isinstance(d, Dim) or self.chance(0.3) else d)
        return tuple(out)

    def broadcast_pair(self, shape: tuple, blk) -> tuple:
        roll = self.rng.random()
        if roll < 0.5 or not shape:
            return shape, shape
        if roll < 0.85 or not is_static(TensorT("int32", shape)):
            other = self.reduced_shape(shape)
            return (shape, other) if self.chance(0.5) else (other, shape)
        # Each axis held by one side, 1 on the other: (3, 1) with (1, 4) gives (3, 4).
        a, b = [], []
        for d in shape:
            if self.chance(0.5):
                a.append(d), b.append(1 if self.chance(0.7) else d)
            else:
                a.append(1 if self.chance(0.7) else d), b.append(d)
        return tuple(a), tuple(b)

    # ------------------------------------------------------------------ elementwise
    def t_unary(self, t, blk, depth, exact):
        if t.dtype == "bool":
            self.note("op:logical_not")
            return f"logical_not({self.expr(t, blk, depth, exact)})"
        if t.is_int:
            op = self.rng.choice(INT_UNARY)
            operand_exact = True
        else:
            choices = list(FLOAT_UNARY_EXACT + FLOAT_UNARY_ROUNDING)
            if not exact:
                choices += FLOAT_UNARY_INEXACT * 2
            op = self.rng.choice(choices)
            operand_exact = exact or op in FLOAT_UNARY_ROUNDING
        self.note(f"op:{op}")
        x = self.expr(t, blk, depth, operand_exact)
        if op == "clip":
            lo, hi = sorted(self.rng.sample([-100, -3, -1, 0, 1, 2, 5, 1000], 2))
            return f"clip({x}, a_min={lo}f, a_max={hi}f)"
        return f"{op}({x})"

    def t_binary(self, t, blk, depth, exact):
        if t.dtype == "bool":
            op = self.rng.choice(["logical_and", "logical_or", "logical_xor"])
            operand_exact = True
        elif t.is_int:
            op = self.rng.choice(INT_BINARY)
            operand_exact = True
        else:
            choices = ["maximum", "minimum", "mod"]
            if not exact:
                choices += list(FLOAT_BINARY_INEXACT * 2) + list(FLOAT_BINARY_ROUNDING)
            op = self.rng.choice(choices)
            operand_exact = exact or op in FLOAT_BINARY_ROUNDING or op == "mod"
        shape_a, shape_b = self.broadcast_pair(t.shape, blk)
        self.note(f"op:{op}")
        if shape_a != shape_b:
            self.note("broadcast")
        a = self.expr(t.with_shape(shape_a), blk, depth, operand_exact)
        b = self.expr(t.with_shape(shape_b), blk, depth, operand_exact)
        if op in INFIX and self.chance(0.3):
            self.note("infix")
            return f"({a} {INFIX[op]} {b})"
        return f"{op}({a}, {b})"

    def t_compare(self, t, blk, depth, exact):
        dtype = self.random_dtype(allow_bool=False)
        if dtype.startswith("float") and self.chance(0.25):
            op = self.rng.choice(["isnan", "isinf", "isfinite"])
            self.note(f"op:{op}")
            return f"{op}({self.expr(t.with_dtype(dtype), blk, depth, True)})"
        op = self.rng.choice(list(COMPARISONS))
        shape_a, shape_b = self.broadcast_pair(t.shape, blk)
        self.note(f"op:{op}")
        a = self.expr(TensorT(dtype, shape_a), blk, depth, True)
        b = self.expr(TensorT(dtype, shape_b), blk, depth, True)
        if self.chance(0.3):
            self.note("infix")
            return f"({a} {COMPARISONS[op]} {b})"
        return f"{op}({a}, {b})"

    def t_cast(self, t, blk, depth, exact):
        source = t.with_dtype(
            self.rng.choice([d for d in ("float32", "float64", "int32", "int64", "bool") if d != t.dtype])
        )
        self.note("op:cast")
        if source.is_float and not t.is_float:
            x = self.expr(source, blk, depth, True)
            if t.dtype == "bool":
                return f'cast({x}, dtype="bool")'
            # Float to integer is undefined in C for nan, inf and out-of-range values: cast finite, bounded values.
            name = blk.bind(x, source, exact=True)
            return f'cast(clip(where(isfinite({name}), {name}, zeros_like({name})), a_min=-1000f, a_max=1000f), dtype="{t.dtype}")'
        x = self.expr(source, blk, depth, exact or not source.is_float)
        return f'cast({x}, dtype="{t.dtype}")'

    def t_where(self, t, blk, depth, exact):
        cond_shape = self.reduced_shape(t.shape) if self.chance(0.5) else t.shape
        shape_a, shape_b = self.broadcast_pair(t.shape, blk)
        self.note("op:where")
        cond = self.expr(TensorT("bool", cond_shape), blk, depth, True)
        a = self.expr(t.with_shape(shape_a), blk, depth, exact)
        b = self.expr(t.with_shape(shape_b), blk, depth, exact)
        return f"where({cond}, {a}, {b})"

    # ------------------------------------------------------------------ reductions
    def t_reduce(self, t, blk, depth, exact):
        if t.dtype == "bool":
            op, source_dtype, operand_exact = self.rng.choice(["all", "any"]), "bool", True
        elif t.dtype == "int32" and self.chance(0.3):
            op, source_dtype, operand_exact = self.rng.choice(["argmax", "argmin"]), self.random_dtype(False), True
        elif t.is_int:
            op, source_dtype, operand_exact = self.rng.choice(["sum", "prod", "max", "min"]), t.dtype, True
        else:
            choices = ["max", "min"] + ([] if exact else ["sum", "sum", "prod", "mean"])
            op, source_dtype = self.rng.choice(choices), t.dtype
            operand_exact = exact
        axes_text, source_shape = self.reduction_source(t.shape, blk)
        if source_shape is None:
            return None
        self.note(f"op:{op}")
        x = self.expr(TensorT(source_dtype, source_shape), blk, depth, operand_exact)
        return f"{op}({x}{axes_text})"

    def reduction_source(self, shape: tuple, blk):
        """(attribute text, source shape) of a reduction producing `shape`; (None, None) if none fits."""
        if not is_static(TensorT("int32", shape)):
            options = []
            for s in blk.tensor_shapes():
                for i in range(len(s)):
                    if s[:i] + s[i + 1 :] == shape:
                        options.append((f", axis=[{i}]", s))
                    if s[:i] + (1,) + s[i + 1 :] == shape:
                        options.append((f", axis=[{i}], keepdims=True", s))
            return self.rng.choice(options) if options else (None, None)
        if not shape and self.chance(0.4):
            return "", self.random_static_shape() or (3,)
        ones = [i for i, d in enumerate(shape) if d == 1]
        n = 0 if self.chance(0.01) else self.rng.randint(1, 5)  # (max of nothing is a run-time error)
        if ones and self.chance(0.3):
            i = self.rng.choice(ones)
            return f", axis=[{i}], keepdims=True", shape[:i] + (n,) + shape[i + 1 :]
        i = self.rng.randint(0, len(shape))
        source = shape[:i] + (n,) + shape[i:]
        axis = i - len(source) if self.chance(0.3) else i
        return f", axis=[{axis}]", source

    # ------------------------------------------------------------------ shape operators
    def t_reshape(self, t, blk, depth, exact):
        size = math.prod(t.shape)
        if size == 0:
            return None  # a 0 in `newshape` means "copy this dimension of the input"
        source = _factorize(size, self.rng.randint(1, 3), self.rng)
        newshape = list(t.shape)
        if newshape and self.chance(0.3):
            newshape[self.rng.randrange(len(newshape))] = -1
        self.note("op:reshape")
        return f"reshape({self.expr(t.with_shape(source), blk, depth, exact)}, newshape={_dims(newshape)})"

    def t_transpose(self, t, blk, depth, exact):
        if t.rank < 2:
            return None
        axes = list(range(t.rank))
        self.rng.shuffle(axes)
        source = [None] * t.rank
        for i, a in enumerate(axes):
            source[a] = t.shape[i]
        source_t = t.with_shape(source)
        if not self.constructible(source_t, blk):
            return None
        self.note("op:transpose")
        x = self.expr(source_t, blk, depth, exact)
        if axes == list(reversed(range(t.rank))) and self.chance(0.5):
            return f"transpose({x})"
        return f"transpose({x}, axes={_dims(axes)})"

    def t_expand_dims(self, t, blk, depth, exact):
        ones = [i for i, d in enumerate(t.shape) if d == 1]
        if not ones:
            return None
        i = self.rng.choice(ones)
        source_t = t.with_shape(t.shape[:i] + t.shape[i + 1 :])
        if not self.constructible(source_t, blk):
            return None
        self.note("op:expand_dims")
        axis = i - t.rank if self.chance(0.3) else i
        return f"expand_dims({self.expr(source_t, blk, depth, exact)}, axis={axis})"

    def t_squeeze(self, t, blk, depth, exact):
        i = self.rng.randint(0, t.rank)
        source_t = t.with_shape(t.shape[:i] + (1,) + t.shape[i:])
        if source_t.rank > 4 or not self.constructible(source_t, blk):
            return None
        self.note("op:squeeze")
        x = self.expr(source_t, blk, depth, exact)
        if 1 not in t.shape and self.chance(0.3):
            return f"squeeze({x})"
        return f"squeeze({x}, axis=[{i}])"

    def t_concatenate(self, t, blk, depth, exact):
        if t.rank == 0:
            return None
        axis = self.rng.randrange(t.rank)
        total = t.shape[axis]
        parts = self.rng.randint(2, 3)
        cuts = sorted(self.rng.randint(0, total) for _ in range(parts - 1))
        sizes = [b - a for a, b in zip([0] + cuts, cuts + [total])]
        self.note("op:concatenate")
        fields = [
            self.expr(t.with_shape(t.shape[:axis] + (n,) + t.shape[axis + 1 :]), blk, depth, exact) for n in sizes
        ]
        return f"concatenate(({', '.join(fields)}), axis={axis})"

    def t_take(self, t, blk, depth, exact):
        k = self.rng.randint(0, min(2, t.rank))
        pos = self.rng.randint(0, t.rank - k)
        n = 0 if self.chance(0.005) else self.rng.randint(1, 5)  # (an empty axis is a run-time error)
        data_t = t.with_shape(t.shape[:pos] + (n,) + t.shape[pos + k :])
        index_t = TensorT(self.rng.choice(["int32", "int32", "int64"]), t.shape[pos : pos + k])
        mode = self.rng.choice(["", "", ', mode="clip"', ', mode="wrap"'])
        self.note("op:take")
        data = self.expr(data_t, blk, depth, exact)
        index = self.expr(index_t, blk, depth, True)
        return f"take({data}, {index}, axis={pos}{mode})"

    def t_strided_slice(self, t, blk, depth, exact):
        if t.rank == 0:
            return None
        begin, end, strides, source = [], [], [], []
        for d in t.shape:
            stride = self.rng.choice([1, 1, 2, 3])
            b = self.rng.randint(0, 2)
            e = b + (d - 1) * stride + 1 if d else b
            n = e + self.rng.randint(0, 2)
            begin.append(b - n if b < n and self.chance(0.2) else b)
            end.append(e)
            strides.append(stride)
            source.append(n)
        self.note("op:strided_slice")
        x = self.expr(t.with_shape(source), blk, depth, exact)
        return f"strided_slice({x}, begin={_dims(begin)}, end={_dims(end)}, strides={_dims(strides)})"

    # ------------------------------------------------------------------ neural network operators
    def t_softmax(self, t, blk, depth, exact):
        if exact or t.rank == 0:
            return None
        op = self.rng.choice(["nn.softmax", "nn.softmax", "nn.log_softmax"])
        self.note(f"op:{op}")
        axis = self.rng.randrange(-t.rank, t.rank)
        return f"{op}({self.expr(t, blk, depth)}, axis={axis})"

    def t_dense(self, t, blk, depth, exact):
        if exact:
            return None
        m, n = t.shape
        k = 0 if self.chance(0.03) else self.rng.randint(1, 6)
        self.note("op:nn.dense")
        data = self.expr(t.with_shape((m, k)), blk, depth)
        weight = self.expr(t.with_shape((n, k)), blk, depth)
        return f"nn.dense({data}, {weight}, units={n})"

    def t_conv2d(self, t, blk, depth, exact):
        batch, channels, height, width = t.shape
        if exact or height == 0 or width == 0:
            return None
        kh, kw = self.rng.randint(1, 3), self.rng.randint(1, 3)
        stride = self.rng.choice([1, 1, 2])
        ph, pw = self.rng.randint(0, kh - 1), self.rng.randint(0, kw - 1)
        in_h, in_w = (height - 1) * stride + kh - 2 * ph, (width - 1) * stride + kw - 2 * pw
        if in_h < 1 or in_w < 1:
            return None
        in_channels = self.rng.randint(1, 3)
        self.note("op:nn.conv2d")
        data = self.expr(t.with_shape((batch, in_channels, in_h, in_w)), blk, depth)
        weight = self.expr(t.with_shape((channels, in_channels, kh, kw)), blk, depth)
        return (
            f"nn.conv2d({data}, {weight}, strides=[{stride}, {stride}], padding=[{ph}, {pw}, {ph}, {pw}], "
            f"channels={channels}, kernel_size=[{kh}, {kw}])"
        )

    def t_pool(self, t, blk, depth, exact):
        batch, channels, height, width = t.shape
        if height == 0 or width == 0:
            return None
        if height == 1 and width == 1 and not exact and self.chance(0.3):
            self.note("op:nn.global_avg_pool2d")
            source = t.with_shape((batch, channels, self.rng.randint(1, 4), self.rng.randint(1, 4)))
            return f"nn.global_avg_pool2d({self.expr(source, blk, depth)})"
        op = "nn.max_pool2d" if exact or self.chance(0.5) else "nn.avg_pool2d"
        k, stride = self.rng.randint(1, 3), self.rng.choice([1, 2])
        pad = self.rng.randint(0, k - 1) if op == "nn.max_pool2d" and self.chance(0.3) else 0
        in_h, in_w = (height - 1) * stride + k - 2 * pad, (width - 1) * stride + k - 2 * pad
        if in_h < 1 or in_w < 1:
            return None
        self.note(f"op:{op}")
        x = self.expr(t.with_shape((batch, channels, in_h, in_w)), blk, depth, exact)
        return f"{op}({x}, pool_size=[{k}, {k}], strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}])"
