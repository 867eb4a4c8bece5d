"""The PyTorch eager (CPU) peer: the same models and weights, run under torch.inference_mode()."""

from __future__ import annotations

import numpy as np

from .workloads import Native, NotApplicable


def available() -> str | None:
    """None when torch imports, else the reason it cannot be used."""
    try:
        import torch  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install
        return f"n/a (import torch failed: {type(exc).__name__}; pip install torch==2.13.0)"
    return None


def _t(array):
    import torch

    return torch.from_numpy(np.ascontiguousarray(array))


def _mlp(weights):
    import torch.nn.functional as F

    w1, b1, w2, b2 = map(_t, weights)
    return lambda x: F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)


def _cnn(weights):
    import torch.nn.functional as F

    w1, b1, w2, b2, wd, bd = map(_t, weights)

    def run(x):
        y = F.max_pool2d(F.relu(F.conv2d(x, w1, b1, padding=1)), 2)
        y = F.max_pool2d(F.relu(F.conv2d(y, w2, b2, padding=1)), 2)
        return F.linear(y.flatten(1), wd, bd)

    return run


def _lstm(weights):
    import torch

    w_ih, w_hh, bias = weights
    cell = torch.nn.LSTMCell(w_ih.shape[1], w_hh.shape[1])
    with torch.no_grad():
        cell.weight_ih.copy_(_t(w_ih))
        cell.weight_hh.copy_(_t(w_hh))
        cell.bias_ih.copy_(_t(bias))
        cell.bias_hh.zero_()

    def run(steps):
        state = None
        for x in steps:
            state = cell(x, state)
        return state[0]

    return run


def _treelstm(weights):
    import torch

    w_iou, u_iou, b_iou, w_f, u_f, b_f = map(_t, weights)
    F = torch.nn.functional
    hidden = u_f.shape[0]

    def node(tree):
        x, children = tree
        states = [node(child) for child in children]
        if states:
            hs = torch.cat([h for h, _ in states])
            cs = torch.cat([c for _, c in states])
            h_sum = hs.sum(0, keepdim=True)
        else:
            h_sum = torch.zeros(1, hidden)
        i, o, u = F.linear(x, w_iou, b_iou).add_(F.linear(h_sum, u_iou)).chunk(3, dim=1)
        c = torch.sigmoid(i) * torch.tanh(u)
        if states:
            f = torch.sigmoid(F.linear(x, w_f, b_f) + F.linear(hs, u_f))
            c = c + (f * cs).sum(0, keepdim=True)
        return torch.sigmoid(o) * torch.tanh(c), c

    return lambda tree: node(tree)[0]


_BUILDERS = {"mlp": _mlp, "cnn": _cnn, "lstm": _lstm, "treelstm": _treelstm}


def _tensors(value):
    """numpy arrays inside nested lists/tuples as torch tensors (converted once, before timing)."""
    if isinstance(value, np.ndarray):
        return _t(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_tensors(v) for v in value)
    return value


def native(kind: str, weights, convert_in=None, threads: int | None = None) -> Native:
    """The model as a PyTorch callable; `threads` None means TVM_NUM_THREADS (what the TVM-based peers use)."""
    reason = available()
    if reason:
        raise NotApplicable(reason)
    import os

    import torch

    # Same thread count as the TVM-based peers (TVM_NUM_THREADS, set by `python -m bench`) unless told otherwise.
    # The cells run one after another, so the count set here holds while this cell is timed.
    torch.set_num_threads(threads or int(os.environ.get("TVM_NUM_THREADS") or os.cpu_count() or 1))
    model = _BUILDERS[kind](weights)

    def call(*args):
        with torch.inference_mode():
            return model(*args)

    def to_torch(args):
        return _tensors(tuple(convert_in(args)) if convert_in else tuple(args))

    return Native(
        call=call, convert_in=to_torch, convert_out=lambda r: r.numpy(), note=f"{torch.get_num_threads()} thread(s)"
    )
