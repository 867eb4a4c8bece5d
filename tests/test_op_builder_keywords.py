"""Operator builders accept TVM's Python argument names, and TVM's Python-only builder compositions exist."""

import numpy as np
import pytest

from transpile import relay
from transpile.relay.op.registry import registered_ops
from transpile.relay.typing import infer_type_expr


def _typed(expr):
    return infer_type_expr(expr).checked_type


def test_multi_input_builders_take_their_inputs_by_tvm_name():
    data = relay.var("data", shape=(4, 3))
    indices = relay.const(np.array([0, 2], "int32"))
    by_name = relay.take(data=data, indices=indices, axis=1)
    mixed = relay.take(data, indices=indices, axis=1)
    positional = relay.take(data, indices, axis=1)
    relay.assert_structural_equal(by_name, positional)
    relay.assert_structural_equal(mixed, positional)
    assert _typed(by_name) == relay.TensorType((4, 2), "float32")

    nd_indices = relay.const(np.zeros((1, 2), "int32"))
    relay.assert_structural_equal(relay.gather_nd(data, indices=nd_indices), relay.gather_nd(data, nd_indices))
    weight = relay.var("weight", shape=(5, 3))
    relay.assert_structural_equal(relay.nn.dense(data, weight=weight), relay.nn.dense(data, weight))
    condition = relay.var("c", shape=(4, 3), dtype="bool")
    relay.assert_structural_equal(
        relay.where(condition=condition, x=data, y=data), relay.where(condition, data, data)
    )


def test_an_input_given_twice_or_out_of_order_is_a_clear_error():
    data = relay.var("data", shape=(4, 3))
    indices = relay.const(np.array([0], "int32"))
    with pytest.raises(TypeError, match="take got input 'indices' twice"):
        relay.take(data, indices, indices=indices)
    with pytest.raises(TypeError, match="input 'data' is missing before 'indices'"):
        relay.take(indices=indices)


def test_every_multi_input_operator_names_its_inputs():
    # These five have builders written as Python functions with TVM's signature (nn.pad's pad_value
    # comes after the pad_width attribute, gather's indices after axis, ...).
    own_signature = {"variance", "gather", "arange", "nn.pad", "trilu"}
    unnamed = [o.name for o in registered_ops() if (o.num_inputs or 0) >= 2 and not o.input_names]
    assert sorted(unnamed) == sorted(own_signature)
    data = relay.var("data", shape=(3, 3))
    k = relay.const(0)
    relay.assert_structural_equal(relay.trilu(data=data, k=k, upper=False), relay.trilu(data, k, False))
    widths = ((1, 1), (0, 0))
    relay.assert_structural_equal(relay.nn.pad(data, pad_width=widths, pad_value=2.0), relay.nn.pad(data, widths, 2.0))


@pytest.mark.parametrize(
    "builder, shape, layout, expected",
    [
        ("global_max_pool1d", (2, 3, 7), "NCW", (2, 3, 1)),
        ("global_avg_pool1d", (2, 7, 3), "NWC", (2, 1, 3)),
        ("global_max_pool3d", (1, 2, 3, 4, 5), "NCDHW", (1, 2, 1, 1, 1)),
        ("global_avg_pool3d", (1, 3, 4, 5, 2), "NDHWC", (1, 1, 1, 1, 2)),
    ],
)
def test_global_1d_and_3d_pools_are_adaptive_pools_to_size_one(builder, shape, layout, expected):
    x = relay.var("x", shape=shape)
    call = getattr(relay.nn, builder)(x, layout=layout)
    kind = "max" if "max" in builder else "avg"
    assert call.op.name == f"nn.adaptive_{kind}_pool{builder[-2:]}"
    assert _typed(call) == relay.TensorType(expected, "float32")
    data = np.random.default_rng(1).uniform(size=shape).astype("float32")
    axes = tuple(i for i, c in enumerate(layout) if c in "DHW")
    reduce = np.max if kind == "max" else np.mean
    mod = relay.IRModule.from_expr(relay.Function([x], call))
    out = relay.create_executor(mod=mod).evaluate()(data)
    np.testing.assert_allclose(np.asarray(out), reduce(data, axis=axes, keepdims=True), rtol=1e-6)


def test_upsampling_a_symbolic_extent_gives_an_unknown_one():
    from transpile.tvm_compat import te

    n, h = te.size_var("n"), te.size_var("h")
    x = relay.var("x", relay.TensorType((n, 3, h, 5), "float32"))
    ty = _typed(relay.nn.upsampling(x, scale_h=2, scale_w=2))
    assert str(ty) == "Tensor[(n, 3, ?, 10), float32]"
