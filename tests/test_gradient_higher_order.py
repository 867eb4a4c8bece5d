"""Higher-order reverse-mode AD (gradient's default mode): control flow, closures, recursion, references, tuples, ADTs.

Every program is checked against central differences (float64) of the sum of its first output
tensor (the seed of higher-order mode), on the interpreter and the Python backend; a few run on
cpp against the interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.relay.prelude import Prelude
from transpile.relay.testing import count_ops
from transpile.relay.transform.gradient import GradientError

RNG = np.random.default_rng(20261125)
BACKENDS = ["interpreter", "python"]
HEADER = '#[version = "0.0.5"]\n'


def _data(*shape):
    return RNG.standard_normal(shape).astype("float64")


def _leaves(value) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _rebuild(structure, leaves: list):
    """`structure` (nested tuples of arrays) with its leaves replaced, in order, by `leaves` (consumed)."""
    if isinstance(structure, (tuple, list)):
        return tuple(_rebuild(item, leaves) for item in structure)
    return leaves.pop(0)


def _first_tensor(value):
    while not isinstance(value, np.ndarray):
        value = value[0]
    return value


def _gradient_module(mod: relay.IRModule) -> relay.IRModule:
    """A copy of `mod` whose @main is the gradient of `mod`'s @main (the @f_grad globals go into `mod`)."""
    grad_func = relay.transform.gradient(mod.get_global_var("main"), mod)
    grad_mod = mod.copy()
    grad_mod["main"] = grad_func
    return grad_mod


def check_numeric(mod: relay.IRModule, backend: str, *inputs, eps=1e-6, rtol=1e-5, atol=1e-7):
    """The analytic gradients of @main against central differences; returns (forward result, gradients)."""
    result, grads = transpile.compile(_gradient_module(mod), backend=backend)(*inputs)
    forward = transpile.compile(mod, backend=backend)
    np.testing.assert_allclose(_first_tensor(result), _first_tensor(forward(*inputs)), rtol=1e-12)
    leaves = _leaves(inputs)
    analytic = _leaves(grads)
    assert len(analytic) == len(leaves)
    for position, (leaf, grad) in enumerate(zip(leaves, analytic)):
        assert np.asarray(grad).shape == leaf.shape and np.asarray(grad).dtype == leaf.dtype
        if leaf.dtype.kind != "f":
            np.testing.assert_array_equal(grad, np.zeros_like(leaf))  # integers take no gradient
            continue
        numeric = np.zeros(leaf.shape)
        for index in np.ndindex(*leaf.shape):
            sums = []
            for step in (eps, -eps):
                moved = [x.copy() for x in leaves]
                moved[position][index] += step
                sums.append(float(np.sum(_first_tensor(forward(*_rebuild(inputs, moved))))))
            numeric[index] = (sums[0] - sums[1]) / (2 * eps)
        np.testing.assert_allclose(grad, numeric, rtol=rtol, atol=atol, err_msg=f"gradient of input leaf {position}")
    return result, grads


def _module(text: str) -> relay.IRModule:
    return relay.parse(HEADER + text)


# ---------------------------------------------------------------- programs

DATAFLOW = """
def @main(%x: Tensor[(2, 3), float64], %w: Tensor[(3, 3), float64]) {
  let %e = exp(%x);
  sum(tanh(nn.dense(%x, %w, units=3)) * %e + %e * %e)
}
"""

BRANCHY = """
def @main(%x: Tensor[(3), float64], %y: Tensor[(3), float64]) {
  if (greater(sum(%x), 0f64)) { %x * %y * %y } else { exp(%y) - %x }
}
"""

CLOSURE = """
def @main(%x: Tensor[(3), float64], %y: Tensor[(3), float64]) {
  let %f = fn (%z: Tensor[(3), float64]) { %z * %y + sin(%z) };
  %f(%f(%x))
}
"""

RECURSIVE = """
def @mul_n(%acc: Tensor[(2), float64], %x: Tensor[(2), float64], %n: int32) -> Tensor[(2), float64] {
  if (less_equal(%n, 0)) { %acc } else { @mul_n(%acc * %x, %x, subtract(%n, 1)) }
}
def @main(%x: Tensor[(2), float64], %y: Tensor[(2), float64], %n: int32) {
  @mul_n(%y, %x, %n)
}
"""

TUPLES = """
def @main(%p: (Tensor[(3), float64], Tensor[(2), float64]), %x: Tensor[(3), float64]) {
  let %s = sum(%p.1);
  (%p.0 * %x * %s, (%s, %x))
}
"""

REFERENCE = """
def @main(%x: Tensor[(3), float64], %y: Tensor[(3), float64]) {
  let %r = ref(%x);
  let %a = ref_write(%r, ref_read(%r) * %y);
  let %b = ref_write(%r, ref_read(%r) + cos(%x));
  ref_read(%r) * ref_read(%r)
}
"""


def _sum_of_squares_module() -> relay.IRModule:
    """@main(a, b, c) = foldl(fn(acc, e) { acc + e * e }, zeros, [a, b, c]) over the Prelude's List."""
    mod = relay.IRModule()
    prelude = Prelude(mod)
    cons, nil = prelude.get_ctor("List", "Cons"), prelude.get_ctor("List", "Nil")
    foldl = prelude.get_global_var("foldl")
    t = relay.TensorType((2,), "float64")
    a, b, c = (relay.var(name, t) for name in "abc")
    acc, e = relay.var("acc", t), relay.var("e", t)
    step = relay.Function([acc, e], acc + e * e)
    items = cons(a, cons(b, cons(c, nil())))
    mod["main"] = relay.Function([a, b, c], foldl(step, relay.const(np.zeros(2)), items))
    return mod


@pytest.mark.parametrize("backend", BACKENDS)
def test_dataflow_function_with_shared_values(backend):
    check_numeric(_module(DATAFLOW), backend, _data(2, 3), _data(3, 3))


TUPLE_OPERATORS = """
def @main(%x: Tensor[(2, 3), float64], %y: Tensor[(2, 2), float64]) {
  let %c = concatenate((%x, %y), axis=1);
  let %s = split(%c, indices_or_sections=[1, 4], axis=1);
  let %t = stack((%s.0, %s.2), axis=0);
  sum(%t * %t) + sum(sin(%s.1))
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_operators_taking_and_returning_tuples(backend):
    check_numeric(_module(TUPLE_OPERATORS), backend, _data(2, 3), _data(2, 2))


def test_a_shared_node_is_computed_once_and_its_rule_reuses_it():
    x = relay.var("x", shape=(4,), dtype="float64")
    e = relay.exp(x)  # one node used three times (graph form, no let)
    grad_func = relay.transform.gradient(relay.Function([x], relay.sum(e * e + e)))
    assert count_ops(grad_func)["exp"] == 1
    check_numeric(relay.IRModule.from_expr(relay.Function([x], relay.sum(e * e + e))), "interpreter", _data(4))


@pytest.mark.parametrize("backend", BACKENDS)
def test_if_on_a_runtime_condition_takes_either_branch(backend):
    mod = _module(BRANCHY)
    for sign in (1.0, -1.0):
        x, y = np.abs(_data(3)) * sign, _data(3)
        result, (gx, gy) = check_numeric(mod, backend, x, y)
        if sign > 0:
            np.testing.assert_allclose(result, x * y * y)
            np.testing.assert_allclose(gy, 2 * x * y)
        else:
            np.testing.assert_allclose(result, np.exp(y) - x)
            np.testing.assert_allclose(gx, -np.ones(3))


@pytest.mark.parametrize("backend", BACKENDS)
def test_let_bound_closure_called_twice(backend):
    x, y = _data(3), _data(3)
    result, (gx, gy) = check_numeric(_module(CLOSURE), backend, x, y)
    inner = x * y + np.sin(x)
    np.testing.assert_allclose(result, inner * y + np.sin(inner))
    np.testing.assert_allclose(gx, (y + np.cos(inner)) * (y + np.cos(x)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_recursive_global_multiplying_n_times(backend):
    x, y = _data(2), _data(2)
    for n in (3, 0):
        result, (gx, gy, gn) = check_numeric(_module(RECURSIVE), backend, x, y, np.int32(n))
        np.testing.assert_allclose(result, y * x**n)
        np.testing.assert_allclose(gy, x**n)
        assert gn.dtype == np.int32 and gn == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_parameter_and_tuple_result(backend):
    p, x = (_data(3), _data(2)), _data(3)
    result, (gp, gx) = check_numeric(_module(TUPLES), backend, p, x)
    s = np.sum(p[1])
    first, (second, third) = result
    np.testing.assert_allclose(first, p[0] * x * s)
    np.testing.assert_allclose(second, s)
    np.testing.assert_allclose(third, x)
    # Only the first output is seeded: the other outputs (%s, %x) add nothing to the gradients.
    np.testing.assert_allclose(gp[0], x * s)
    np.testing.assert_allclose(gp[1], np.full(2, np.sum(p[0] * x)))
    np.testing.assert_allclose(gx, p[0] * s)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_through_a_reference(backend):
    x, y = _data(3), _data(3)
    result, (gx, gy) = check_numeric(_module(REFERENCE), backend, x, y)
    v = x * y + np.cos(x)
    np.testing.assert_allclose(result, v * v)
    np.testing.assert_allclose(gy, 2 * v * x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_adt_list_sum_of_squares_through_foldl(backend):
    a, b, c = _data(2), _data(2), _data(2)
    result, grads = check_numeric(_sum_of_squares_module(), backend, a, b, c)
    np.testing.assert_allclose(result, a * a + b * b + c * c)
    for grad, value in zip(grads, (a, b, c)):
        np.testing.assert_allclose(grad, 2 * value)


def test_constructor_passed_as_a_function_value():
    # foldr(Cons, Nil, xs) copies the list: the constructor becomes a closure taking the backpropagator.
    mod = relay.IRModule()
    prelude = Prelude(mod)
    cons, nil = prelude.get_ctor("List", "Cons"), prelude.get_ctor("List", "Nil")
    foldr, foldl = prelude.get_global_var("foldr"), prelude.get_global_var("foldl")
    t = relay.TensorType((2,), "float64")
    a, b, acc, e = (relay.var(name, t) for name in ("a", "b", "acc", "e"))
    copied = foldr(cons, nil(), cons(a, cons(b, nil())))
    mod["main"] = relay.Function([a, b], foldl(relay.Function([acc, e], acc * e), relay.const(np.ones(2)), copied))
    av, bv = _data(2), _data(2)
    result, (ga, gb) = check_numeric(mod, "interpreter", av, bv)
    np.testing.assert_allclose(result, av * bv)
    np.testing.assert_allclose(ga, bv)


# ---------------------------------------------------------------- the function it returns


def test_result_structure_type_and_module_globals():
    mod = _module(RECURSIVE)
    grad_func = relay.transform.gradient(mod.get_global_var("main"), mod)
    t, n = relay.TensorType((2,), "float64"), relay.TensorType((), "int32")
    expected = relay.FuncType([t, t, n], relay.TupleType([t, relay.TupleType([t, t, n])]))
    assert grad_func.checked_type == expected
    assert grad_func.params == mod["main"].params
    assert "mul_n_grad" in [gv.name_hint for gv in mod.get_global_vars()]
    # A second gradient of the same module gets its own copy of the differentiated global.
    relay.transform.gradient(mod.get_global_var("main"), mod)
    assert "mul_n_grad1" in [gv.name_hint for gv in mod.get_global_vars()]
    # The result type-checks again from scratch, as TVM's users re-ran InferType on it.
    relay.transform.InferType()(_gradient_module(mod))


def test_tuple_result_seeds_its_first_tensor_only():
    x = relay.var("x", shape=(3,), dtype="float64")
    grad_func = relay.transform.gradient(relay.Function([x], relay.Tuple([relay.Tuple([]), x * x, x])))
    value = _data(3)
    (_, square, same), (grad,) = transpile.compile(relay.IRModule.from_expr(grad_func), backend="interpreter")(value)
    np.testing.assert_allclose(square, value * value)
    np.testing.assert_allclose(same, value)
    np.testing.assert_allclose(grad, 2 * value)


def test_differentiating_a_gradient_function_gives_second_derivatives():
    x, y = relay.var("x", shape=(3,), dtype="float64"), relay.var("y", shape=(3,), dtype="float64")
    first = relay.transform.gradient(relay.Function([x], x * x * x))
    first_derivative = relay.Function([y], relay.TupleGetItem(relay.TupleGetItem(first(y), 1), 0))
    second = relay.transform.gradient(first_derivative)
    value = _data(3)
    derivative, (second_derivative,) = transpile.compile(relay.IRModule.from_expr(second), backend="interpreter")(value)
    np.testing.assert_allclose(derivative, 3 * value**2)
    np.testing.assert_allclose(second_derivative, 6 * value)


def test_what_higher_order_mode_refuses():
    x = relay.var("x", shape=(3,), dtype="float32")
    a = relay.TypeVar("a")
    z = relay.var("z", a)
    with pytest.raises(GradientError, match="polymorphic"):
        relay.transform.gradient(relay.Function([z], z, type_params=[a]))
    with pytest.raises(GradientError, match="free variable %z"):
        relay.transform.gradient(relay.Function([x], x * relay.var("z", shape=(3,))))
    with pytest.raises(GradientError, match="operator prod has no gradient rule"):
        relay.transform.gradient(relay.Function([x], relay.prod(x)))
    mod = relay.IRModule()
    prelude = Prelude(mod)
    items = relay.var("items", prelude.get_global_type_var("List")(relay.TensorType((3,), "float32")))
    with pytest.raises(GradientError, match="parameter %items has type List.*must be tensors or tuples of them"):
        relay.transform.gradient(relay.Function([items], x), mod)
    with pytest.raises(GradientError, match="the result has type fn"):
        relay.transform.gradient(relay.Function([x], relay.Function([], x)))
    with pytest.raises(GradientError, match="holds no tensor"):
        relay.transform.gradient(relay.Function([x], relay.Tuple([])))
    with pytest.raises(transpile.errors.TranspileError, match="@double is not defined"):
        relay.transform.gradient(relay.Function([x], relay.GlobalVar("double")(x)))
    boxed = _module(
        "type Box { Box(Tensor[(3), float32]) }\n"
        "def @main(%x: Tensor[(3), float32]) { match (Box(%x)) { Box(%y) => %y } }"
    )
    with pytest.raises(GradientError, match="constructor Box has a field of type"):
        relay.transform.gradient(boxed.get_global_var("main"), boxed)


# ---------------------------------------------------------------- cpp


@pytest.mark.parametrize(
    "make_module, inputs",
    [
        (lambda: _module(BRANCHY.replace("%x * %y * %y", "%x * %y * %y + ref_read(ref(%x))")), (_data(3), _data(3))),
        (_sum_of_squares_module, (_data(2), _data(2), _data(2))),
    ],
    ids=["branch_and_ref", "list_foldl"],
)
def test_gradient_programs_on_cpp_match_the_interpreter(make_module, inputs):
    grad_mod = _gradient_module(make_module())
    expected = transpile.compile(grad_mod, backend="interpreter")(*inputs)
    got = transpile.compile(grad_mod, backend="cpp")(*inputs)
    for g, e in zip(_leaves(got), _leaves(expected)):
        np.testing.assert_allclose(g, e, rtol=1e-12)
