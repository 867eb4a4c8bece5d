"""The benchmark workloads: Relay programs (text in this folder or built in Python), inputs and reference results."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

WORKLOAD_DIR = Path(__file__).resolve().parent


class NotApplicable(Exception):
    """A peer cannot run a workload; the message is the reason shown in the table."""


@dataclass
class Instance:
    """One problem size of a workload: arguments for the transpile callables and the expected result."""

    label: str
    args: tuple
    expected: Any
    # recursion steps (dispatch workloads): scales a small instance's time up to the full one and gives time per step
    work: float = 1.0


@dataclass
class Native:
    """A non-transpile peer's implementation: `call(*convert_in(args))`, result read back with `convert_out`."""

    call: Callable
    convert_in: Callable[[tuple], tuple] = lambda args: args
    convert_out: Callable[[Any], Any] = lambda result: result
    note: str = ""


@dataclass
class Workload:
    name: str
    title: str
    group: str
    build_module: Callable[[], Any]  # () -> transpile.relay.IRModule with @main
    full: Instance
    small: Instance | None = None  # a smaller size for peers too slow for the full one (time scaled by work)
    rtol: float = 0.0
    atol: float = 0.0
    # peer name -> factory () -> Native; a factory raises NotApplicable with the reason
    natives: dict[str, Callable[[], Native]] = field(default_factory=dict)
    # peer name -> why the peer has no version of this workload
    not_applicable: dict[str, str] = field(default_factory=dict)


def parse_workload(file_name: str, prelude: bool = False, meta: list | None = None, substitute: dict | None = None):
    """The module of bench/workloads/<file_name>, parsed with the Prelude, a constant table and text substitutions if asked."""
    from transpile import relay

    init = None
    if prelude:
        init = relay.IRModule()
        relay.Prelude(init)
    table = None
    if meta is not None:
        table = {"relay.Constant": [relay.const(value) for value in meta]}
    path = WORKLOAD_DIR / file_name
    text = path.read_text(encoding="utf-8")
    for placeholder, value in (substitute or {}).items():
        text = text.replace(placeholder, str(value))
    return relay.parse(text, source_name=str(path), init_module=init, init_meta_table=table)


def all_workloads() -> list[Workload]:
    """Every workload in report order (weights and inputs are drawn from fixed seeds)."""
    from . import dispatch, models

    return dispatch.workloads() + models.workloads()
