"""Static memory planning: kernel results that never leave a function share one arena, reused by liveness.

`plan_memory(program)` is an analysis over an LIR Program (it does not change the program). For
each function it decides which `KernelCall` results can live in a per-invocation arena instead
of a fresh allocation each, and at which byte offsets, so that buffers whose lifetimes do not
overlap share memory. Backends use the plan like this:

    plan = plan_memory(program, plannable=lambda ty: ...)  # once per program
    fplan = plan.of(func.name)
    fplan.arena_bytes           # 0: nothing planned; else allocate this many bytes per invocation
    fplan.outputs[let_name]     # a planned KernelCall: one Buffer per flattened result tensor,
                                #   write the kernel's outputs there instead of allocating
    fplan.views[var_name]       # every variable whose tensor lives in the arena: kernel results,
                                #   projections of planned tuple results and plain aliases

Rules (all conservative, so a backend can rely on them without further analysis):
- Only tensors with a static shape are planned (and only those `plannable(type)` accepts).
- A KernelCall is planned all or nothing: every tensor of its result (a tensor or a flat tuple
  of tensors; nested tuples are not planned) is planned, or none is. Its result may only be
  *read*: passed to kernels, tested by `If`, projected (`Proj`) or renamed (`AtomValue`), whose
  results then follow the same rule. Any other use — returned (a block's result), put in a
  tuple, ADT, closure or reference, passed to a function or closure call — makes the value
  escape, and the call keeps its ordinary allocation.
- Buffers in the arena are uninitialized: the kernel writing a buffer must write all of it.
- A buffer is live from its KernelCall to its last read, statements numbered in program order
  (a statement before the statements nested in it). Buffers defined in sibling branches never
  run together, and numbering them apart keeps them apart only when needed: a value defined
  before an `If` and read in one branch may share memory with one defined in the other branch.
- A kernel never writes a buffer it reads: its inputs are live at the call, so its outputs get
  other offsets. Offsets and sizes are multiples of `alignment` (64 bytes by default).
- Self tail calls (loops) and recursion need nothing special: values carried to the next
  iteration or call are call arguments, which escape; each invocation has its own arena.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..lir.nodes import AtomValue, Block, FunctionDef, If, KernelCall, Match, Program, Proj, Var
from ..lir.types import TensorType, TupleT
from ..lir.walk import atoms_of, sub_blocks
from ..relay.ty import AnyDim

__all__ = ["ALIGNMENT", "Buffer", "FunctionPlan", "MemoryPlan", "plan_memory", "plan_function", "tensor_nbytes"]

ALIGNMENT = 64


@dataclass(frozen=True)
class Buffer:
    """A region of a function's arena holding one tensor: byte `offset` and `nbytes` (both
    multiples of the plan's alignment; nbytes >= the tensor's size), and the tensor's type."""

    offset: int
    nbytes: int
    type: TensorType


@dataclass(frozen=True)
class FunctionPlan:
    """The plan of one function: its arena size and where each planned tensor lives."""

    arena_bytes: int = 0
    outputs: Mapping[str, tuple] = field(default_factory=dict)  # KernelCall let var -> (Buffer, ...)
    views: Mapping[str, Buffer] = field(default_factory=dict)  # tensor var -> its Buffer

    @property
    def buffer_bytes(self) -> int:
        """Total size of the planned buffers: what separate allocations would take."""
        return sum(b.nbytes for bufs in self.outputs.values() for b in bufs)

    def summary(self) -> str:
        count = sum(len(b) for b in self.outputs.values())
        return f"{count} buffer(s), {self.buffer_bytes} B planned into a {self.arena_bytes} B arena"


EMPTY_PLAN = FunctionPlan()


@dataclass(frozen=True)
class MemoryPlan:
    functions: Mapping[str, FunctionPlan]
    alignment: int = ALIGNMENT

    def of(self, name: str) -> FunctionPlan:
        """The plan of function `name` (an empty plan when nothing of it is planned)."""
        return self.functions.get(name, EMPTY_PLAN)


def _itemsize(dtype: str) -> int:
    if dtype == "bool":
        return 1
    match = re.search(r"(\d+)(?:x(\d+))?$", dtype)
    if match is None:
        raise ValueError(f"cannot size dtype {dtype!r}")
    bits = int(match.group(1)) * int(match.group(2) or 1)
    return (bits + 7) // 8


def tensor_nbytes(ty: TensorType) -> int:
    count = 1
    for dim in ty.shape:
        count *= int(dim)
    return count * _itemsize(ty.dtype)


def _is_static(ty) -> bool:
    return isinstance(ty, TensorType) and not any(isinstance(d, AnyDim) for d in ty.shape)


def _leaves(ty) -> list:
    if isinstance(ty, TupleT):
        out = []
        for f in ty.fields:
            out.extend(_leaves(f))
        return out
    return [ty]


def _field_range(ty: TupleT, index: int) -> tuple[int, int]:
    start = sum(len(_leaves(f)) for f in ty.fields[:index])
    return start, start + len(_leaves(ty.fields[index]))


def plan_memory(
    program: Program, *, plannable: Callable[[TensorType], bool] | None = None, alignment: int = ALIGNMENT
) -> MemoryPlan:
    """Plans every function of `program` (see the module docstring). `plannable(tensor type)`
    narrows what may be planned (e.g. a backend keeping 0-d values in registers says no to them)."""
    plans = {}
    for func in program.functions:
        plan = plan_function(func, plannable=plannable, alignment=alignment)
        if plan.outputs:
            plans[func.name] = plan
    return MemoryPlan(plans, alignment)


@dataclass
class _Candidate:
    """A KernelCall result being considered: where it is defined, read last, and whether it escapes."""

    name: str
    leaves: list
    start: int
    end: int
    escapes: bool = False


def plan_function(
    func: FunctionDef, *, plannable: Callable[[TensorType], bool] | None = None, alignment: int = ALIGNMENT
) -> FunctionPlan:
    """The plan of one function (see plan_memory)."""
    candidates: dict[str, _Candidate] = {}
    # var name -> (candidate, first leaf, end leaf, var type): the part of a candidate's result it names
    tracked: dict[str, tuple[_Candidate, int, int, object]] = {}
    position = 0

    def accepts(ty) -> bool:
        return _is_static(ty) and (plannable is None or plannable(ty))

    def read(atom, at: int) -> None:
        entry = tracked.get(atom.name) if isinstance(atom, Var) else None
        if entry is not None:
            entry[0].end = max(entry[0].end, at)

    def escape(atom) -> None:
        entry = tracked.get(atom.name) if isinstance(atom, Var) else None
        if entry is not None:
            entry[0].escapes = True

    def visit(block: Block) -> None:
        nonlocal position
        for let in block.stmts:
            position += 1
            at = position
            value = let.value
            name = let.var.name
            if isinstance(value, KernelCall):
                for atom in value.args:
                    read(atom, at)
                leaves = _leaves(let.var.type)
                flat = isinstance(let.var.type, TensorType) or all(
                    isinstance(f, TensorType) for f in let.var.type.fields
                )
                if leaves and flat and all(accepts(t) for t in leaves):
                    cand = _Candidate(name, leaves, at, at)
                    candidates[name] = cand
                    tracked[name] = (cand, 0, len(leaves), let.var.type)
            elif isinstance(value, AtomValue) and isinstance(value.atom, Var) and value.atom.name in tracked:
                tracked[name] = tracked[value.atom.name][:3] + (let.var.type,)
                read(value.atom, at)
            elif isinstance(value, Proj) and isinstance(value.tuple_value, Var) and value.tuple_value.name in tracked:
                cand, first, _, _ = tracked[value.tuple_value.name]
                lo, hi = _field_range(value.tuple_value.type, value.index)
                tracked[name] = (cand, first + lo, first + hi, let.var.type)
                read(value.tuple_value, at)
            elif isinstance(value, If):
                read(value.cond, at)
            elif isinstance(value, Match):
                escape(value.scrutinee)  # never a tensor today; an ADT scrutinee is not tracked
            else:
                for atom in atoms_of(value):
                    escape(atom)
            for nested in sub_blocks(value):
                visit(nested)
                escape(nested.result)  # flows into this Let's variable
        # The function body's result is returned; a nested block's is handled by its parent.

    visit(func.body)
    escape(func.body.result)

    planned = [c for c in candidates.values() if not c.escapes]
    if not planned:
        return EMPTY_PLAN
    offsets = _assign_offsets(planned, alignment)
    outputs: dict[str, tuple] = {}
    arena = 0
    for cand in planned:
        bufs = []
        for leaf, (offset, size) in zip(cand.leaves, offsets[cand.name]):
            bufs.append(Buffer(offset, size, leaf))
            arena = max(arena, offset + size)
        outputs[cand.name] = tuple(bufs)
    views = {
        var: outputs[cand.name][first]
        for var, (cand, first, _end, ty) in tracked.items()
        if cand.name in outputs and isinstance(ty, TensorType)
    }
    return FunctionPlan(arena, outputs, views)


def _round_up(n: int, alignment: int) -> int:
    return max((n + alignment - 1) // alignment * alignment, alignment)


def _assign_offsets(planned: list[_Candidate], alignment: int) -> dict[str, list[tuple[int, int]]]:
    """Offsets by a best-fit walk over the buffers in order of definition: a buffer takes the
    smallest gap between live buffers that holds it, else the space above them."""
    items = []  # (start, end, order, candidate name, leaf index, size)
    for order, cand in enumerate(planned):
        for leaf_index, leaf in enumerate(cand.leaves):
            items.append(
                (cand.start, cand.end, order, cand.name, leaf_index, _round_up(tensor_nbytes(leaf), alignment))
            )
    items.sort(key=lambda item: (item[0], item[2], item[4]))
    live: list[tuple[int, int, int]] = []  # (offset, size, end)
    result: dict[str, list] = {cand.name: [None] * len(cand.leaves) for cand in planned}
    for start, end, _, name, leaf_index, size in items:
        live = [entry for entry in live if entry[2] >= start]
        live.sort()
        best, best_gap, cursor = None, None, 0
        for offset, used, _ in live:
            gap = offset - cursor
            if gap >= size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, offset + used)
        offset = cursor if best is None else best
        live.append((offset, size, end))
        result[name][leaf_index] = (offset, size)
    return result
