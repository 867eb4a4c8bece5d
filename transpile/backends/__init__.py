"""Backends: the plugin contract, discovery through entry points, feature checks and the compile API.

`transpile.backends` is both this package and, as DESIGN.md promises, a function:
`transpile.backends()` returns the registered backend names (the module object is callable),
so `transpile/__init__.py` can expose the package without shadowing it by a function.
"""

from __future__ import annotations

import sys
import types

from .base import (
    ADTS,
    ALL_FEATURES,
    API_VERSION,
    CLOSURES,
    CONSUMES_LIR,
    CONSUMES_RELAY,
    DYNAMIC_SHAPES,
    FEATURE_DESCRIPTIONS,
    FEATURE_ORDER,
    MANIFEST_NAME,
    NON_TAIL_RECURSION,
    POLYMORPHISM,
    RECURSION,
    REFS,
    Artifact,
    Backend,
)
from .registry import (
    ENTRY_POINT_GROUP,
    BackendInfo,
    backend_infos,
    backends,
    format_backend_table,
    get_backend,
    get_backend_class,
    refresh,
    register_backend,
    unregister_backend,
)

__all__ = [
    "Backend",
    "Artifact",
    "BackendInfo",
    "API_VERSION",
    "CONSUMES_LIR",
    "CONSUMES_RELAY",
    "CLOSURES",
    "ADTS",
    "REFS",
    "POLYMORPHISM",
    "RECURSION",
    "NON_TAIL_RECURSION",
    "DYNAMIC_SHAPES",
    "ALL_FEATURES",
    "FEATURE_ORDER",
    "FEATURE_DESCRIPTIONS",
    "MANIFEST_NAME",
    "ENTRY_POINT_GROUP",
    "backends",
    "backend_infos",
    "get_backend",
    "get_backend_class",
    "register_backend",
    "unregister_backend",
    "refresh",
    "format_backend_table",
    "required_features",
    "check_supported",
    "compile",
    "emit",
    "build",
    "load",
    "load_artifact",
]

# The analysis and the compile API import the Relay frontend; load them on first use so that
# listing backends (the CLI, pytest plugin discovery) stays cheap.
_LAZY = {
    "required_features": "features",
    "check_supported": "features",
    "missing_features": "features",
    "compile": "api",
    "emit": "api",
    "build": "api",
    "load": "api",
    "load_artifact": "api",
}


def __getattr__(name):
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value
    return value


class _CallableModule(types.ModuleType):
    def __call__(self) -> list[str]:
        """The names of all registered backends (same as transpile.backends.backends())."""
        return backends()


sys.modules[__name__].__class__ = _CallableModule
