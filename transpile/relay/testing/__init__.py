"""TVM's `relay.testing` helpers: running passes on expressions, numeric gradient checks, nat values.

run_infer_type(expr)            # expr (or Function) with its types inferred
run_opt_pass(expr, pass_)       # expr after one pass, run on a module wrapping it
check_grad(func)                # analytic (relay.transform.gradient) vs numeric gradients
count(prelude, n) / make_nat_value(prelude, n) / make_nat_expr(prelude, n)
run_as_python(expr, mod) / to_python(expr, mod)
resnet, mobilenet, dqn, … .get_workload(...)  # test networks as (module, params); layers: their building blocks
"""

from __future__ import annotations

import collections

import numpy as np

from ...errors import TranspileError
from . import init, mlp
from . import dcgan, densenet, dqn, inception_v3, layers, lstm, mobilenet, resnet, resnet_3d, squeezenet, synthetic, vgg
from .init import create_workload
from .nat import add_nat_definitions, count, get_type, make_nat_expr, make_nat_value
from .py_converter import run_as_python, to_python

__all__ = [
    "run_opt_pass",
    "run_infer_type",
    "check_grad",
    "rand",
    "count_ops",
    "count",
    "make_nat_value",
    "make_nat_expr",
    "add_nat_definitions",
    "get_type",
    "run_as_python",
    "to_python",
    "enabled_targets",
    "create_workload",
    "init",
    "mlp",
    "layers",
    "resnet",
    "mobilenet",
    "synthetic",
    "dqn",
    "dcgan",
    "squeezenet",
    "inception_v3",
    "densenet",
    "lstm",
    "resnet_3d",
    "vgg",
]


def enabled_targets():
    """The (target, device) pairs executors run on: the host CPU only."""
    from ...tvm_compat.testing import enabled_targets as targets

    return targets()


def run_opt_pass(expr, opt_pass, import_prelude=False):
    """`expr` after `opt_pass`, run on a module wrapping it as @main (typed first); a Function stays one."""
    from .. import transform
    from ..expr import Function
    from ..module import IRModule
    from ..prelude import Prelude

    if not isinstance(opt_pass, transform.Pass):
        raise TranspileError(f"run_opt_pass expects a relay.transform pass, got {type(opt_pass).__name__}")
    mod = IRModule.from_expr(expr)
    if import_prelude:
        Prelude(mod)
    mod = transform.InferType()(mod)
    mod = opt_pass(mod)
    entry = mod["main"]
    return entry if isinstance(expr, Function) else entry.body


def run_infer_type(expr):
    """`expr` with its types inferred (checked_type set), through a module wrapping it."""
    from .. import transform

    return run_opt_pass(expr, transform.InferType())


def _random_like(ty, scale, mean):
    values = mean + scale * np.random.randn(*(int(d) for d in ty.shape))
    return np.asarray(values).astype(ty.dtype)


def check_grad(
    func,
    inputs=None,
    test_inputs=None,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    scale=None,
    mean=0,
    mode="higher_order",
    target_devices=None,
    executor_kind="debug",
):
    """Checks relay.transform.gradient(func) against two-sided numeric differences of func.

    The gradient function must return (result, (d/d param, ...)); numeric gradients are of the sum
    of the result. `inputs` default to random normals of scale `scale` (10 * eps); only
    `test_inputs` (default: all inputs, matched by identity) are compared.
    """
    from ..backend import create_executor
    from ..transform import gradient

    forward = run_infer_type(func)
    backward = run_infer_type(gradient(forward, mode=mode))
    if scale is None:
        scale = 10 * eps
    if inputs is None:
        inputs = [_random_like(param.checked_type, scale, mean) for param in forward.params]
    if test_inputs is None:
        test_inputs = inputs
    for target, device in target_devices or enabled_targets():
        run_backward = create_executor(executor_kind, device=device, target=target).evaluate(backward)
        run_forward = create_executor(executor_kind, device=device, target=target).evaluate(forward)
        _, grads = run_backward(*inputs)
        grads = [np.asarray(grad).astype("float64") for grad in grads]
        if test_inputs is not inputs:
            grads = [grads[_position_of(inputs, tested)] for tested in test_inputs]
        if not grads:
            raise TranspileError("check_grad: no input to test the gradient of")
        for tested, grad in zip(test_inputs, grads):
            numeric = np.zeros(tested.shape)
            for index in np.ndindex(*tested.shape):
                original = tested[index]
                tested[index] = original + eps
                plus = np.asarray(run_forward(*inputs)).astype("float64")
                tested[index] = original - eps
                minus = np.asarray(run_forward(*inputs)).astype("float64")
                tested[index] = original
                numeric[index] = np.sum((plus - minus) / (2 * eps))
            np.testing.assert_allclose(grad, numeric, atol=atol, rtol=rtol)


def _position_of(inputs, tested) -> int:
    for position, candidate in enumerate(inputs):
        if candidate is tested:
            return position
    raise TranspileError("check_grad: every test input must be one of the inputs (the same array object)")


def rand(dtype, *shape):
    """An NDArray of uniform [0, 1) values."""
    from ..backend.values import to_ndarray

    return to_ndarray(np.random.rand(*shape).astype(dtype))


def count_ops(expr) -> collections.Counter:
    """How many times each operator is called in `expr`."""
    from ..expr import Call, Op
    from ..visitor import ExprVisitor

    counter = collections.Counter()

    class _OpCounter(ExprVisitor):
        def visit_call(self, call: Call):
            if isinstance(call.op, Op):
                counter[call.op.name] += 1
            return super().visit_call(call)

    _OpCounter().visit(expr)
    return counter
