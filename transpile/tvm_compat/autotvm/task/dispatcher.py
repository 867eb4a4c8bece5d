"""AutoTVM's dispatch contexts (tvm.autotvm.task.dispatcher): which configuration a schedule uses.

The stack of contexts behaves as TVM's (`DispatchContext.current`, `query` falling through to the
enclosing context, FallbackContext answering with a FallbackConfigEntity), so code that installs
or subclasses them runs unchanged. Transpile's backends never consult it: every operator gets
its default schedule, which is what TVM did when no tuning record matched.
"""

from __future__ import annotations

import json
import os

from ...error import TVMError
from .space import FallbackConfigEntity

__all__ = [
    "ApplyConfig",
    "ApplyFixedConfig",
    "ApplyHistoryBest",
    "DispatchContext",
    "FallbackContext",
    "clear_fallback_cache",
    "load_records",
]


class AutoTVMRecordError(TVMError):
    """A tuning-record file that cannot be read."""


class DispatchContext:
    """Base of the context stack; `current` is the innermost active context."""

    current = None

    def __init__(self):
        self._old_ctx = DispatchContext.current

    def query(self, target, workload):
        """The configuration for `workload` on `target`: this context's, else the enclosing one's."""
        config = self._query_inside(target, workload)
        if config is None and self._old_ctx is not None:
            config = self._old_ctx.query(target, workload)
        return config

    def update(self, target, workload, cfg):
        raise NotImplementedError(f"{type(self).__name__} does not store configurations")

    def _query_inside(self, target, workload):
        raise NotImplementedError(f"{type(self).__name__} must define _query_inside")

    def __enter__(self):
        self._old_ctx = DispatchContext.current
        DispatchContext.current = self
        return self

    def __exit__(self, ptype, value, trace):
        DispatchContext.current = self._old_ctx


class ApplyConfig(DispatchContext):
    """Answers every query with one given configuration."""

    def __init__(self, config):
        super().__init__()
        self._config = config
        self.workload = None

    def _query_inside(self, target, workload):
        self.workload = workload
        return self._config

    def update(self, target, workload, cfg):
        self._config = cfg


ApplyFixedConfig = ApplyConfig


class FallbackContext(DispatchContext):
    """The outermost context: a default (fallback) configuration per (target, workload), memoized."""

    def __init__(self):
        super().__init__()
        self.memory = {}
        self.silent = False

    def _query_inside(self, target, workload):
        key = (str(target), workload)
        if key not in self.memory:
            self.memory[key] = FallbackConfigEntity()
        return self.memory[key]

    def clear_cache(self, target, workload):
        self.memory.pop((str(target), workload), None)

    def update(self, target, workload, cfg):
        self.memory[(str(target), workload)] = cfg


def clear_fallback_cache(target, workload):
    """Forgets the fallback configuration of (target, workload) in the enclosing FallbackContext."""
    context = DispatchContext.current
    while not isinstance(context, FallbackContext):
        context = context._old_ctx
    context.clear_cache(target, workload)


class ApplyHistoryBest(DispatchContext):
    """Reads tuning records (files or (input, result) pairs); queries fall through to the defaults.

    The records are parsed and kept (`records`), but no tuned schedule is applied: transpile's
    kernels come from each operator's default lowering, as TVM's did for untuned workloads.
    """

    def __init__(self, records):
        super().__init__()
        self.records = load_records(records)

    def _query_inside(self, target, workload):
        return None


def load_records(records) -> list:
    """TVM's records: a log file path, or a list of paths / already decoded records."""
    if records is None:
        return []
    if isinstance(records, (str, os.PathLike)):
        return list(_read_record_file(os.fspath(records)))
    loaded = []
    for item in records:
        if isinstance(item, (str, os.PathLike)):
            loaded.extend(_read_record_file(os.fspath(item)))
        else:
            loaded.append(item)
    return loaded


def _read_record_file(path: str):
    try:
        with open(path) as log_file:
            lines = log_file.readlines()
    except OSError as exc:
        raise AutoTVMRecordError(f"cannot read AutoTVM tuning records {path!r}: {exc.strerror}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AutoTVMRecordError(f"{path}:{number}: not an AutoTVM JSON record ({exc.msg})") from None
        if not isinstance(record, dict):
            raise AutoTVMRecordError(f"{path}:{number}: an AutoTVM record is a JSON object")
        if record.get("v") == 0.1:
            continue  # TVM skipped records of log format 0.1 too
        yield record


DispatchContext.current = FallbackContext()
