"""The public compile/emit/build/load functions: type-check, check features, lower, hand to the backend."""

from __future__ import annotations

from typing import Callable

from .. import progress
from ..errors import TranspileError
from .base import CONSUMES_RELAY, Artifact, Backend, read_manifest
from .features import check_supported
from .registry import get_backend

__all__ = ["compile", "emit", "build", "load", "load_artifact", "prepare"]

DEFAULT_BACKEND = "python"


def _select(backend) -> Backend:
    if isinstance(backend, str):
        return get_backend(backend)
    if isinstance(backend, Backend):
        return backend
    if isinstance(backend, type) and issubclass(backend, Backend):
        return backend()
    raise TypeError(f"backend must be a backend name or a transpile.backends.Backend, got {backend!r}")


def _as_module(target, mod, entry: str):
    """(module, entry) for an IRModule, a relay.Function/expression (+ module) or a GlobalVar + module."""
    from ..relay.analysis import free_vars
    from ..relay.expr import Expr, Function, GlobalVar
    from ..relay.module import IRModule

    if isinstance(target, IRModule):
        if mod is not None:
            raise TypeError("pass either a module or a function plus a module, not two modules")
        return target, entry
    if isinstance(target, GlobalVar):
        if mod is None:
            raise TranspileError(f"compiling the global @{target.name_hint} needs the module that defines it")
        if target not in mod:
            raise TranspileError(f"the module has no function @{target.name_hint}")
        return mod, target.name_hint
    if isinstance(target, Expr):
        module = mod.copy() if mod is not None else IRModule()
        if not isinstance(target, Function):
            target = Function(free_vars(target), target)
        module[entry] = target
        return module, entry
    raise TypeError(
        f"expected a relay.IRModule, relay.Function or relay.GlobalVar (with its module), got {type(target).__name__}"
    )


def prepare(target, mod=None, *, backend=DEFAULT_BACKEND, entry: str = "main", params=None):
    """(backend instance, type-checked module, entry), after checking the backend supports the program.

    `params` ({name: array}) first binds `entry`'s parameters of those names to constants, as TVM's
    bind_params_by_name did; the compiled function then takes only the remaining parameters.
    """
    from ..relay.transform import InferType

    selected = _select(backend)
    module, entry = _as_module(target, mod, entry)
    if entry not in module:
        raise TranspileError(f"the module has no function @{entry}")
    if params:
        from ..relay.bind import bind_params_in_module

        module = bind_params_in_module(module, params, entry=entry)
    typed = InferType()(module)
    check_supported(selected, typed, entry)
    return selected, typed, entry


def _pipeline_options(backend: Backend, options: dict, pipeline) -> dict:
    """The backend's requested lowerings plus the user's options that name pipeline knobs (removed from `options`)."""
    import dataclasses

    requested = dict(backend.pipeline_options)
    knobs = getattr(pipeline, "PipelineOptions", None)
    if knobs is not None and dataclasses.is_dataclass(knobs):
        for field in dataclasses.fields(knobs):
            if field.name in options:
                requested[field.name] = options.pop(field.name)
    return requested


def _lower(backend: Backend, typed, entry: str, options: dict):
    """The LIR program of `entry` from the shared pipeline; pipeline knobs are taken out of `options`."""
    try:
        from .. import pipeline
        from ..pipeline import lower_to_lir
    except ImportError as exc:
        if exc.name not in ("transpile.pipeline", None) and "lower_to_lir" not in str(exc):
            raise
        raise TranspileError(
            f"backend '{backend.name}' consumes the little IR, but the LIR pipeline is not available yet"
        ) from None
    requested = _pipeline_options(backend, options, pipeline)
    return lower_to_lir(typed, entry=entry, options=requested or None)


def _source_key(backend: Backend, typed, entry: str, options: dict) -> str | None:
    """The build-cache key of a backend that caches builds (one overriding `cached_build`), else None."""
    if type(backend).cached_build is Backend.cached_build:
        return None
    from .buildkey import source_key

    identity = getattr(backend, "cache_identity", lambda: "")() + _pass_context_identity()
    return source_key(backend.name, typed, entry, options, identity)


def _pass_context_identity() -> str:
    """What of the enclosing PassContext changes the optimised program (its opt_level does not: the
    pipeline's own `opt_level` option decides that), so a cached build never ignores a disabled pass."""
    from ..relay.transform.infra import PassContext

    context = PassContext.current()
    if not context.disabled_pass and not context.required_pass:
        return ""
    return f"\0disabled={sorted(context.disabled_pass)}\0required={sorted(context.required_pass)}"


def build(target, mod=None, *, backend=DEFAULT_BACKEND, entry: str = "main", **options) -> Artifact:
    """Compile `entry` of the program with `backend` into an Artifact (load() / export(path))."""
    params = options.pop("params", None)  # {name: array} bound to constants before anything else
    selected, typed, entry = prepare(target, mod, backend=backend, entry=entry, params=params)
    if selected.consumes == CONSUMES_RELAY:
        artifact = selected.build(typed, entry=entry, **options)
    else:
        options = dict(options)
        key = _source_key(selected, typed, entry, options)
        if key is not None:
            cached = selected.cached_build(key)
            if cached is not None:
                return cached
            options["source_key"] = key
        with progress.stage("pipeline"):
            program = _lower(selected, typed, entry, options)
        artifact = selected.build(program, **options)
    if not isinstance(artifact, Artifact):
        raise TranspileError(
            f"backend '{selected.name}' returned {type(artifact).__name__} from build, not a transpile.backends.Artifact"
        )
    return artifact


def emit(target, mod=None, *, backend=DEFAULT_BACKEND, entry: str = "main", **options) -> str:
    """The source `backend` generates for the program, as text."""
    params = options.pop("params", None)  # {name: array} bound to constants before anything else
    selected, typed, entry = prepare(target, mod, backend=backend, entry=entry, params=params)
    if selected.consumes == CONSUMES_RELAY:
        return selected.emit(typed, entry=entry, **options)
    options = dict(options)
    program = _lower(selected, typed, entry, options)
    return selected.emit(program, **options)


def compile(target, mod=None, *, backend=DEFAULT_BACKEND, entry: str = "main", **options) -> Callable:  # noqa: A001
    """A Python callable running `entry` of the program compiled with `backend`.

    `target` is an IRModule, a relay.Function (with an optional module it may call into), or a
    GlobalVar with its module. Arguments and results follow DESIGN.md's value conventions.
    `params={name: array}` binds those parameters of `entry` to constants (see `prepare`).
    """
    return build(target, mod, backend=backend, entry=entry, **options).load()


def load_artifact(path) -> Artifact:
    """The Artifact exported to `path` (a directory holding transpile-artifact.json, or that file)."""
    directory, manifest = read_manifest(path)
    try:
        backend = get_backend(manifest["backend"])
    except TranspileError as exc:
        raise TranspileError(
            f"{path} was built by backend '{manifest['backend']}', which cannot be used here: {exc}"
        ) from None
    artifact = backend.load_artifact(directory, manifest)
    if not isinstance(artifact, Artifact):
        raise TranspileError(f"backend '{backend.name}' returned {type(artifact).__name__} from load_artifact")
    return artifact


def load(path) -> Callable:
    """The callable of an artifact exported with `Artifact.export(path)`."""
    return load_artifact(path).load()
