"""TVM's `tvm.testing` for Relay test code: tolerances, targets (the host CPU only), pytest helpers.

Backend-neutral helpers are apache-tvm's own (`assert_allclose`, `check_numerical_grads`,
`parameter`, `fixture`, `slow`); the target machinery is transpile's: `enabled_targets()` is
[("llvm", cpu(0))], `uses_gpu` tests run on the CPU, `requires_<accelerator>` tests are skipped.
The `target`/`dev` fixtures and `parameters` need the pytest plugin
`transpile.tvm_compat.testing.plugin` (TVM loaded `tvm.testing.plugin` from its conftest.py).
"""

from __future__ import annotations

import inspect
import sys

import pytest
import tvm.testing as _real

from ..device import DEVICE_TYPES, device
from .features import FEATURES, Feature, feature, requires_package

__all__ = [
    "assert_allclose",
    "check_numerical_grads",
    "parameter",
    "parameters",
    "fixture",
    "slow",
    "enabled_targets",
    "device_enabled",
    "parametrize_targets",
    "exclude_targets",
    "known_failing_targets",
    "uses_gpu",
    "uses_multi_gpu",
    "requires_package",
    "skip_if_32bit",
    "Feature",
    "main",
]

assert_allclose = _real.assert_allclose
check_numerical_grads = _real.check_numerical_grads
parameter = _real.parameter
fixture = _real.fixture
slow = _real.slow
skip_if_32bit = _real.skip_if_32bit

# The targets whose code runs on the host CPU: every transpile backend builds for it.
HOST_TARGET_KINDS = ("llvm", "c")
DEFAULT_TARGETS = ("llvm",)

uses_gpu = FEATURES["gpu"](support_required="optional")
uses_multi_gpu = FEATURES["multi_gpu"](support_required="optional")


def __getattr__(name):
    # requires_<feature>: a skip decorator for any capability (those this machine lacks skip).
    if name.startswith("requires_"):
        return feature(name[len("requires_") :])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _target_kind(target) -> str:
    if isinstance(target, str):
        return target.split()[0] if target.strip() else ""
    return getattr(getattr(target, "kind", None), "name", str(target))


def device_enabled(target) -> bool:
    """Whether tests for `target` run here: only host-CPU targets do."""
    return _target_kind(target) in HOST_TARGET_KINDS


def _get_targets(target_names=None) -> list[dict]:
    """[{target, target_kind, is_enabled, is_runnable}] as TVM's plugin consumed them."""
    names = target_names or DEFAULT_TARGETS
    return [
        {
            "target": name,
            "target_kind": _target_kind(name),
            "is_enabled": device_enabled(name),
            "is_runnable": device_enabled(name),
        }
        for name in names
    ]


def enabled_targets() -> list:
    """[(target, device)] tests should run on: [("llvm", cpu(0))]."""
    return [(t["target"], device(t["target"])) for t in _get_targets() if t["is_runnable"]]


def _target_param(target):
    """`target` as a parametrize value, skipped unless it runs on the host CPU."""
    kind = _target_kind(target)
    if kind in HOST_TARGET_KINDS:
        return target
    long_name = kind if kind in DEVICE_TYPES else f"target {kind!r}"
    return pytest.param(target, marks=pytest.mark.skip(reason=f"needs {long_name}; transpile runs on the host CPU"))


def parametrize_targets(*args):
    """Runs a test(target, dev) once per given target (non-host ones skipped); bare: over enabled targets."""
    if len(args) == 1 and callable(args[0]):
        return args[0]  # the plugin parametrizes every test taking `target`
    return pytest.mark.parametrize("target", [_target_param(t) for t in args], scope="session")


def exclude_targets(*args):
    """Leaves the given targets out of the automatic `target` parametrization."""

    def wraps(func):
        func.tvm_excluded_targets = args
        return func

    return wraps


def known_failing_targets(*args):
    """Marks the test xfail on the given targets."""

    def wraps(func):
        func.tvm_known_failing_targets = args
        return func

    return wraps


_parametrize_group = 0


def parameters(*value_sets, ids=None):
    """Correlated parametrized fixtures: `a, b = parameters((1, "x"), (2, "y"))` gives 2 cases, not 4."""
    global _parametrize_group
    group = _parametrize_group
    _parametrize_group += 1
    outputs = []
    for values in zip(*value_sets):

        def fixture_func(*_cls, request):
            return request.param

        fixture_func.parametrize_group = group
        fixture_func.parametrize_values = values
        fixture_func.parametrize_ids = ids
        outputs.append(pytest.fixture(fixture_func))
    return outputs


def main():
    """Runs pytest on the calling file (the `if __name__ == "__main__": tvm.testing.main()` idiom)."""
    test_file = inspect.getsourcefile(sys._getframe(1))
    sys.exit(pytest.main([test_file, "-p", "transpile.tvm_compat.testing.plugin", *sys.argv[1:]]))
