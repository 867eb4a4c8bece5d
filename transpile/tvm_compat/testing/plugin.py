"""pytest plugin for TVM-style test files (TVM's conftest loaded `tvm.testing.plugin`).

Enable with `-p transpile.tvm_compat.testing.plugin` or `pytest_plugins = [...]` in a conftest.
It gives tests taking `target` one case per enabled target (the host CPU's "llvm"), minus
`exclude_targets`, xfail for `known_failing_targets`; the `dev` fixture; and the correlated
cases of `tvm.testing.parameters`.
"""

from __future__ import annotations

import pytest

from ..device import device
from . import _get_targets, _target_param


def pytest_generate_tests(metafunc):
    _parametrize_correlated_parameters(metafunc)
    _parametrize_target(metafunc)


@pytest.fixture
def dev(target):
    """The device of the test's target."""
    return device(target)


def _explicitly_parametrized(metafunc, name: str) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        names = names.split(",") if isinstance(names, str) else list(names)
        if name in (n.strip() for n in names):
            return True
    return False


def _parametrize_target(metafunc):
    if "target" not in metafunc.fixturenames or _explicitly_parametrized(metafunc, "target"):
        return
    excluded = getattr(metafunc.function, "tvm_excluded_targets", ())
    failing = getattr(metafunc.function, "tvm_known_failing_targets", ())
    values = []
    for entry in _get_targets():
        if entry["target_kind"] in excluded:
            continue
        value = _target_param(entry["target"])
        if entry["target_kind"] in failing:
            value = pytest.param(
                entry["target"],
                marks=pytest.mark.xfail(reason=f'Known failing test for target "{entry["target_kind"]}"'),
            )
        values.append(value)
    metafunc.parametrize("target", values, scope="session")


def _parametrize_correlated_parameters(metafunc):
    groups: dict = {}
    for name, fixturedefs in metafunc.definition._fixtureinfo.name2fixturedefs.items():
        func = fixturedefs[-1].func
        group = getattr(func, "parametrize_group", None)
        if group is None or not hasattr(func, "parametrize_values"):
            continue
        entry = groups.setdefault(group, {"ids": func.parametrize_ids, "params": []})
        entry["params"].append((name, func.parametrize_values))
    for entry in groups.values():
        params = entry["params"]
        if len(params) == 1:
            name, values = params[0]
            metafunc.parametrize(name, values, indirect=True, ids=entry["ids"])
        else:
            names = ",".join(name for name, _ in params)
            metafunc.parametrize(names, list(zip(*(values for _, values in params))), indirect=True, ids=entry["ids"])
