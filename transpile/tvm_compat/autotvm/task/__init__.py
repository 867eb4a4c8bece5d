"""TVM's `tvm.autotvm.task`: dispatch contexts and configuration entities; task creation needs AutoTVM."""

from __future__ import annotations

from ..errors import AutoTVMUnavailableError
from . import dispatcher, space
from .dispatcher import (
    ApplyConfig,
    ApplyFixedConfig,
    ApplyHistoryBest,
    DispatchContext,
    FallbackContext,
    clear_fallback_cache,
)
from .space import ConfigEntity, ConfigSpace, FallbackConfigEntity

__all__ = [
    "ApplyConfig",
    "ApplyFixedConfig",
    "ApplyHistoryBest",
    "ConfigEntity",
    "ConfigSpace",
    "DispatchContext",
    "FallbackConfigEntity",
    "FallbackContext",
    "TASK_TABLE",
    "clear_fallback_cache",
    "create",
    "dispatcher",
    "extract_from_multiple_program",
    "extract_from_program",
    "get_config",
    "register_topi_compute",
    "register_topi_schedule",
    "space",
    "template",
]

# AutoTVM's registry of tunable templates: transpile registers none (its operators are not tuned).
TASK_TABLE: dict = {}


def get_config():
    """The configuration the innermost dispatch context gives the current workload (a fallback one)."""
    return DispatchContext.current.query(None, None)


def create(task_name, args, target=None, target_host=None):
    raise AutoTVMUnavailableError(f"task.create({task_name!r})")


def extract_from_program(mod, params, target, *args, **kwargs):
    raise AutoTVMUnavailableError("task.extract_from_program")


def extract_from_multiple_program(mods, params, target, *args, **kwargs):
    raise AutoTVMUnavailableError("task.extract_from_multiple_program")


def template(task_name, func=None):
    raise AutoTVMUnavailableError(f"task.template({task_name!r})")


def register_topi_compute(task_name, func=None):
    raise AutoTVMUnavailableError(f"register_topi_compute({task_name!r})")


def register_topi_schedule(task_name, func=None):
    raise AutoTVMUnavailableError(f"register_topi_schedule({task_name!r})")
