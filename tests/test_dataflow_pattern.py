"""relay.dataflow_pattern: building patterns, matching them with TVM's semantics, rewriting."""

import numpy as np
import pytest

from transpile import relay
from transpile.relay.dataflow_pattern import (
    DFPatternCallback,
    DFPatternError,
    has_attr,
    has_dtype,
    has_shape,
    is_constant,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    rewrite,
    wildcard,
)

x = relay.var("x", shape=(2, 3))
y = relay.var("y", shape=(2, 3))


def test_call_patterns_match_operator_and_arguments():
    dense = relay.nn.dense(x, relay.var("w", shape=(4, 3)))
    assert is_op("nn.dense")(wildcard(), wildcard()).match(dense)
    assert not is_op("nn.dense")(wildcard(), wildcard()).match(relay.add(x, y))
    assert is_op("nn.dense")(None).match(dense)  # any arguments
    assert not is_op("nn.dense")(wildcard()).match(dense)  # wrong arity
    assert is_op("add")(is_var("x"), is_var()).match(relay.add(x, y))
    assert not is_op("add")(is_var("z"), wildcard()).match(relay.add(x, y))
    with pytest.raises(DFPatternError, match="not registered"):
        is_op("no_such_op")


def test_add_and_multiply_match_commutatively_only():
    assert is_op("add")(wildcard(), is_constant()).match(relay.add(relay.const(1.0), x))
    assert is_op("multiply")(is_constant(), wildcard()).match(relay.multiply(x, relay.const(2.0)))
    assert not is_op("subtract")(wildcard(), is_constant()).match(relay.subtract(relay.const(1.0), x))


def test_a_pattern_used_twice_must_meet_the_same_expression():
    same = wildcard()
    assert is_op("add")(same, same).match(relay.add(x, x))
    assert not is_op("add")(same, same).match(relay.add(x, y))


def test_alternatives_optional_and_python_operators():
    conv_or_dense = is_op("nn.dense")(wildcard(), wildcard()) | is_op("nn.relu")(wildcard())
    assert conv_or_dense.match(relay.nn.relu(x))
    with_relu = wildcard().optional(lambda p: is_op("nn.relu")(p))
    assert with_relu.match(relay.nn.relu(x)) and with_relu.match(x)
    assert (wildcard() * wildcard() + is_constant()).match(relay.add(relay.multiply(x, y), relay.const(1.0)))


def test_tuples_types_and_attributes():
    tup = relay.Tuple([x, y])
    assert is_tuple([wildcard(), is_var("y")]).match(tup)
    assert is_tuple(None).match(tup) and not is_tuple([wildcard()]).match(tup)
    assert is_tuple_get_item(wildcard(), 1).match(relay.TupleGetItem(tup, 1))
    assert is_tuple_get_item(wildcard()).match(relay.TupleGetItem(tup, 0))
    assert not is_tuple_get_item(wildcard(), 1).match(relay.TupleGetItem(tup, 0))
    assert has_dtype("float32").match(relay.add(x, y))
    assert not has_dtype("int32").match(x)
    assert has_shape((2, 3)).match(relay.add(x, y)) and not has_shape((3, 2)).match(x)
    assert is_op("add").has_attr({"TOpPattern": int(relay.OpPattern.BROADCAST)})(wildcard(), wildcard()).match(
        relay.add(x, y)
    )
    summed = relay.sum(x, axis=[1])
    assert is_op("sum")(wildcard()).has_attr({"axis": [1]}).match(summed)
    assert not has_attr({"axis": [0]}).match(summed)


def test_rewrite_replaces_matches_bottom_up():
    class AddZeroToIdentity(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.value = wildcard()
            self.pattern = is_op("add")(self.value, is_constant())

        def callback(self, pre, post, node_map):
            constant = post.args[1] if isinstance(post.args[1], relay.Constant) else post.args[0]
            if np.all(constant.data == 0):
                return node_map[self.value][0]
            return post

    zero = relay.const(0.0)
    expr = relay.nn.relu(relay.add(relay.add(x, zero), zero))
    rewritten = rewrite(AddZeroToIdentity(), expr)
    relay.assert_structural_equal(rewritten, relay.nn.relu(x))
    kept = relay.add(x, relay.const(1.0))
    assert rewrite(AddZeroToIdentity(), kept) is kept


def test_vm_style_composite_pattern_import():
    import transpile.tvm_compat.relay.dataflow_pattern as compat

    assert compat.is_op is is_op and compat.wildcard is wildcard
