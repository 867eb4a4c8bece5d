"""Arguments of unknown type typed by their operator's relation, and what inference leaves on the nodes."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import RelayTypeError
from transpile.relay.expr import InferredTypeArgs
from transpile.relay.op import registry
from transpile.relay.testing import run_infer_type

F32 = "float32"


def tensor(shape, dtype=F32):
    return relay.TensorType(shape, dtype)


def inferred(call):
    """The call after type inference, with the types of its arguments."""
    typed = run_infer_type(call)
    return typed, [arg.checked_type for arg in typed.args]


def type_error(src, *fragments, line):
    with pytest.raises(RelayTypeError) as info:
        relay.transform.InferType()(relay.parse(src, "prog.rly"))
    error = info.value
    for fragment in fragments:
        assert fragment in error.message, error.message
    assert (error.source_name, error.line) == ("prog.rly", line), str(error)
    return error


# ----- each operator's inferred argument types ---------------------------------------------------


@pytest.mark.parametrize(
    "build, weight, out",
    [
        (lambda x, w: relay.nn.conv2d(x, w, kernel_size=(3, 3), padding=1, channels=6), (6, 4, 3, 3), (2, 6, 9, 9)),
        (lambda x, w: relay.nn.conv2d(x, w, kernel_size=(1, 3), channels=8, groups=2), (8, 2, 1, 3), (2, 8, 9, 7)),
        (
            lambda x, w: relay.nn.conv2d(x, w, kernel_size=3, channels=6, kernel_layout="HWIO"),
            (3, 3, 4, 6),
            (2, 6, 7, 7),
        ),
        (
            lambda x, w: relay.nn.conv2d_transpose(x, w, kernel_size=(2, 2), strides=(2, 2), channels=6),
            (4, 6, 2, 2),
            (2, 6, 18, 18),
        ),
        (
            lambda x, w: relay.nn.conv2d_transpose(x, w, kernel_size=(3, 3), channels=6, groups=2),
            (4, 3, 3, 3),
            (2, 6, 11, 11),
        ),
    ],
)
def test_conv2d_weights(build, weight, out):
    x = relay.var("x", tensor((2, 4, 9, 9)))
    typed, (_, weight_type) = inferred(build(x, relay.var("w")))
    assert weight_type == tensor(weight)
    assert typed.checked_type == tensor(out)


def test_conv_weights_follow_the_data_layout_and_dtype():
    x = relay.var("x", tensor((1, 9, 9, 4), "int8"))
    typed, (_, weight) = inferred(
        relay.nn.conv2d(x, relay.var("w"), kernel_size=(3, 3), channels=5, data_layout="NHWC", kernel_layout="OHWI")
    )
    assert weight == tensor((5, 3, 3, 4), "int8")
    assert typed.checked_type == tensor((1, 7, 7, 5), "int8")


def test_conv1d_and_conv3d_weights():
    x1 = relay.var("x", tensor((1, 3, 10)))
    typed, (_, weight) = inferred(relay.nn.conv1d(x1, relay.var("w"), kernel_size=3, channels=7))
    assert weight == tensor((7, 3, 3)) and typed.checked_type == tensor((1, 7, 8))
    typed, (_, weight) = inferred(relay.nn.conv1d_transpose(x1, relay.var("w"), kernel_size=3, channels=7))
    assert weight == tensor((3, 7, 3)) and typed.checked_type == tensor((1, 7, 12))
    x3 = relay.var("x", tensor((1, 2, 5, 6, 7)))
    typed, (_, weight) = inferred(relay.nn.conv3d(x3, relay.var("w"), kernel_size=(1, 2, 3), channels=4))
    assert weight == tensor((4, 2, 1, 2, 3)) and typed.checked_type == tensor((1, 4, 5, 5, 5))
    typed, (_, weight) = inferred(relay.nn.conv3d_transpose(x3, relay.var("w"), kernel_size=(1, 2, 3), channels=4))
    assert weight == tensor((2, 4, 1, 2, 3)) and typed.checked_type == tensor((1, 4, 5, 7, 9))


def test_unknown_input_channels_give_an_unknown_weight_dimension():
    x = relay.var("x", tensor((1, relay.Any(), 8, 8)))
    _, (_, weight) = inferred(relay.nn.conv2d(x, relay.var("w"), kernel_size=(3, 3), channels=2))
    assert weight == tensor((2, relay.Any(), 3, 3))


def test_dense_and_matmul_weights_from_units():
    x = relay.var("x", tensor((4, 10), "float16"))
    typed, (_, weight) = inferred(relay.nn.dense(x, relay.var("w"), units=3))
    assert weight == tensor((3, 10), "float16") and typed.checked_type == tensor((4, 3), "float16")
    typed, (_, weight) = inferred(relay.nn.matmul(x, relay.var("w"), units=5, transpose_b=False))
    assert weight == tensor((10, 5), "float16") and typed.checked_type == tensor((4, 5), "float16")
    y = relay.var("y", tensor((10, 4)))
    typed, (_, weight) = inferred(relay.nn.matmul(y, relay.var("w"), units=6, transpose_a=True, transpose_b=True))
    assert weight == tensor((6, 10)) and typed.checked_type == tensor((4, 6))


@pytest.mark.parametrize("axis, size", [(1, 3), (-1, 5), (0, 2)])
def test_bias_add_and_prelu_vectors_follow_the_axis(axis, size):
    x = relay.var("x", tensor((2, 3, 4, 5)))
    for build in (relay.nn.bias_add, relay.nn.prelu):
        typed, (_, vector) = inferred(build(x, relay.var("v"), axis=axis))
        assert vector == tensor((size,)) and typed.checked_type == tensor((2, 3, 4, 5))


def test_normalization_parameters():
    x = relay.var("x", tensor((2, 3, 4, 6)))
    params = [relay.var(name) for name in ("gamma", "beta", "mean", "var")]
    typed = run_infer_type(relay.nn.batch_norm(x, *params, axis=3).astuple())
    assert [p.checked_type for p in typed.args[1:]] == [tensor((6,))] * 4
    assert typed.checked_type == relay.TupleType([tensor((2, 3, 4, 6)), tensor((6,)), tensor((6,))])
    for build, size in (
        (lambda g, b: relay.nn.layer_norm(x, g, b), 6),
        (lambda g, b: relay.nn.instance_norm(x, g, b), 3),
        (lambda g, b: relay.nn.group_norm(x, g, b, num_groups=3), 3),
    ):
        _, (_, gamma, beta) = inferred(build(relay.var("g"), relay.var("b")))
        assert gamma == beta == tensor((size,))


def test_inferred_parameters_type_the_function_and_run():
    x = relay.var("x", tensor((1, 2, 5, 5)))
    w, b = relay.var("w"), relay.var("b")
    body = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, kernel_size=(3, 3), channels=3), b))
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x, w, b], body)))
    assert mod["main"].checked_type == relay.FuncType(
        [tensor((1, 2, 5, 5)), tensor((3, 2, 3, 3)), tensor((3,))], tensor((1, 3, 3, 3))
    )
    rng = np.random.default_rng(0)
    data, weight, bias = (rng.standard_normal(s).astype(F32) for s in ((1, 2, 5, 5), (3, 2, 3, 3), (3,)))
    out = np.asarray(transpile.compile(mod, backend="interpreter")(data, weight, bias))
    windows = np.lib.stride_tricks.sliding_window_view(data[0], (3, 3), axis=(1, 2))  # (2, 3, 3, 3, 3)
    expected = np.einsum("chwij,ocij->ohw", windows, weight) + bias[:, None, None]
    np.testing.assert_allclose(out[0], np.maximum(expected, 0), rtol=1e-5, atol=1e-5)


def test_a_later_application_must_agree_with_the_inferred_type():
    src = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %v: Tensor[(4, 3, 5, 5), float32]) {
  let %f = fn (%w) { nn.conv2d(%x, %w, channels=4, kernel_size=[3, 3]) };
  %f(%v)
}
"""
    type_error(src, "expected Tensor[(4, 3, 3, 3), float32] but found Tensor[(4, 3, 5, 5), float32]", line=4)


# ----- conflicts and what cannot be inferred -----------------------------------------------------


def test_a_weight_typed_by_one_call_is_checked_by_the_next():
    src = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w) {
  let %a = nn.conv2d(%x, %w, channels=4, kernel_size=[3, 3]);
  let %b = nn.conv2d(%x, %w, channels=5, kernel_size=[3, 3]);
  (%a, %b)
}
"""
    type_error(src, "weight Tensor[(4, 3, 3, 3), float32] does not match channels=5", line=4)


def test_a_conflicting_use_of_the_inferred_weight_is_reported_where_it_is_used():
    src = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w) {
  let %a = nn.conv2d(%x, %w, channels=4, kernel_size=[3, 3]);
  add(%w, ones(shape=[4, 3, 5, 5], dtype="float32"))
}
"""
    type_error(src, "add:", "(4, 3, 3, 3) and (4, 3, 5, 5)", line=4)


def test_an_argument_known_to_be_no_tensor_conflicts_with_the_implied_type():
    src = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w) {
  let %r = ref_read(%w);
  nn.conv2d(%x, %w, channels=4, kernel_size=[3, 3])
}
"""
    type_error(
        src,
        "expected Tensor[(4, 3, 3, 3), float32] but found ref(_) in argument 2 of nn.conv2d",
        "the type its other arguments and attributes imply",
        line=4,
    )


@pytest.mark.parametrize(
    "call, missing",
    [
        ("nn.conv2d(%x, %w)", "argument 2"),
        ("nn.conv2d(%x, %w, kernel_size=[3, 3])", "argument 2"),
        ("nn.bias_add(%w, %x)", "argument 1"),
    ],
)
def test_without_the_attributes_an_unknown_argument_stays_an_error(call, missing):
    src = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w) {{
  {call}
}}
"""
    type_error(src, "cannot infer argument types of nn.", f"({missing} has an unknown type)", "annotate it", line=3)


def test_bad_data_is_reported_while_inferring_the_weight():
    src = """#[version = "0.0.5"]
def @main(%x: Tensor[(3, 8, 8), float32], %w) {
  nn.conv2d(%x, %w, channels=4, kernel_size=[3, 3])
}
"""
    type_error(src, "nn.conv2d: data must have rank 4", line=3)
    bias = """#[version = "0.0.5"]
def @main(%x: Tensor[(3, 8), float32], %b) {
  nn.bias_add(%x, %b, axis=2)
}
"""
    type_error(bias, "nn.bias_add: axis 2 is out of range", line=3)


# ----- what inference leaves on the nodes ---------------------------------------------------------


def test_operator_calls_get_their_argument_types_as_type_args():
    x, y = relay.var("x", shape=(10, 10)), relay.var("y", shape=(1, 10))
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.add(x, y)))
    type_args = mod["main"].body.type_args
    assert isinstance(type_args, InferredTypeArgs)
    assert list(type_args) == [tensor((10, 10)), tensor((1, 10))]
    assert [d.value for d in type_args[0].shape] == [10, 10] and type_args[0].shape[0].dtype == "int32"
    dense = run_infer_type(relay.nn.dense(relay.var("a", shape=(4, 2)), relay.var("w"), units=3))
    assert dense.type_args[1].shape == (3, 2)


def test_polymorphic_calls_get_their_instantiation_and_explicit_type_args_stay():
    mod = relay.parse(
        """#[version = "0.0.5"]
def @id[A](%x: A) -> A { %x }
def @main(%f: float32) -> float32 { @id(%f) }
"""
    )
    mod = relay.transform.InferType()(mod)
    call = mod["main"].body
    relay.assert_structural_equal(call.type_args, [relay.scalar_type(F32)])
    assert call.explicit_type_args == ()
    explicit = relay.Call(mod.get_global_var("id"), [relay.const(1.0)], type_args=[relay.scalar_type(F32)])
    typed = relay.infer_type_expr(explicit, mod)
    assert typed.explicit_type_args == (relay.scalar_type(F32),)


def test_stale_inferred_type_args_do_not_constrain_a_rebuilt_call():
    mod = relay.parse(
        """#[version = "0.0.5"]
def @id[A](%x: A) -> A { %x }
def @main(%f: float32) -> float32 { @id(%f) }
"""
    )
    call = relay.transform.InferType()(mod)["main"].body
    rebuilt = relay.Call(call.op, [relay.const(np.int8(3))], call.attrs, call.type_args)
    assert isinstance(rebuilt.type_args, InferredTypeArgs)
    assert relay.infer_type_expr(rebuilt, mod).checked_type == relay.scalar_type("int8")


def test_module_inference_annotates_parameters_on_new_nodes():
    x, w = relay.var("x", tensor((4, 3))), relay.var("w")
    func = relay.Function([x, w], relay.nn.dense(x, w, units=2))
    typed = run_infer_type(func)
    assert [p.type_annotation for p in typed.params] == [tensor((4, 3)), tensor((2, 3))]
    assert typed.params[0] is x and w.type_annotation is None  # the caller's nodes stay as they were
    assert typed.checked_type == relay.FuncType([tensor((4, 3)), tensor((2, 3))], tensor((4, 2)))


def test_rewritten_bodies_keep_parameter_types_through_the_pipeline():
    x = relay.var("x", tensor((1, 2, 5, 5)))
    w, b = relay.var("w"), relay.var("b")
    body = relay.nn.bias_add(relay.nn.conv2d(x, w, kernel_size=(3, 3), channels=3), b)
    mod = relay.IRModule.from_expr(relay.Function([x, w, b], body))
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s).astype(F32) for s in ((1, 2, 5, 5), (3, 2, 3, 3), (3,))]
    # The optimizer canonicalizes bias_add into expand_dims + add: only the annotation keeps %b typed.
    outs = [np.asarray(transpile.compile(mod, backend=b)(*args)) for b in ("interpreter", "python")]
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)


def test_structural_equality_reads_missing_annotations_as_inferred_types():
    def program(annotated):
        w = relay.var("w", tensor((2, 3))) if annotated else relay.var("w")
        x = relay.var("x", tensor((4, 3)))
        return relay.Function([x, w], relay.nn.dense(x, w, units=2), tensor((4, 2)) if annotated else None)

    plain, annotated = program(False), program(True)
    typed = relay.infer_type_expr(program(False))  # typed in place: no annotations added
    assert typed.params[1].type_annotation is None
    assert relay.structural_equal(typed, annotated)
    assert relay.structural_hash(typed) == relay.structural_hash(annotated)
    assert not relay.structural_equal(plain, annotated)  # never inferred: nothing to compare with
    assert relay.structural_equal(plain, typed)  # type_args filled in by inference are not compared
    other = relay.var("w", tensor((5, 3)))
    assert not relay.structural_equal(typed.params[1], other, map_free_vars=True)


def test_same_as_is_identity_and_constants_take_a_scalar_type_as_dtype():
    x = relay.var("x", F32)
    typed = relay.transform.InferTypeLocal(relay.add(x, x))
    assert typed == relay.scalar_type(F32)
    assert x.same_as(x) and not x.same_as(relay.var("x", F32))
    assert relay.const(0, relay.scalar_type("int32")).data.dtype == np.int32


@pytest.fixture
def scratch_registry(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def test_a_python_relation_raising_reaches_the_caller_unchanged(scratch_registry):
    from transpile.relay.op import op as _op

    def relation(arg_types, attrs):
        assert len(arg_types) == 2, "two inputs expected"

    _op.register("test_argtype_custom")
    _op.get("test_argtype_custom").set_num_inputs(1)
    _op.get("test_argtype_custom").add_type_rel("custom", relation)
    x = relay.var("x", shape=(2,))
    with pytest.raises(AssertionError, match="two inputs expected"):
        relay.infer_type_expr(relay.Function([x], relay.Call(_op.get("test_argtype_custom"), [x])))
