"""The error for AutoTVM features that need real tuning (apache-tvm 0.27 has no AutoTVM)."""

from __future__ import annotations

from ...errors import TranspileError

__all__ = ["AutoTVMUnavailableError"]


class AutoTVMUnavailableError(TranspileError):
    """Code asked for an AutoTVM feature that needs a tuner, a schedule template or measurement."""

    def __init__(self, feature: str):
        self.feature = feature
        super().__init__(
            f"tvm.autotvm.{feature} needs AutoTVM, which transpile does not provide (and apache-tvm >= 0.20 "
            "no longer has): transpile's backends schedule every operator themselves, so there is nothing to tune; "
            "dispatch contexts (apply_history_best, FallbackContext, tophub.context) are accepted and leave "
            "the default schedules in place"
        )
