"""FuseOps' barriers and limits: annotation.stop_fusion and the target's max_function_args."""

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.passes.anf import to_anf
from transpile.passes.fusion import fuse
from transpile.relay.transform import FuseOps, InferType
from transpile.tvm_compat.target import Target

SHAPE = (4, 6)


def _mod(func):
    return InferType()(relay.IRModule.from_expr(func))


def _kernels(expr):
    """The Primitive functions called in a graph-form body, in evaluation order (innermost first)."""
    found = []

    def walk(node):
        if isinstance(node, relay.Call):
            for arg in node.args:
                walk(arg)
            if isinstance(node.op, relay.Function) and node.op.attrs and node.op.attrs.get("Primitive"):
                found.append(node.op)
        elif isinstance(node, relay.Tuple):
            for field in node.fields:
                walk(field)

    walk(expr)
    return found


def _op_names(func):
    names = []

    def walk(node):
        if isinstance(node, relay.Call):
            for arg in node.args:
                walk(arg)
            names.append(node.op.name)

    walk(func.body)
    return names


def _stop_fusion_program():
    x = relay.var("x", shape=SHAPE)
    y = relay.annotation.stop_fusion(relay.add(x, relay.const(1.0)))
    return relay.Function([x], relay.exp(y))


def test_stop_fusion_cuts_the_group_and_fuse_ops_drops_it():
    fused = FuseOps(fuse_opt_level=2)(_mod(_stop_fusion_program()))
    kernels = _kernels(fused["main"].body)
    assert [_op_names(k) for k in kernels] == [["add"], ["exp"]]
    assert "stop_fusion" not in fused["main"].astext()
    # Without the annotation the two operators are one kernel.
    x = relay.var("x", shape=SHAPE)
    plain = FuseOps(fuse_opt_level=2)(_mod(relay.Function([x], relay.exp(relay.add(x, relay.const(1.0))))))
    assert [_op_names(k) for k in _kernels(plain["main"].body)] == [["add", "exp"]]


@pytest.mark.parametrize("backend", ["interpreter", "python", "cpp", "tir"])
def test_annotations_are_identities_on_every_backend(backend):
    x = relay.var("x", shape=SHAPE)
    y = relay.annotation.stop_fusion(relay.add(x, relay.const(1.0)))
    y = relay.annotation.checkpoint(relay.exp(y))
    y = relay.annotation.compiler_end(relay.annotation.compiler_begin(y, "ccompiler"), compiler="ccompiler")
    mod = relay.IRModule.from_expr(relay.Function([x], relay.negative(y)))
    data = np.random.default_rng(0).uniform(-1, 1, SHAPE).astype("float32")
    out = transpile.compile(mod, backend=backend)(data)
    np.testing.assert_allclose(np.asarray(out), -np.exp(data + 1), rtol=1e-6)


def test_annotations_print_and_parse_back():
    x = relay.var("x", shape=SHAPE)
    expr = relay.annotation.compiler_begin(relay.annotation.stop_fusion(x), compiler="dnnl")
    text = relay.Function([x], expr).astext()
    assert '%0 = annotation.stop_fusion(%x);\n  annotation.compiler_begin(%0, compiler="dnnl")' in text
    back = relay.parse(text.replace("fn (", "def @main(", 1))
    relay.assert_structural_equal(back["main"].body, relay.Function([x], expr).body, map_free_vars=True)


def _sum_of_chains(count, shape):
    inputs, total = [], None
    for i in range(count):
        x = relay.var(f"x{i}", shape=shape)
        inputs.append(x)
        term = relay.exp(relay.add(x, relay.const(1.0)))
        total = term if total is None else relay.add(total, term)
    return relay.Function(inputs, total)


@pytest.mark.parametrize(
    "target, shape, chains_in_first_kernel",
    [
        # Every chain passes one tensor; the limit less the output leaves 30 (metal) or 127 (opencl).
        ("metal", (3, 2), 30),
        # A tensor with an `?` dimension also passes its shape and strides: 1 + 1 + 2 per chain;
        # the output passes 1 + 1, leaving 29 = 7 chains.
        ("metal", (relay.Any(), 2), 7),
        ("opencl", (3, 2), 127),
    ],
)
def test_the_targets_argument_limit_bounds_each_kernel(target, shape, chains_in_first_kernel):
    count = 140
    with Target(target), relay.transform.PassContext(config={"relay.FuseOps.max_depth": 1000}):
        fused = FuseOps()(_mod(_sum_of_chains(count, shape)))
    kernels = _kernels(fused["main"].body)
    first = max(kernels, key=lambda k: len(k.params))
    assert len(first.params) == chains_in_first_kernel
    # Every later chain is a kernel of its own, and every later accumulation too.
    remaining = count - chains_in_first_kernel
    assert len(kernels) == 1 + 2 * remaining
    # Without a target in scope there is no limit: one kernel takes every input.
    with relay.transform.PassContext(config={"relay.FuseOps.max_depth": 1000}):
        unlimited = FuseOps()(_mod(_sum_of_chains(count, shape)))
    assert [len(k.params) for k in _kernels(unlimited["main"].body)] == [count]


def test_the_compiler_pipeline_fusion_has_no_argument_limit_by_default():
    mod = to_anf(_mod(_sum_of_chains(40, (2,))))
    fused_default = fuse(mod, 1000)
    fused_limited = fuse(mod, 1000, max_function_args=10)
    assert fused_default["main"].astext().count("Primitive=1") == 1
    assert fused_limited["main"].astext().count("Primitive=1") > 1
