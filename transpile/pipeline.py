"""The shared normalization pipeline: Relay module → LIR program, the same for every backend.

    [graph optimisation] → InferType → monomorphize → to_anf → compile_matches → fuse
    → closure conversion + lowering → tail-call marking  [→ verify]

The first stage is relay.transform.optimize at `PipelineOptions.opt_level` (TVM's convention,
default 3 = fastest; 0 skips it and compiles the program as written).

`lower_to_lir` runs it; `pipeline_stages` returns every intermediate (for debugging and
`transpile emit -b lir`). The passes are imported lazily from `transpile.passes.<module>`.
The LIR is verified after lowering and after tail-call marking when `verify=True`, or by
default when the environment variable TRANSPILE_DEBUG=1.
"""

from __future__ import annotations

import importlib
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

__all__ = ["lower_to_lir", "pipeline_stages", "PipelineOptions", "STAGES", "debug_enabled"]


@dataclass(frozen=True)
class PipelineOptions:
    """Knobs of the shared pipeline.

    `fuse=False` skips fusion (each operator becomes its own kernel); `opt_level` chooses the
    graph-level passes (relay.transform.optimize; 0 = none, 3 = all, the default);
    `alter_layout=True` (asked for by backends whose kernels TVM compiles) moves convolutions to
    channel-blocked NCHWc layouts with weights re-packed at compile time (at opt_level >= 3).
    """

    fuse: bool = True
    opt_level: int = 3
    alter_layout: bool = False

    def __post_init__(self):
        if not isinstance(self.opt_level, int) or isinstance(self.opt_level, bool) or self.opt_level < 0:
            from .errors import TranspileError

            raise TranspileError(
                f"opt_level must be a non-negative integer (0 = no graph optimisation), got {self.opt_level!r}"
            )


def debug_enabled() -> bool:
    return os.environ.get("TRANSPILE_DEBUG", "") not in ("", "0")


def _pass(module: str, name: str) -> Callable:
    return getattr(importlib.import_module(f"transpile.passes.{module}"), name)


def _optimize(mod, entry, opts: "PipelineOptions"):
    from .relay.transform import optimize

    return optimize(mod, opts.opt_level, alter_layout=opts.alter_layout)


def _infer(mod, entry):
    from .relay.transform import InferType

    return InferType()(mod)


def _monomorphize(mod, entry):
    return _pass("monomorphize", "monomorphize")(mod, entry)


def _anf(mod, entry):
    return _pass("anf", "to_anf")(mod)


def _matches(mod, entry):
    return _pass("match_compile", "compile_matches")(mod)


def _fuse(mod, entry):
    return _pass("fuse", "fuse")(mod)


def _lower(mod, entry):
    return _pass("lower", "lower")(mod, entry)


def _tail(program, entry):
    return _pass("tailcall", "mark_tail_calls")(program)


# (stage name, function, produces LIR); "optimized" runs with the options' opt_level
STAGES = (
    ("optimized", _optimize, False),
    ("typed", _infer, False),
    ("monomorphized", _monomorphize, False),
    ("anf", _anf, False),
    ("matches_compiled", _matches, False),
    ("fused", _fuse, False),
    ("lowered", _lower, True),
    ("tail_marked", _tail, True),
)


def _as_module(mod_or_func):
    from .relay import expr as rx
    from .relay.module import IRModule

    if isinstance(mod_or_func, rx.Function):
        return IRModule.from_expr(mod_or_func)
    return mod_or_func


def _options(options) -> PipelineOptions:
    if options is None:
        return PipelineOptions()
    if isinstance(options, PipelineOptions):
        return options
    return PipelineOptions(**dict(options))


def _run(mod, entry, options, verify, keep):
    from .lir import verify as verify_program

    opts = _options(options)
    if verify is None:
        verify = debug_enabled()
    current = _as_module(mod)
    stages = OrderedDict(input=current) if keep else None
    for name, run, produces_lir in STAGES:
        if name == "fused" and not opts.fuse:
            continue
        if name == "optimized":
            if opts.opt_level == 0:
                continue
            current = run(current, entry, opts)
        else:
            current = run(current, entry)
        if produces_lir and verify:
            verify_program(current)
        if keep:
            stages[name] = current
    return stages if keep else current


def lower_to_lir(mod, entry: str = "main", *, verify: bool | None = None, options=None):
    """The verified-if-asked LIR `Program` of `mod` (an IRModule or a relay Function) for `entry`.

    `options`: a PipelineOptions or a mapping of its fields. `verify=None` means "when TRANSPILE_DEBUG=1".
    """
    return _run(mod, entry, options, verify, keep=False)


def pipeline_stages(mod, entry: str = "main", *, verify: bool | None = None, options=None) -> OrderedDict:
    """Every intermediate result by stage name: input, optimized (unless opt_level=0), typed,
    monomorphized, anf, matches_compiled, fused (Relay modules), lowered, tail_marked (LIR programs)."""
    return _run(mod, entry, options, verify, keep=True)
