"""An independent numpy evaluation of dataflow Relay models, operator by operator (the whole models' reference).

    out = reference_evaluate(model.module, *inputs)                 # float64 by default
    out = reference_evaluate(mod, x, dtype="float32", observe=hook)  # hook(call, value) after every operator

Written from the operators' definitions, separately from the operator registry's numpy
implementations and the interpreter, so that agreeing with it means something. It covers the
operators of the corpus's whole models (MNIST, MobileNet v2, ResNet-50 v2, ResNeXt-50, GPT-2)
and nothing else: a graph of `Var`, `Constant`, operator `Call`, `Tuple` and `TupleGetItem` nodes
(the `%N = ...` form TVM prints); anything else raises NotImplementedError naming it.
"""

from __future__ import annotations


import numpy as np

__all__ = ["reference_evaluate", "OPERATORS", "conv2d", "pool2d", "relative_error"]


# ----- operators -------------------------------------------------------------------------------


def _pair(value, default):
    value = default if value is None else value
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def _padding4(padding) -> tuple[int, int, int, int]:
    """Relay's conv/pool padding: 1, 2 (top/bottom, left/right) or 4 (top, left, bottom, right) numbers."""
    padding = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,)
    if len(padding) == 1:
        return padding * 4
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    return tuple(padding)


def _taps(x, kh, kw, strides, dilation, oh, ow):
    """For each kernel position (i, j), the strided view of `x`'s last two axes it meets: (i, j, view)."""
    sh, sw = strides
    dh, dw = dilation
    for i in range(kh):
        for j in range(kw):
            yield i, j, x[..., i * dh : i * dh + sh * (oh - 1) + 1 : sh, j * dw : j * dw + sw * (ow - 1) + 1 : sw]


def conv2d(x, w, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """NCHW data, OIHW kernel: one batched matrix product per kernel position, summed."""
    top, left, bottom, right = _padding4(padding)
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, channels, height, width = x.shape
    out_channels, per_group, kh, kw = w.shape
    assert channels == per_group * groups, (channels, per_group, groups)
    oh = (height - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (width - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    grouped = x.reshape(n, groups, per_group, height, width)
    kernels = w.reshape(groups, out_channels // groups, per_group, kh, kw)
    out = np.zeros((n, groups, out_channels // groups, oh * ow), dtype=np.result_type(x, w))
    for i, j, tap in _taps(grouped, kh, kw, strides, dilation, oh, ow):
        # (g, o, c) @ (n, g, c, oh*ow) -> (n, g, o, oh*ow)
        out += kernels[:, :, :, i, j] @ tap.reshape(n, groups, per_group, oh * ow)
    return out.reshape(n, out_channels, oh, ow)


def pool2d(x, kind, pool_size, strides, padding, dilation=(1, 1), ceil_mode=False, count_include_pad=False):
    """Max or average pooling of NCHW data."""
    if ceil_mode:
        raise NotImplementedError("pooling with ceil_mode=True")
    top, left, bottom, right = _padding4(padding)
    fill = -np.inf if kind == "max" else 0.0
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    kh, kw = pool_size
    oh = (padded.shape[2] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (padded.shape[3] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    taps = [tap for _, _, tap in _taps(padded, kh, kw, strides, dilation, oh, ow)]
    if kind == "max":
        return np.maximum.reduce(taps)
    total = np.add.reduce(taps)
    if count_include_pad:
        return total / (kh * kw)
    inside = np.pad(np.ones(x.shape[2:]), ((top, bottom), (left, right)))
    count = np.add.reduce([tap for _, _, tap in _taps(inside, kh, kw, strides, dilation, oh, ow)])
    return total / count


def _batch_norm(x, gamma, beta, mean, var, attrs):
    axis = attrs.get("axis", 1) % x.ndim
    shape = [1] * x.ndim
    shape[axis] = -1
    scale = 1.0 / np.sqrt(var + attrs.get("epsilon", 1e-5))
    if attrs.get("scale", True):
        scale = scale * gamma
    out = (x - mean.reshape(shape)) * scale.reshape(shape)
    if attrs.get("center", True):
        out = out + beta.reshape(shape)
    return (out, mean, var)


def _reshape(x, newshape):
    """Relay's reshape: 0 copies the input's dimension, -1 is inferred (the other codes are not used here)."""
    shape = []
    for position, size in enumerate(newshape):
        if size == 0:
            shape.append(x.shape[position])
        elif size >= -1:
            shape.append(size)
        else:
            raise NotImplementedError(f"reshape with the special code {size}")
    return x.reshape(shape)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _mean(x, attrs):
    axis = attrs.get("axis")
    if attrs.get("exclude", False):
        raise NotImplementedError("mean with exclude=True")
    axis = None if axis is None else tuple(axis) if isinstance(axis, (tuple, list)) else axis
    return x.mean(axis=axis, keepdims=bool(attrs.get("keepdims", False)))


def _take(data, indices, attrs):
    axis = attrs.get("axis")
    mode = attrs.get("mode", "clip")
    size = data.size if axis is None else data.shape[axis]
    indices = np.clip(indices, 0, size - 1) if mode == "clip" else indices % size if mode == "wrap" else indices
    return np.take(data, indices, axis=axis)


def _split(x, attrs):
    sections = attrs["indices_or_sections"]
    if not isinstance(sections, (tuple, list)):
        sections = int(sections)
    return tuple(np.split(x, sections, axis=attrs.get("axis", 0)))


def _expand_dims(x, attrs):
    axis = attrs["axis"] % (x.ndim + 1)
    for _ in range(attrs.get("num_newaxis", 1)):
        x = np.expand_dims(x, axis)
    return x


def _batch_matmul(a, b, attrs):
    if attrs.get("transpose_a", False):
        a = np.swapaxes(a, -1, -2)
    if attrs.get("transpose_b", True):
        b = np.swapaxes(b, -1, -2)
    return a @ b


def _pad(x, value, attrs):
    if attrs.get("pad_mode", "constant") != "constant":
        raise NotImplementedError(f"nn.pad with pad_mode={attrs['pad_mode']}")
    return np.pad(x, [tuple(p) for p in attrs["pad_width"]], constant_values=value)


def _conv2d(x, w, attrs):
    if attrs.get("data_layout", "NCHW") != "NCHW" or attrs.get("kernel_layout", "OIHW") != "OIHW":
        raise NotImplementedError("conv2d layouts other than NCHW/OIHW")
    return conv2d(
        x,
        w,
        _pair(attrs.get("strides"), 1),
        attrs.get("padding", (0, 0)),
        _pair(attrs.get("dilation"), 1),
        attrs.get("groups", 1),
    )


def _pool(kind):
    def run(x, attrs):
        if attrs.get("layout", "NCHW") != "NCHW":
            raise NotImplementedError("pooling layouts other than NCHW")
        return pool2d(
            x,
            kind,
            _pair(attrs["pool_size"], 1),
            _pair(attrs.get("strides"), 1),
            attrs.get("padding", (0, 0)),
            _pair(attrs.get("dilation"), 1),
            bool(attrs.get("ceil_mode", False)),
            bool(attrs.get("count_include_pad", False)),
        )

    return run


def _channel_shape(x, axis):
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1
    return shape


# name -> fn(args, attrs). Arguments arrive as numpy arrays (tuples for tuple-typed arguments).
OPERATORS = {
    "add": lambda a, _: a[0] + a[1],
    "subtract": lambda a, _: a[0] - a[1],
    "multiply": lambda a, _: a[0] * a[1],
    "divide": lambda a, _: a[0] / a[1],
    "power": lambda a, _: np.power(a[0], a[1]),
    "sqrt": lambda a, _: np.sqrt(a[0]),
    "tanh": lambda a, _: np.tanh(a[0]),
    "less": lambda a, _: a[0] < a[1],
    "where": lambda a, _: np.where(a[0], a[1], a[2]),
    "clip": lambda a, at: np.clip(a[0], at["a_min"], at["a_max"]),
    "mean": lambda a, at: _mean(a[0], at),
    "reshape": lambda a, at: _reshape(a[0], at["newshape"]),
    "transpose": lambda a, at: np.transpose(a[0], at.get("axes")),
    "expand_dims": lambda a, at: _expand_dims(a[0], at),
    "split": lambda a, at: _split(a[0], at),
    "concatenate": lambda a, at: np.concatenate(a[0], axis=at.get("axis", 0)),
    "take": lambda a, at: _take(a[0], a[1], at),
    "nn.relu": lambda a, _: np.maximum(a[0], 0),
    "nn.softmax": lambda a, at: _softmax(a[0], at.get("axis", -1)),
    "nn.dense": lambda a, _: a[0] @ a[1].T,
    "nn.batch_matmul": lambda a, at: _batch_matmul(a[0], a[1], at),
    "nn.bias_add": lambda a, at: a[0] + a[1].reshape(_channel_shape(a[0], at.get("axis", 1))),
    "nn.batch_flatten": lambda a, _: a[0].reshape(a[0].shape[0], -1),
    "nn.pad": lambda a, at: _pad(a[0], a[1], at),
    "nn.conv2d": lambda a, at: _conv2d(a[0], a[1], at),
    "nn.batch_norm": lambda a, at: _batch_norm(*a, at),
    "nn.max_pool2d": lambda a, at: _pool("max")(a[0], at),
    "nn.avg_pool2d": lambda a, at: _pool("avg")(a[0], at),
    "nn.global_avg_pool2d": lambda a, _: a[0].mean(axis=(2, 3), keepdims=True),
    "nn.global_max_pool2d": lambda a, _: a[0].max(axis=(2, 3), keepdims=True),
}


# ----- the graph walk --------------------------------------------------------------------------


def _children(node) -> tuple:
    from ..relay import expr as E

    if isinstance(node, E.Call):
        return node.args
    if isinstance(node, E.Tuple):
        return node.fields
    if isinstance(node, E.TupleGetItem):
        return (node.tuple_value,)
    if isinstance(node, (E.Var, E.Constant)):
        return ()
    raise NotImplementedError(f"the numpy reference evaluates dataflow graphs only, not {type(node).__name__}")


def _topological_order(root) -> list:
    """Post-order of the DAG under `root`, each node once (iterative: models are hundreds of calls deep)."""
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(_children(node)) if id(child) not in seen)
    return order


def _as_compute(value, dtype):
    """Floating tensors in the reference's precision; integers and booleans as they are."""
    value = np.asarray(value)
    return value.astype(dtype) if np.issubdtype(value.dtype, np.floating) else value


def reference_evaluate(module, *inputs, dtype="float64", observe=None, entry: str = "main"):
    """Evaluate `entry` of a dataflow module on numpy inputs, in `dtype` precision; returns arrays / tuples.

    `observe(call, value)`, if given, sees each operator's result (e.g. to check activation ranges).
    Intermediate results are dropped once their last user ran, so GPT-2 fits in memory.
    """
    from ..relay import expr as E

    function = module[entry]
    if len(inputs) != len(function.params):
        raise TypeError(f"@{entry} takes {len(function.params)} arguments, got {len(inputs)}")
    order = _topological_order(function.body)
    remaining = {}
    for node in order:
        for child in _children(node):
            remaining[id(child)] = remaining.get(id(child), 0) + 1
    values = {id(p): _as_compute(x, dtype) for p, x in zip(function.params, inputs)}
    for node in order:
        key = id(node)
        if isinstance(node, E.Var):
            if key not in values:
                raise NotImplementedError(f"free variable %{node.name_hint}")
            continue
        if isinstance(node, E.Constant):
            values[key] = _as_compute(node.data, dtype)
            continue
        args = [values[id(c)] for c in _children(node)]
        if isinstance(node, E.Tuple):
            result = tuple(args)
        elif isinstance(node, E.TupleGetItem):
            result = args[0][node.index]
        elif isinstance(node.op, E.Op):
            impl = OPERATORS.get(node.op.name)
            if impl is None:
                raise NotImplementedError(f"the numpy reference has no operator {node.op.name}")
            result = impl(args, node.attrs or {})
            if observe is not None:
                observe(node, result)
        else:
            raise NotImplementedError(f"calls of {type(node.op).__name__} (only operators)")
        values[key] = result
        for child in _children(node):
            remaining[id(child)] -= 1
            if remaining[id(child)] == 0 and child is not function.body:
                del values[id(child)]
    return values[id(function.body)]


def relative_error(actual, expected) -> float:
    """max |actual - expected| / max |expected|: the error relative to the output's scale."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    return float(np.max(np.abs(actual - expected))) / (scale or 1.0) if expected.size else 0.0
