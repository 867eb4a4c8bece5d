"""Pass infrastructure in the style of tvm.transform (TVM v0.19): passes, PassContext, Sequential.

A pass is an object called on an IRModule (`InferType()(mod)`). Every pass carries a `PassInfo`
(name, opt_level, required passes). Calling a pass runs it unconditionally, as in TVM; only
`Sequential` consults the current `PassContext`: it skips a pass that is disabled or whose
opt_level exceeds the context's, unless the pass is listed as required, and runs each pass's
required passes (by name) before it.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from typing import Callable, Iterable, Sequence

from ..module import IRModule

__all__ = [
    "PassInfo",
    "PassContext",
    "Pass",
    "ModulePass",
    "FunctionPass",
    "Sequential",
    "InferType",
    "module_pass",
    "function_pass",
]


class PassInfo:
    """What a pass is called, from which opt_level it runs, and which passes must run before it."""

    __slots__ = ("opt_level", "name", "required", "traceable")

    def __init__(self, opt_level: int, name: str, required: Iterable[str] | None = None, traceable: bool = False):
        self.opt_level = int(opt_level)
        self.name = str(name)
        self.required = tuple(required or ())
        self.traceable = bool(traceable)

    def __repr__(self):
        return f"PassInfo(opt_level={self.opt_level}, name={self.name!r}, required={list(self.required)})"


_contexts = threading.local()


def _context_stack() -> list:
    stack = getattr(_contexts, "stack", None)
    if stack is None:
        stack = _contexts.stack = []
    return stack


class PassContext:
    """The settings passes run under: `with PassContext(opt_level=3, disabled_pass=["FoldConstant"]): ...`.

    As in TVM, the default context has opt_level 2; contexts nest (per thread).
    """

    def __init__(
        self,
        opt_level: int = 2,
        required_pass: Iterable[str] | None = None,
        disabled_pass: Iterable[str] | None = None,
        instruments: Sequence | None = None,
        config: dict | None = None,
    ):
        if not isinstance(opt_level, int) or isinstance(opt_level, bool) or opt_level < 0:
            raise ValueError(f"opt_level must be a non-negative int, got {opt_level!r}")
        for what, names in (("required_pass", required_pass), ("disabled_pass", disabled_pass)):
            if names is not None and (isinstance(names, str) or not all(isinstance(n, str) for n in names)):
                raise TypeError(f"{what} must be a list of pass names, got {names!r}")
        self.opt_level = opt_level
        self.required_pass = tuple(required_pass or ())
        self.disabled_pass = tuple(disabled_pass or ())
        self.instruments = tuple(instruments or ())
        self.config = dict(config or {})

    def __enter__(self) -> "PassContext":
        _context_stack().append(self)
        return self

    def __exit__(self, *exc) -> None:
        stack = _context_stack()
        if stack and stack[-1] is self:
            stack.pop()
        elif self in stack:
            stack.remove(self)

    @staticmethod
    def current() -> "PassContext":
        """The innermost entered context, or a default one (opt_level 2)."""
        stack = _context_stack()
        return stack[-1] if stack else PassContext()

    def pass_enabled(self, info: PassInfo) -> bool:
        """TVM's PassContext::PassEnabled: disabled wins, then required, then the opt_level."""
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return self.opt_level >= info.opt_level

    def __repr__(self):
        return (
            f"PassContext(opt_level={self.opt_level}, required_pass={list(self.required_pass)}, "
            f"disabled_pass={list(self.disabled_pass)})"
        )


class Pass:
    """A module -> module transformation; call it on a module: `InferType()(mod)`."""

    info = PassInfo(0, "Pass")

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def opt_level(self) -> int:
        return self.info.opt_level

    @property
    def required(self) -> tuple[str, ...]:
        return self.info.required

    def __call__(self, mod: IRModule) -> IRModule:
        if not isinstance(mod, IRModule):
            raise TypeError(f"{self.name} runs on an IRModule, got {type(mod).__name__}")
        return self.transform_module(mod)

    def transform_module(self, mod: IRModule) -> IRModule:
        raise NotImplementedError

    def __repr__(self):
        return f"{self.name}()"


class InferType(Pass):
    """Type inference: returns a copy of the module whose expressions carry `checked_type`."""

    info = PassInfo(0, "InferType")

    def transform_module(self, mod: IRModule) -> IRModule:
        from ..typing import infer_type

        return infer_type(mod)


def _takes_context(fn: Callable, wanted: int) -> bool:
    """Whether `fn` accepts `wanted` positional arguments (TVM's signature) rather than fewer."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= wanted or any(p.kind == p.VAR_POSITIONAL for p in params)


class ModulePass(Pass):
    """A pass from a function `(mod, ctx) -> mod` (or `mod -> mod`)."""

    def __init__(self, fn: Callable, opt_level: int = 0, name: str | None = None, required=None):
        self._fn = fn
        self._with_context = _takes_context(fn, 2)
        self.info = PassInfo(opt_level, name or getattr(fn, "__name__", "ModulePass"), required)

    def transform_module(self, mod: IRModule) -> IRModule:
        if self._with_context:
            return self._fn(mod, PassContext.current())
        return self._fn(mod)


def module_pass(pass_func=None, opt_level: int | None = None, name: str | None = None, required=None, traceable=False):
    """Wrap a function `(mod, ctx) -> mod` (or a class with `transform_module`) as a pass, like tvm's module_pass."""

    def wrap(fn):
        level = 0 if opt_level is None else opt_level
        if inspect.isclass(fn):
            return _pass_class(fn, ModulePass, "transform_module", level, name, required)
        return ModulePass(fn, level, name or fn.__name__, required)

    return wrap(pass_func) if pass_func is not None else wrap


def _is_skipped(func) -> bool:
    """Functions no graph-level pass touches: external partitions, opted-out and already-fused ones."""
    attrs = getattr(func, "attrs", None)
    if not attrs:
        return False
    return bool(attrs.get("Compiler")) or bool(attrs.get("SkipOptimization", 0)) or bool(attrs.get("Primitive", 0))


def ensure_typed(mod: IRModule) -> IRModule:
    """`mod` itself when every function already carries its type, else InferType()(mod)."""
    from ..expr import Function

    if all(getattr(f, "checked_type_", None) is not None for f in mod.functions.values() if isinstance(f, Function)):
        return mod
    return InferType()(mod)


class FunctionPass(Pass):
    """A pass from a function `(func, mod, ctx) -> func` applied to every global function.

    Like TVM's FunctionPass it skips functions with a `Compiler` or `SkipOptimization` attribute
    (and here also `Primitive` ones: already-fused kernels) and re-infers types afterwards. The
    input is type-checked first when it is not yet, so every pass may rely on `checked_type`.
    """

    def __init__(self, fn: Callable, opt_level: int = 0, name: str | None = None, required=None):
        self._fn = fn
        self._arity = 3 if _takes_context(fn, 3) else (2 if _takes_context(fn, 2) else 1)
        self.info = PassInfo(opt_level, name or getattr(fn, "__name__", "FunctionPass"), required)

    def transform_function(self, func, mod: IRModule, ctx: PassContext):
        return self._fn(*(func, mod, ctx)[: self._arity])

    def transform_module(self, mod: IRModule) -> IRModule:
        from ..deep import run_deep

        # Deep programs recurse deeply: run on run_deep's big-stack thread, under the caller's context.
        return run_deep(self._run, mod, PassContext.current())

    def _run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        with ctx:
            return self._run_in_context(mod, ctx)

    def _run_in_context(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        updated = mod.copy()
        changed = False
        for gv, func in mod.functions.items():
            if _is_skipped(func):
                continue
            new = self.transform_function(func, mod, ctx)
            if new is not func:
                updated[gv] = new
                changed = True
        return InferType()(updated) if changed else updated


def function_pass(
    pass_func=None, opt_level: int | None = None, name: str | None = None, required=None, traceable=False
):
    """Wrap a function `(func, mod, ctx) -> func` (or a class with `transform_function`) as a FunctionPass."""

    def wrap(fn):
        level = 0 if opt_level is None else opt_level
        if inspect.isclass(fn):
            return _pass_class(fn, FunctionPass, "transform_function", level, name, required)
        return FunctionPass(fn, level, name or fn.__name__, required)

    return wrap(pass_func) if pass_func is not None else wrap


def _pass_class(cls, base, method: str, opt_level: int, name, required):
    """A pass class whose instances delegate `method` to an instance of the decorated class (TVM's class form)."""
    pass_name = name or cls.__name__

    class Decorated(base):
        def __init__(self, *args, **kwargs):
            self._inner = cls(*args, **kwargs)
            base.__init__(self, getattr(self._inner, method), opt_level, pass_name, required)

    Decorated.__name__ = Decorated.__qualname__ = cls.__name__
    Decorated.__doc__ = cls.__doc__
    return Decorated


def _pass_by_name(name: str) -> Pass:
    """A fresh instance of the pass exposed as `relay.transform.<name>` (for `required`)."""
    transform = importlib.import_module(__name__.rsplit(".", 1)[0])
    factory = getattr(transform, name, None)
    if factory is None:
        raise ValueError(f"required pass {name!r} is not a relay.transform pass")
    return factory()


class Sequential(Pass):
    """Runs passes in order under the current PassContext (TVM's Sequential; default opt_level 0)."""

    def __init__(
        self, passes: Sequence[Pass] | None = None, opt_level: int = 0, name: str = "sequential", required=None
    ):
        passes = list(passes or ())
        for p in passes:
            if not isinstance(p, Pass):
                raise TypeError(f"Sequential takes passes, got {type(p).__name__}")
        self.passes = passes
        self.info = PassInfo(opt_level, name, required)

    def transform_module(self, mod: IRModule) -> IRModule:
        ctx = PassContext.current()
        for p in self.passes:
            if not ctx.pass_enabled(p.info):
                continue
            for required in p.info.required:
                mod = _pass_by_name(required)(mod)
            mod = p(mod)
        return mod

    def __repr__(self):
        return f"{self.name}([{', '.join(map(repr, self.passes))}])"
