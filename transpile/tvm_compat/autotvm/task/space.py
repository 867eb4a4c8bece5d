"""AutoTVM's configuration entities (tvm.autotvm.task.space): the knob values a schedule template reads.

They are plain data here: code builds fallback configurations from them (as TVM's tests do) and
a dispatch context hands them back from `query`. Applying one to a schedule, or defining a
tuning space, would need AutoTVM's templates and raises AutoTVMUnavailableError.
"""

from __future__ import annotations

from ..errors import AutoTVMUnavailableError

__all__ = [
    "AnnotateEntity",
    "ConfigEntity",
    "ConfigSpace",
    "FallbackConfigEntity",
    "OtherOptionEntity",
    "ReorderEntity",
    "SplitEntity",
]


class _Entity:
    """One knob's value; `apply` to a schedule is AutoTVM's job."""

    def apply(self, *args, **kwargs):
        raise AutoTVMUnavailableError(f"task.space.{type(self).__name__}.apply")

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash((type(self).__name__, repr(self)))


class SplitEntity(_Entity):
    """The factors one axis is split into (-1: whatever remains)."""

    def __init__(self, size):
        self.size = list(size)

    def __repr__(self):
        return f"sp{self.size}"


class ReorderEntity(_Entity):
    """A permutation of axes."""

    def __init__(self, perm):
        self.perm = list(perm)

    def __repr__(self):
        return f"re{self.perm}"


class AnnotateEntity(_Entity):
    """Per-axis annotations (unroll, vec, …)."""

    def __init__(self, anns):
        self.anns = list(anns)

    def __repr__(self):
        return f"an{self.anns}"


class OtherOptionEntity(_Entity):
    """Any other knob value (an unroll depth, a flag)."""

    def __init__(self, val):
        self.val = val

    def __repr__(self):
        return f"ot({self.val!r})"


class ConfigSpace:
    """A configuration: knob name -> entity, plus the measured cost and whether it is a fallback."""

    def __init__(self):
        self._entity_map = {}
        self.cost = None
        self.flop = 0
        self.is_fallback = False
        self.code_hash = None

    def __getitem__(self, name):
        try:
            return self._entity_map[name]
        except KeyError:
            raise KeyError(f"the configuration has no knob {name!r} (it has {sorted(self._entity_map)})") from None

    def __setitem__(self, name, entity):
        if not isinstance(entity, _Entity):
            raise TypeError(f"knob {name!r}: expected a task.space entity, got {type(entity).__name__}")
        self._entity_map[name] = entity

    def __contains__(self, name):
        return name in self._entity_map

    def get_other_option(self):
        return {name: entity.val for name, entity in self._entity_map.items() if isinstance(entity, OtherOptionEntity)}

    def __repr__(self):
        knobs = ",".join(f"{name}: {entity!r}" for name, entity in self._entity_map.items())
        return f"{type(self).__name__}({knobs}, cost={self.cost}, is_fallback={self.is_fallback})"

    # Defining knobs builds a tuning space for a schedule template: AutoTVM's job.
    def define_split(self, *args, **kwargs):
        raise AutoTVMUnavailableError("task.space.ConfigSpace.define_split")

    def define_reorder(self, *args, **kwargs):
        raise AutoTVMUnavailableError("task.space.ConfigSpace.define_reorder")

    def define_annotate(self, *args, **kwargs):
        raise AutoTVMUnavailableError("task.space.ConfigSpace.define_annotate")

    def define_knob(self, *args, **kwargs):
        raise AutoTVMUnavailableError("task.space.ConfigSpace.define_knob")


class ConfigEntity(ConfigSpace):
    """A configuration chosen from a space (here: built by hand)."""


class FallbackConfigEntity(ConfigSpace):
    """The configuration used when no tuning record matches: the schedule's defaults."""

    def __init__(self):
        super().__init__()
        self.is_fallback = True
