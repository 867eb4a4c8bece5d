"""TVM's `tvm.autotvm`, as far as it means "no tuning: use each operator's default schedule".

apache-tvm >= 0.20 has no AutoTVM and transpile's backends pick their own schedules, so the
dispatch contexts (apply_history_best, FallbackContext, ApplyConfig, tophub.context) and the
configuration entities work as TVM's did for untuned workloads, and everything that would tune,
measure or define a schedule template raises AutoTVMUnavailableError naming the feature.
"""

from __future__ import annotations

from . import task, tophub
from .errors import AutoTVMUnavailableError
from .task import (
    ApplyConfig,
    ApplyFixedConfig,
    ConfigEntity,
    ConfigSpace,
    DispatchContext,
    FallbackContext,
    create,
    get_config,
    register_topi_compute,
    register_topi_schedule,
    template,
)
from .task import ApplyHistoryBest as apply_history_best

apply_fixed_config = ApplyFixedConfig

__all__ = [
    "ApplyConfig",
    "ApplyFixedConfig",
    "AutoTVMUnavailableError",
    "ConfigEntity",
    "ConfigSpace",
    "DispatchContext",
    "FallbackContext",
    "LocalBuilder",
    "LocalRunner",
    "RPCRunner",
    "apply_fixed_config",
    "apply_history_best",
    "create",
    "get_config",
    "measure_option",
    "register_topi_compute",
    "register_topi_schedule",
    "task",
    "template",
    "tophub",
]


def measure_option(builder, runner):
    raise AutoTVMUnavailableError("measure_option")


def LocalBuilder(*args, **kwargs):  # noqa: N802 (TVM's class name)
    raise AutoTVMUnavailableError("LocalBuilder")


def LocalRunner(*args, **kwargs):  # noqa: N802
    raise AutoTVMUnavailableError("LocalRunner")


def RPCRunner(*args, **kwargs):  # noqa: N802
    raise AutoTVMUnavailableError("RPCRunner")
