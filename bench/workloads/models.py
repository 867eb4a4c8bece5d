"""Model workloads (MLP, CNN, LSTM, TreeLSTM): weights as program constants, numpy references written directly."""

from __future__ import annotations

import numpy as np

from transpile.runtime import ADTValue

from . import Instance, Native, Workload, parse_workload

SEED = 20261122
F32 = np.float32


def _uniform(rng, shape, fan_in):
    bound = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, size=shape).astype(F32)


def _sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x))).astype(F32)


# ---------------------------------------------------------------- MLP
def mlp_weights():
    rng = np.random.default_rng(SEED)
    return [
        _uniform(rng, (256, 784), 784),
        _uniform(rng, (256,), 784),
        _uniform(rng, (10, 256), 256),
        _uniform(rng, (10,), 256),
    ]


def mlp_numpy(weights):
    w1, b1, w2, b2 = weights
    w1t, w2t = np.ascontiguousarray(w1.T), np.ascontiguousarray(w2.T)

    def run(x):
        return np.maximum(x @ w1t + b1, 0) @ w2t + b2

    return run


# ---------------------------------------------------------------- CNN
def cnn_weights():
    rng = np.random.default_rng(SEED + 1)
    return [
        _uniform(rng, (16, 1, 3, 3), 9),
        _uniform(rng, (16,), 9),
        _uniform(rng, (32, 16, 3, 3), 144),
        _uniform(rng, (32,), 144),
        _uniform(rng, (10, 1568), 1568),
        _uniform(rng, (10,), 1568),
    ]


def conv2d_same_3x3(x, w, b):
    """NCHW conv, 3x3 kernel, padding 1, stride 1, plus bias (im2col with a sliding window view)."""
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))  # N, C, H, W, 3, 3
    return np.einsum("nchwij,ocij->nohw", windows, w, optimize=True) + b[None, :, None, None]


def max_pool_2x2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def cnn_numpy(weights):
    w1, b1, w2, b2, wd, bd = weights
    wdt = np.ascontiguousarray(wd.T)

    def run(x):
        y = max_pool_2x2(np.maximum(conv2d_same_3x3(x, w1, b1), 0))
        y = max_pool_2x2(np.maximum(conv2d_same_3x3(y, w2, b2), 0))
        return y.reshape(y.shape[0], -1) @ wdt + bd

    return run


# ---------------------------------------------------------------- LSTM
LSTM_STEPS, LSTM_IN, LSTM_HIDDEN = 5, 128, 128


def lstm_weights():
    rng = np.random.default_rng(SEED + 2)
    h = LSTM_HIDDEN
    return [_uniform(rng, (4 * h, LSTM_IN), h), _uniform(rng, (4 * h, h), h), _uniform(rng, (4 * h,), h)]


def lstm_numpy(weights):
    w_ih, w_hh, bias = weights
    w_iht, w_hht = np.ascontiguousarray(w_ih.T), np.ascontiguousarray(w_hh.T)

    def run(steps):
        h = np.zeros((1, LSTM_HIDDEN), F32)
        c = np.zeros((1, LSTM_HIDDEN), F32)
        for x in steps:
            i, f, g, o = np.split(x @ w_iht + h @ w_hht + bias, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
        return h

    return run


def python_list(values) -> ADTValue:
    """The Prelude List holding `values` in order."""
    result = ADTValue("Nil", ())
    for value in reversed(values):
        result = ADTValue("Cons", (value, result))
    return result


def list_items(value: ADTValue) -> list:
    items = []
    while value.constructor == "Cons":
        items.append(value.fields[0])
        value = value.fields[1]
    return items


# ---------------------------------------------------------------- TreeLSTM
TREE_NODES, TREE_IN, TREE_HIDDEN = 100, 300, 150


def treelstm_weights():
    rng = np.random.default_rng(SEED + 3)
    h, x = TREE_HIDDEN, TREE_IN
    return [
        _uniform(rng, (3 * h, x), h),
        _uniform(rng, (3 * h, h), h),
        _uniform(rng, (3 * h,), h),
        _uniform(rng, (h, x), h),
        _uniform(rng, (h, h), h),
        _uniform(rng, (h,), h),
    ]


def random_tree(nodes: int, seed: int) -> ADTValue:
    """A random recursive tree: node i > 0 hangs under a uniformly chosen earlier node; inputs ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    children = [[] for _ in range(nodes)]
    for node in range(1, nodes):
        children[int(rng.integers(0, node))].append(node)
    features = rng.standard_normal((nodes, 1, TREE_IN)).astype(F32)

    def build(node):
        return ADTValue("Rose", (features[node], python_list([build(child) for child in children[node]])))

    return build(0)


def tree_nested(tree: ADTValue):
    """(features, [children...]) nesting of a Prelude Tree, for the peers that recurse in Python."""
    value, children = tree.fields
    return value, [tree_nested(child) for child in list_items(children)]


def treelstm_numpy(weights):
    w_iou, u_iou, b_iou, w_f, u_f, b_f = weights
    w_iout, u_iout, w_ft, u_ft = (np.ascontiguousarray(w.T) for w in (w_iou, u_iou, w_f, u_f))

    def node(tree):
        x, children = tree
        states = [node(child) for child in children]
        h_sum = np.zeros((1, TREE_HIDDEN), F32)
        for h, _ in states:
            h_sum = h_sum + h
        i, o, u = np.split(x @ w_iout + h_sum @ u_iout + b_iou, 3, axis=1)
        fx = x @ w_ft + b_f
        fc = np.zeros((1, TREE_HIDDEN), F32)
        for h, c in states:
            fc = fc + _sigmoid(fx + h @ u_ft) * c
        c = _sigmoid(i) * np.tanh(u) + fc
        return _sigmoid(o) * np.tanh(c), c

    return lambda tree: node(tree)[0]


# ---------------------------------------------------------------- the workloads
def _numpy_native(make_run, weights, convert_in=lambda args: args):
    return lambda: Native(call=make_run(weights), convert_in=convert_in)


def _torch(kind, weights, convert_in=None, threads=None):
    def factory():
        from .. import torch_peer

        return torch_peer.native(kind, weights, convert_in, threads)

    return factory


def _torch_peers(kind, weights, convert_in=None):
    """PyTorch with the TVM thread count ("torch") and single-threaded ("torch1"): small ops suffer from thread sync."""
    return {"torch": _torch(kind, weights, convert_in), "torch1": _torch(kind, weights, convert_in, threads=1)}


def _relax(kind, weights, shapes):
    def factory():
        from .. import relax_peer

        return relax_peer.model_native(kind, weights, shapes)

    return factory


def workloads() -> list[Workload]:
    rng = np.random.default_rng(SEED + 10)
    result = []

    mlp_w = mlp_weights()
    for batch in (1, 64):
        x = rng.standard_normal((batch, 784)).astype(F32)
        result.append(
            Workload(
                name=f"mlp_b{batch}",
                title=f"MLP 784-256-10, batch {batch}",
                group="models",
                build_module=lambda batch=batch: parse_workload("mlp.rly", meta=mlp_w, substitute={"BATCH": batch}),
                full=Instance(f"batch={batch}", (x,), mlp_numpy(mlp_w)(x)),
                rtol=1e-4,
                atol=1e-4,
                natives={
                    "numpy": _numpy_native(mlp_numpy, mlp_w),
                    **_torch_peers("mlp", mlp_w),
                    "relax": _relax("mlp", mlp_w, [(batch, 784)]),
                },
            )
        )

    cnn_w = cnn_weights()
    image = rng.standard_normal((1, 1, 28, 28)).astype(F32)
    result.append(
        Workload(
            name="cnn",
            title="CNN (conv-bias-relu-pool x2, dense), 1x1x28x28",
            group="models",
            build_module=lambda: parse_workload("cnn.rly", meta=cnn_w),
            full=Instance("batch=1", (image,), cnn_numpy(cnn_w)(image)),
            rtol=1e-4,
            atol=1e-4,
            natives={
                "numpy": _numpy_native(cnn_numpy, cnn_w),
                **_torch_peers("cnn", cnn_w),
                "relax": _relax("cnn", cnn_w, [(1, 1, 28, 28)]),
            },
        )
    )

    lstm_w = lstm_weights()
    steps = [rng.standard_normal((1, LSTM_IN)).astype(F32) for _ in range(LSTM_STEPS)]
    steps_in = lambda args: (list_items(args[0]),)  # noqa: E731 - the List argument as a Python list
    result.append(
        Workload(
            name="lstm",
            title=f"LSTM cell folded over a List of {LSTM_STEPS} steps, 128/128",
            group="models",
            build_module=lambda: parse_workload("lstm.rly", prelude=True, meta=lstm_w),
            full=Instance(f"steps={LSTM_STEPS}", (python_list(steps),), lstm_numpy(lstm_w)(steps)),
            rtol=1e-4,
            atol=1e-4,
            natives={
                "numpy": _numpy_native(lstm_numpy, lstm_w, steps_in),
                **_torch_peers("lstm", lstm_w, steps_in),
                "relax": _relax("lstm", lstm_w, [(1, LSTM_IN)] * LSTM_STEPS),
            },
        )
    )

    tree_w = treelstm_weights()
    tree = random_tree(TREE_NODES, SEED + 20)
    nested_in = lambda args: (tree_nested(args[0]),)  # noqa: E731 - the Tree argument as nested Python tuples
    result.append(
        Workload(
            name="treelstm",
            title=f"child-sum TreeLSTM 300/150, random tree of {TREE_NODES} nodes",
            group="models",
            build_module=lambda: parse_workload("treelstm.rly", prelude=True, meta=tree_w),
            full=Instance(f"nodes={TREE_NODES}", (tree,), treelstm_numpy(tree_w)(tree_nested(tree))),
            rtol=1e-3,
            atol=1e-4,
            natives={
                "numpy": _numpy_native(treelstm_numpy, tree_w, nested_in),
                **_torch_peers("treelstm", tree_w, nested_in),
            },
            not_applicable={"relax": "n/a (Relax has no ADTs: a rose tree with recursion over it cannot be expressed)"},
        )
    )
    return result
