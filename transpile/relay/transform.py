"""Module passes in the style of tvm.relay.transform: pass objects called on an IRModule."""

from __future__ import annotations

from typing import Callable, Sequence

from .module import IRModule

__all__ = ["Pass", "InferType", "Sequential", "module_pass"]


class Pass:
    """A module -> module transformation; call it on a module: `InferType()(mod)`."""

    name = "Pass"

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

    name = "InferType"

    def transform_module(self, mod: IRModule) -> IRModule:
        from .typing import infer_type

        return infer_type(mod)


class _FunctionPass(Pass):
    def __init__(self, fn: Callable[[IRModule], IRModule], name: str):
        self._fn = fn
        self.name = name

    def transform_module(self, mod: IRModule) -> IRModule:
        return self._fn(mod)


def module_pass(fn: Callable[[IRModule], IRModule] | None = None, name: str | None = None):
    """Wrap a function mod -> mod as a Pass (usable as a decorator, like tvm's module_pass)."""

    def wrap(f):
        return _FunctionPass(f, name or f.__name__)

    return wrap(fn) if fn is not None else wrap


class Sequential(Pass):
    """Runs passes in order."""

    name = "Sequential"

    def __init__(self, passes: Sequence[Pass] = (), opt_level: int = 2, name: str = "Sequential"):
        self.passes = list(passes)
        self.opt_level = opt_level
        self.name = name

    def transform_module(self, mod: IRModule) -> IRModule:
        for p in self.passes:
            mod = p(mod)
        return mod
