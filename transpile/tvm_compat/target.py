"""TVM's `tvm.target`: a Target names what code is built for; transpile builds for the host CPU.

apache-tvm 0.27's Target no longer parses "llvm -mcpu=…" strings, which Relay-era code passes
everywhere, so this Target is a small record of TVM's string form: kind, attributes, host.
"""

from __future__ import annotations

import threading

from ..errors import TranspileError

__all__ = ["Target", "TargetKind", "create"]

_current = threading.local()

# TVM v0.19's target_kind.cc defaults; every other kind has no limit.
_MAX_FUNCTION_ARGS = {"opencl": 128, "metal": 31}


class TargetKind:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


class Target:
    """`Target("llvm -mcpu=skylake --host=llvm")`: kind "llvm", attrs {"mcpu": "skylake"}, host Target("llvm")."""

    def __init__(self, target, host=None):
        if isinstance(target, Target):
            text = str(target)
        elif isinstance(target, dict):
            options = dict(target)
            kind = options.pop("kind", None)
            if not kind:
                raise TranspileError(f"a target dict needs a 'kind', got {target!r}")
            text = " ".join([kind] + [f"-{key}={value}" for key, value in options.items()])
        elif isinstance(target, str) and target.strip():
            text = target.strip()
        else:
            raise TranspileError(f"expected a target string, dict or Target, got {target!r}")
        words = text.split()
        self.kind = TargetKind(words[0])
        self.attrs: dict = {}
        self.keys = ("cpu",) if words[0] in ("llvm", "c") else (words[0],)
        for word in words[1:]:
            key, _, value = word.lstrip("-").partition("=")
            if key == "host":
                host = host or value
            else:
                self.attrs[key] = value if value else True
        self.host = Target(host) if isinstance(host, (str, dict)) else host
        self._text = text

    @property
    def max_function_args(self) -> int:
        """TVM's per-kind limit on a kernel's arguments (0: none); FuseOps keeps groups under it."""
        return int(self.attrs.get("max_function_args", _MAX_FUNCTION_ARGS.get(self.kind.name, 0)))

    def __str__(self):
        return self._text

    def __repr__(self):
        return f"Target({self._text!r})"

    def __eq__(self, other):
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self):
        return hash(self._text)

    def __enter__(self):
        stack = getattr(_current, "stack", None)
        if stack is None:
            stack = _current.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _current.stack.pop()

    @staticmethod
    def current(allow_none=True):
        stack = getattr(_current, "stack", None)
        if stack:
            return stack[-1]
        if allow_none:
            return None
        raise TranspileError("no target is in scope (use `with tvm.target.Target(...)`)")


def create(target) -> Target:
    """TVM <= 0.7's tvm.target.create."""
    return Target(target)


def __getattr__(name):
    # `tvm.target.codegen.llvm_version_major()`: the LLVM that apache-tvm (the cpp/tir backends' compiler) links.
    if name == "codegen":
        import tvm.target.codegen

        return tvm.target.codegen
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
