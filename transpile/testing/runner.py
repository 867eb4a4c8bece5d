"""Running one conformance case on one backend under pytest: feature check, compile (cached), call, compare."""

from __future__ import annotations

import threading

from ..errors import UnsupportedFeatureError
from .case import Case
from .compare import assert_values_close

__all__ = ["case_module", "typed_case_module", "compiled", "run_case", "selected_backends"]

_lock = threading.Lock()
_modules: dict[str, object] = {}
_typed: dict[str, object] = {}
_compiled: dict[tuple[str, str], object] = {}


def case_module(case: Case):
    """The parsed (untyped) module of a case, with the Prelude when the case asks for it; cached."""
    with _lock:
        mod = _modules.get(case.name)
        if mod is None:
            from .. import relay

            init = None
            if case.prelude:
                init = relay.IRModule()
                relay.Prelude(init)
            mod = _modules[case.name] = relay.parse(case.text, source_name=case.source_name, init_module=init)
        return mod


def typed_case_module(case: Case):
    with _lock:
        typed = _typed.get(case.name)
    if typed is None:
        from ..relay.transform import InferType

        typed = InferType()(case_module(case))
        with _lock:
            _typed[case.name] = typed
    return typed


def compiled(backend: str, case: Case):
    """`transpile.compile(case program, backend=...)`, once per (backend, case); errors are cached too."""
    key = (backend, case.name)
    with _lock:
        outcome = _compiled.get(key)
    if outcome is None:
        from ..backends.api import compile as compile_program

        try:
            outcome = ("ok", compile_program(case_module(case), backend=backend, entry=case.entry))
        except Exception as exc:  # re-raised for every test of this case
            outcome = ("error", exc)
        with _lock:
            _compiled[key] = outcome
    kind, value = outcome
    if kind == "error":
        raise value
    return value


def _missing(backend_name: str, case: Case) -> list[str]:
    from ..backends import FEATURE_ORDER, get_backend

    capabilities = get_backend(backend_name).capabilities
    return [f for f in FEATURE_ORDER if f in case.features and f not in capabilities]


def run_case(backend: str, case: Case) -> None:
    """Assert `case` runs correctly on `backend`, or that the backend rejects a feature it lacks (then skip)."""
    import pytest

    from ..backends.api import compile as compile_program

    missing = _missing(backend, case)
    if missing:
        with pytest.raises(UnsupportedFeatureError) as info:
            compile_program(case_module(case), backend=backend, entry=case.entry)
        assert info.value.backend == backend, f"the error names backend {info.value.backend!r}, not {backend!r}"
        assert info.value.feature in missing, f"the error names {info.value.feature!r}; the backend lacks {missing}"
        pytest.skip(f"{backend} lacks {', '.join(missing)}")
    function = compiled(backend, case)
    inputs = case.fresh_inputs()
    if case.raises is not None:
        exc_type, pattern = case.raises
        with pytest.raises(exc_type, match=pattern):
            function(*inputs)
        return
    result = function(*inputs)
    if case.apply is not None:
        assert callable(result), f"result: expected a function (closure), got {type(result).__name__}"
        result = result(*case.fresh_apply_args())
    assert_values_close(result, case.expected_value(), case.rtol, case.atol)
    if case.inputs_after is not None:
        assert_values_close(inputs, tuple(case.inputs_after), case.rtol, case.atol, "the inputs after the call")


def selected_backends(config) -> list[str]:
    """Backends named with --transpile-backend (NAME, or module:Class to register a class), else all."""
    from ..backends import backends, register_backend

    requested = config.getoption("transpile_backend", default=None) or []
    names = []
    for item in requested:
        if ":" in item:
            import importlib

            module_name, _, attr = item.partition(":")
            cls = getattr(importlib.import_module(module_name), attr)
            register_backend(cls.name, cls, replace=True)
            item = cls.name
        names.append(item)
    return names or backends()
