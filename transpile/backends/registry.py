"""Backend discovery: the `transpile.backends` entry-point group plus backends registered at run time.

Entry points are read from installed distribution metadata (`importlib.metadata`), so a
source checkout must be installed (`pip install -e .`) for the built-in backends to appear.
A backend's module is imported only when it is selected (`get_backend`) or listed with details
(`backend_infos`). A plugin that fails to import is recorded with its package, version and error;
it raises a TranspileError only when selected. Two different providers of one name make that
name unusable: selecting it raises an error naming both.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from importlib import metadata

from ..errors import TranspileError
from .base import API_VERSION, CONSUMES_LIR, CONSUMES_RELAY, Backend

__all__ = [
    "ENTRY_POINT_GROUP",
    "BackendInfo",
    "backends",
    "backend_infos",
    "get_backend",
    "get_backend_class",
    "register_backend",
    "unregister_backend",
    "refresh",
    "format_backend_table",
]

ENTRY_POINT_GROUP = "transpile.backends"


@dataclass(frozen=True)
class BackendInfo:
    """What `transpile backends` reports about one backend provider."""

    name: str
    target: str  # "module:Class" of the entry point, or the class's qualified name when registered
    package: str | None  # the distribution providing it (None when registered at run time)
    version: str | None
    capabilities: frozenset | None  # None when the backend could not be loaded
    consumes: str | None
    api_version: int | None
    error: str | None  # why the backend cannot be used, or None


class _Provider:
    """One source of a backend name: an entry point (loaded lazily) or a registered class."""

    __slots__ = ("name", "target", "package", "version", "entry_point", "cls", "error")

    def __init__(self, name, target, package=None, version=None, entry_point=None, cls=None):
        self.name = name
        self.target = target
        self.package = package
        self.version = version
        self.entry_point = entry_point
        self.cls = cls
        self.error: str | None = None

    def describe(self) -> str:
        if self.package is None:
            return f"{self.target} (registered at run time)"
        return f"{self.target} from package {self.package} {self.version or '(unknown version)'}"

    def load(self):
        """The backend class; records and returns None on failure (see `error`)."""
        if self.cls is not None or self.error is not None:
            return self.cls
        try:
            loaded = self.entry_point.load()
        except Exception as exc:  # any import-time failure of a plugin must not break the others
            self.error = f"import of {self.target} failed: {type(exc).__name__}: {exc}"
            return None
        problem = _check_backend_class(self.name, loaded)
        if problem:
            self.error = f"{self.target}: {problem}"
            return None
        self.cls = loaded
        return loaded

    def same_backend_as(self, other: "_Provider") -> bool:
        return self.target == other.target and self.package == other.package


def _check_backend_class(name: str, cls) -> str | None:
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        return f"is not a subclass of transpile.backends.Backend (got {cls!r})"
    if cls.name != name:
        return f"is registered as '{name}' but its `name` attribute is {cls.name!r}"
    if cls.api_version != API_VERSION:
        return f"implements backend API version {cls.api_version!r}; this transpile supports version {API_VERSION}"
    if cls.consumes not in (CONSUMES_LIR, CONSUMES_RELAY):
        return f"consumes {cls.consumes!r}; expected {CONSUMES_LIR!r} or {CONSUMES_RELAY!r}"
    caps = cls.capabilities
    if not isinstance(caps, (frozenset, set)) or not all(isinstance(c, str) for c in caps):
        return f"`capabilities` must be a frozenset of feature names, got {caps!r}"
    return None


_lock = threading.RLock()
_discovered: dict[str, list[_Provider]] | None = None
_registered: dict[str, _Provider] = {}


def _entry_points():
    return metadata.entry_points(group=ENTRY_POINT_GROUP)


def _discover() -> dict[str, list[_Provider]]:
    global _discovered
    with _lock:
        if _discovered is None:
            found: dict[str, list[_Provider]] = {}
            for ep in _entry_points():
                dist = getattr(ep, "dist", None)
                package = version = None
                if dist is not None:
                    package = dist.metadata["Name"] or getattr(dist, "name", None)
                    version = dist.version
                provider = _Provider(ep.name, ep.value, package, version, entry_point=ep)
                providers = found.setdefault(ep.name, [])
                if not any(p.same_backend_as(provider) for p in providers):
                    providers.append(provider)
            _discovered = found
        return _discovered


def refresh() -> None:
    """Forget discovered entry points (re-read on next use); registered backends stay."""
    global _discovered
    with _lock:
        _discovered = None


def _providers(name: str) -> list[_Provider]:
    with _lock:
        registered = _registered.get(name)
        discovered = _discover().get(name, [])
        return ([registered] if registered else []) + ([] if registered else list(discovered))


def backends() -> list[str]:
    """Names of all registered and installed backends, sorted (nothing is imported)."""
    with _lock:
        return sorted(set(_discover()) | set(_registered))


def _duplicate_error(name: str, providers: list[_Provider]) -> str:
    listed = " and ".join(p.describe() for p in providers)
    return f"two different backends are named '{name}': {listed}; uninstall one of them"


def get_backend_class(name: str) -> type:
    """The Backend subclass selected by `name`, importing its plugin if needed."""
    if not isinstance(name, str):
        raise TypeError(f"a backend name must be a string, got {type(name).__name__}")
    providers = _providers(name)
    if not providers:
        available = ", ".join(backends()) or "none (is transpile installed? run `pip install -e .`)"
        raise TranspileError(f"unknown backend '{name}'; available backends: {available}")
    if len(providers) > 1:
        raise TranspileError(_duplicate_error(name, providers))
    provider = providers[0]
    with _lock:
        cls = provider.load()
    if cls is None:
        raise TranspileError(f"backend '{name}' ({provider.describe()}) cannot be used: {provider.error}")
    return cls


def get_backend(name: str) -> Backend:
    """An instance of the backend named `name` (TranspileError if unknown, broken or ambiguous)."""
    cls = get_backend_class(name)
    try:
        return cls()
    except Exception as exc:
        raise TranspileError(f"backend '{name}' failed to initialize: {type(exc).__name__}: {exc}") from exc


def backend_infos() -> list[BackendInfo]:
    """One record per provider, sorted by name; loads every backend to report its capabilities."""
    infos = []
    with _lock:
        names = backends()
        for name in names:
            providers = _providers(name)
            duplicate = _duplicate_error(name, providers) if len(providers) > 1 else None
            for provider in providers:
                cls = provider.load()
                error = duplicate or provider.error
                infos.append(
                    BackendInfo(
                        name=name,
                        target=provider.target,
                        package=provider.package,
                        version=provider.version,
                        capabilities=frozenset(cls.capabilities) if cls is not None else None,
                        consumes=cls.consumes if cls is not None else None,
                        api_version=cls.api_version if cls is not None else None,
                        error=error,
                    )
                )
    return infos


def register_backend(name: str, cls: type, *, replace: bool = False) -> None:
    """Make `cls` available as backend `name` (for tests and embedding; plugins use entry points).

    A name that is already registered or installed is an error unless `replace=True`, in which
    case `cls` takes precedence until `unregister_backend(name)`.
    """
    if isinstance(cls, str):
        module_name, _, attr = cls.partition(":")
        cls = getattr(importlib.import_module(module_name), attr)
    problem = _check_backend_class(name, cls)
    if problem:
        raise TranspileError(f"cannot register backend '{name}': {cls!r} {problem}")
    target = f"{cls.__module__}:{cls.__qualname__}"
    with _lock:
        if not replace:
            existing = _providers(name)
            if existing:
                new = _Provider(name, target, cls=cls)
                raise TranspileError(_duplicate_error(name, existing + [new]) + " (pass replace=True to override)")
        _registered[name] = _Provider(name, target, cls=cls)


def unregister_backend(name: str) -> None:
    """Remove a backend added with register_backend (installed entry points are unaffected)."""
    with _lock:
        if _registered.pop(name, None) is None:
            raise TranspileError(f"no backend named '{name}' was registered with register_backend")


def format_backend_table(infos: list[BackendInfo] | None = None) -> str:
    """The text `transpile backends` prints: one block per provider, load errors included."""
    from .base import FEATURE_ORDER

    infos = backend_infos() if infos is None else infos
    if not infos:
        return "no backends are installed (is transpile installed? run `pip install -e .`)\n"
    lines = []
    for info in infos:
        provider = f"{info.package} {info.version}" if info.package else "registered at run time"
        lines.append(f"{info.name}  ({provider}; {info.target})")
        if info.capabilities is not None:
            known = [f for f in FEATURE_ORDER if f in info.capabilities]
            extra = sorted(set(info.capabilities) - set(FEATURE_ORDER))
            lines.append(f"  consumes: {info.consumes}")
            lines.append(f"  capabilities: {', '.join(known + extra) or 'none'}")
            missing = [f for f in FEATURE_ORDER if f not in info.capabilities]
            if missing:
                lines.append(f"  lacks: {', '.join(missing)}")
        if info.error:
            lines.append(f"  error: {info.error}")
    return "\n".join(lines) + "\n"
