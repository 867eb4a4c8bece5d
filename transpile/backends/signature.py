"""An entry's signature, shared by every backend: its JSON description and the checked passage of values.

`signature_of(program, name)` describes the entry as JSON data (stored in artifacts and
manifests); `type_from_json` reads a type back. `Converters` builds, per type, the functions that
check and convert the caller's values before generated code runs (an EvaluationError names the
argument), and hand results back (0-d tensors as arrays, closures as checked callables); every
backend's entry wrapper goes through it, so the rules and messages are the same everywhere.
"""

from __future__ import annotations

import numpy as np

from ..errors import EvaluationError
from ..lir.nodes import Call, ClosureCall
from ..lir.types import AdtT, ClosureT, RefT, TensorType, TupleT, type_text
from ..lir.walk import iter_lets
from ..relay.ty import AnyDim
from ..runtime import ADTValue, RefValue
from ..runtime.boundary import ALIGNMENT, ArgumentPath, Mismatch, _int_range, gc_paused, intake_tensor, shape_fits

__all__ = [
    "signature_of",
    "type_to_json",
    "type_from_json",
    "needs_big_stack",
    "Converters",
    "tensor_fast_path",
    "flat_result_reader",
]


# ---------------------------------------------------------------- signature data (stored in the manifest)


def type_to_json(ty):
    if isinstance(ty, TensorType):
        return {"tensor": [[None if isinstance(d, AnyDim) else int(d) for d in ty.shape], ty.dtype]}
    if isinstance(ty, TupleT):
        return {"tuple": [type_to_json(f) for f in ty.fields]}
    if isinstance(ty, AdtT):
        return {"adt": ty.name}
    if isinstance(ty, ClosureT):
        return {"closure": [[type_to_json(p) for p in ty.params], type_to_json(ty.ret)]}
    if isinstance(ty, RefT):
        return {"ref": type_to_json(ty.value)}
    raise EvaluationError(f"the python backend cannot pass values of type {type_text(ty)} across the boundary")


def type_from_json(data):
    ((kind, value),) = data.items()
    if kind == "tensor":
        shape, dtype = value
        return TensorType(tuple(AnyDim() if d is None else d for d in shape), dtype)
    if kind == "tuple":
        return TupleT(tuple(type_from_json(f) for f in value))
    if kind == "adt":
        return AdtT(value)
    if kind == "closure":
        return ClosureT(tuple(type_from_json(p) for p in value[0]), type_from_json(value[1]))
    if kind == "ref":
        return RefT(type_from_json(value))
    raise ValueError(f"unknown type kind {kind!r} in an artifact signature")


def needs_big_stack(program) -> bool:
    """Whether calls may nest deeply: a cycle among functions through calls that stay calls (a self
    tail call becomes a loop; a closure call may reach any closure body), or ADT arguments."""
    closure_bodies = [f.name for f in program.functions if f.env is not None]
    edges: dict[str, set[str]] = {}
    for func in program.functions:
        targets = edges.setdefault(func.name, set())
        for let in iter_lets(func.body):
            value = let.value
            if isinstance(value, Call) and not (value.tail and value.func == func.name):
                targets.add(value.func)
            elif isinstance(value, ClosureCall):
                targets.update(closure_bodies)
    state: dict[str, int] = {}  # 1 = on the DFS stack, 2 = done
    for start in edges:
        if state.get(start):
            continue
        stack = [(start, iter(sorted(edges[start])))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                return True
            elif child in edges and not state.get(child):
                state[child] = 1
                stack.append((child, iter(sorted(edges[child]))))
    return False


def signature_of(program, entry_name: str) -> dict:
    """JSON data describing the entry: its Python name, parameter and result types, ADT layouts."""
    entry = program.entry_function
    return {
        "function": entry_name,
        "relay_entry": program.entry,
        "params": [{"name": p.name, "type": type_to_json(p.type)} for p in entry.params],
        "result": type_to_json(entry.ret),
        "adts": {
            adt.name: {c.relay_name: [type_to_json(t) for t in c.fields] for c in adt.constructors}
            for adt in program.adts
        },
        "big_stack": needs_big_stack(program) or any(_has(p.type, AdtT) for p in entry.params),
    }


def _has(ty, kind) -> bool:
    if isinstance(ty, kind):
        return True
    if isinstance(ty, TupleT):
        return any(_has(f, kind) for f in ty.fields)
    if isinstance(ty, ClosureT):
        return any(_has(p, kind) for p in ty.params) or _has(ty.ret, kind)
    if isinstance(ty, RefT):
        return _has(ty.value, kind)
    return False


# ---------------------------------------------------------------- converters


def _describe(value) -> str:
    from ..relay.interpreter.values import describe_value

    return describe_value(value)


_Path = ArgumentPath


def _fail(path: _Path, ty, value, detail: str = ""):
    message = f"{path.render()}: expected {type_text(ty)} but got {_describe(value)}"
    raise EvaluationError(message + (f" ({detail})" if detail else ""))


class Converters:
    """Builds, per LIR type, functions checking and converting values crossing the boundary."""

    def __init__(self, adts: dict, deep_call, ints_for_scalars: bool = False):
        self.adts = adts  # {adt name: {relay constructor: [field types]}}
        self.deep_call = deep_call
        # Whether in-range Python ints may stay as they are inside ADT values, for 0-d integer
        # tensors: a backend that reads such a field as a C integer (cpp) needs no array of it.
        self.ints_for_scalars = ints_for_scalars
        self._inbound: dict = {}
        self._outbound: dict = {}

    # values passed in by the caller --------------------------------------------------------

    def inbound(self, ty):
        cached = self._inbound.get(ty)
        if cached is None:
            cached = self._make_inbound(ty)
            self._inbound[ty] = cached
        return cached

    def _make_inbound(self, ty):
        if isinstance(ty, TensorType):
            return self._tensor(ty)
        if isinstance(ty, TupleT):
            fields = [self.inbound(f) for f in ty.fields]

            def tuple_value(value, path):
                if not isinstance(value, (tuple, list)) or len(value) != len(fields):
                    _fail(path, ty, value)
                return tuple(conv(v, _Path(path, f"field {i}")) for i, (conv, v) in enumerate(zip(fields, value)))

            return tuple_value
        if isinstance(ty, AdtT):
            return self._adt(ty)
        if isinstance(ty, ClosureT):
            return self._callback(ty)
        if isinstance(ty, RefT):
            contents = self.inbound(ty.value)

            def ref_value(value, path):
                if not isinstance(value, RefValue):
                    _fail(path, ty, value)
                # The cell is shared with the caller: convert its contents in place.
                value.value = contents(value.value, _Path(path, "the contents"))
                return value

            return ref_value
        raise EvaluationError(f"cannot pass a value of type {type_text(ty)} to generated code")

    def _tensor(self, ty: TensorType):
        dtype = np.dtype(ty.dtype)
        shape = ty.shape
        static = not any(isinstance(d, AnyDim) for d in shape)

        # Python ints for 0-d integer tensors (List[int32] items, mostly) skip the generic intake:
        # one range check and one array, ~0.5 µs instead of ~3.5 µs per value.
        low, high = _int_range(dtype) if shape == () and dtype.kind in "iu" else (1, 0)

        def tensor(value, path):
            if type(value) is np.ndarray:  # the common case stays a single type check
                array = value
            elif type(value) is int and low <= value <= high:
                return np.array(value, dtype)
            else:
                try:
                    array = intake_tensor(value, dtype, shape)
                except Mismatch as mismatch:
                    _fail(path, ty, value, mismatch.detail)
                if array is None:
                    _fail(path, ty, value)
            if array.dtype != dtype:
                _fail(path, ty, array)
            if static:
                if array.shape != shape:
                    _fail(path, ty, array)
            elif not shape_fits(array.shape, shape):
                _fail(path, ty, array)
            return array

        if low <= high and dtype != np.uint64:  # (uint64's range exceeds the int64 array below)
            tensor.bulk = lambda values: _ints_as_scalars(values, dtype, low, high)
        return tensor

    def _adt(self, ty: AdtT):
        layout = self.adts.get(ty.name)
        if layout is None:
            raise EvaluationError(f"the program has no ADT named {ty.name}")
        plans = {}  # constructor -> _AdtPlan, built on first use (a field may be of this very type)

        def plan_of(ctor: str):
            plan = plans.get(ctor)
            if plan is None:
                types = layout[ctor]
                recursive = [i for i, t in enumerate(types) if t == ty]
                index = recursive[-1] if recursive else None
                convs = [None if i == index else self.inbound(t) for i, t in enumerate(types)]
                labels = [f"field {i} of {ctor}" for i in range(len(types))]
                plan = plans[ctor] = _AdtPlan(types, index, convs, labels, ints=self.ints_for_scalars)
            return plan

        def adt_value(value, path):
            # Walks the spine of recursive values (a list's tails) in a loop, so long lists need
            # no deep recursion, and only notes the fields that need converting; they are
            # converted afterwards, in bulk where their converter can (Python ints for a
            # List[int32]), and the nodes holding them are rebuilt. A value needing no
            # conversion is returned as it is; paths are only built to report an error.
            spine = []  # the nodes, outermost first
            pending = {}  # (plan, field index) -> the depths along the spine where it converts
            node = value
            while True:
                if not isinstance(node, ADTValue) or node.constructor not in layout:
                    _bad_adt(_spine_path(spine, plans, path, 0, len(spine))[0], ty, node, layout)
                plan = plans.get(node.constructor) or plan_of(node.constructor)
                fields = node.fields
                if len(fields) != plan.arity:
                    at = _spine_path(spine, plans, path, 0, len(spine))[0]
                    _fail(at, ty, node, f"{node.constructor} takes {plan.arity} field(s), got {len(fields)}")
                for i, _, accepts, key in plan.checks:
                    if accepts is None or not accepts(fields[i]):
                        depths = pending.get(key)
                        if depths is None:
                            depths = pending[key] = []
                        depths.append(len(spine))
                spine.append(node)
                if plan.index is None:
                    break
                node = fields[plan.index]
            if not pending:
                return value
            with gc_paused():  # the rebuilt nodes all survive: collections would only walk them
                return _converted_spine(value, spine, pending, plans, path)

        return adt_value

    def _callback(self, ty: ClosureT):
        result = self.inbound(ty.ret)
        arity = len(ty.params)

        def closure_value(value, path):
            if not callable(value):
                _fail(path, ty, value)

            def callback(*args):
                outs = [self.outbound(t)(a) for t, a in zip(ty.params, args)]
                return result(value(*outs), _Path(None, f"the result of the function passed as {path.render()}"))

            callback.__wrapped__ = value
            callback.__transpile_arity__ = arity
            return callback

        return closure_value

    # values handed back to the caller -------------------------------------------------------

    def outbound(self, ty):
        """Identity for data; closures become checked callables running like the entry function."""
        cached = self._outbound.get(ty)
        if cached is None:
            cached = self._make_outbound(ty)
            self._outbound[ty] = cached
        return cached

    def _needs_outbound(self, ty, seen=None) -> bool:
        """Whether values of `ty` may hold numpy scalars (0-d tensors) or closures."""
        if isinstance(ty, TensorType):
            return ty.shape == ()
        if isinstance(ty, ClosureT):
            return True
        if isinstance(ty, TupleT):
            return any(self._needs_outbound(f, seen) for f in ty.fields)
        if isinstance(ty, RefT):
            return self._needs_outbound(ty.value, seen)
        if isinstance(ty, AdtT):
            seen = set() if seen is None else seen
            if ty.name in seen:
                return False
            seen.add(ty.name)
            layout = self.adts.get(ty.name, {})
            return any(self._needs_outbound(t, seen) for fields in layout.values() for t in fields)
        return False

    def _make_outbound(self, ty):
        if not self._needs_outbound(ty):
            return _identity
        if isinstance(ty, TensorType):
            return _as_array
        if isinstance(ty, ClosureT):
            return lambda fn: self.checked(fn, ty.params, ty.ret, "the returned closure")
        if isinstance(ty, TupleT):
            fields = [self.outbound(f) for f in ty.fields]
            return lambda value: tuple(conv(v) for conv, v in zip(fields, value))
        if isinstance(ty, RefT):
            contents = self.outbound(ty.value)

            def ref_out(cell):
                cell.value = contents(cell.value)  # in place: the cell may be shared
                return cell

            return ref_out
        if isinstance(ty, AdtT):
            return self._adt_out(ty)
        return _identity

    def _adt_out(self, ty: AdtT):
        layout = self.adts.get(ty.name, {})
        plans = {}

        def plan_of(ctor: str):
            plan = plans.get(ctor)
            if plan is None:
                types = layout.get(ctor, ())
                recursive = [i for i, t in enumerate(types) if t == ty]
                index = recursive[-1] if recursive else None
                outs = [None if i == index else self.outbound(t) for i, t in enumerate(types)]
                convs = [None if conv is _identity else conv for conv in outs]
                plan = plans[ctor] = _AdtPlan(types, index, convs, (), outbound=True)
            return plan

        def adt_out(value):
            spine = []  # iterative along the recursive field, like the inbound conversion
            converted_fields = {}
            node = value
            while True:
                plan = plans.get(node.constructor) or plan_of(node.constructor)
                fields = node.fields
                for i, conv, accepts, _ in plan.checks:
                    field = fields[i]
                    if accepts is not None and accepts(field):
                        continue
                    converted = conv(field)
                    if converted is not field:
                        converted_fields.setdefault(len(spine), list(fields))[i] = converted
                spine.append(node)
                if plan.index is None:
                    return _rebuilt_spine(value, spine, converted_fields, plans)
                node = fields[plan.index]

        return adt_out

    def checked(self, fn, param_types, ret_type, what: str):
        """`fn` (generated code) behind argument checks, numpy's quiet error state and a big stack."""
        convs = [self.inbound(t) for t in param_types]
        finish = self.outbound(ret_type)
        # Reference cells passed in may now hold numpy scalars: normalize their contents too.
        fix_refs = [(i, self.outbound(t)) for i, t in enumerate(param_types) if _has(t, RefT)]
        paths = [_Path(None, f"argument {i + 1} of {what}") for i in range(len(convs))]
        arity = len(convs)
        run = self.deep_call
        name = getattr(fn, "__name__", "f")

        def checked_call(*args, **kwargs):
            if kwargs:
                raise EvaluationError(f"{what} takes positional arguments only, got keyword(s) {', '.join(kwargs)}")
            if len(args) != arity:
                raise EvaluationError(f"{what} expects {arity} argument(s) but got {len(args)}")
            result, converted = run(_convert_and_call, fn, convs, args, paths)
            for index, fix in fix_refs:
                _converted_deep(fix, converted[index])
            return _converted_deep(finish, result)

        checked_call.__name__ = checked_call.__qualname__ = name
        checked_call.__doc__ = fn.__doc__
        checked_call.__wrapped__ = fn
        return checked_call



class _AdtPlan:
    """How one constructor's fields convert: `checks` lists (index, converter, accepts, key) for
    every field but the recursive one (`index`); `accepts(value)`, when not None, says cheaply that
    a value already has its final form (a numpy array of the field's dtype and shape); `key` is
    (plan, index), which names the field across a value's nodes."""

    __slots__ = ("arity", "index", "labels", "checks")

    def __init__(self, types, index, convs, labels, outbound: bool = False, ints: bool = False):
        self.arity = len(types)
        self.index = index
        self.labels = labels
        self.checks = tuple(
            (i, conv, _final_array_test(t, outbound, ints), (self, i))
            for i, (t, conv) in enumerate(zip(types, convs))
            if conv is not None
        )


def _final_array_test(ty, outbound: bool, ints: bool = False):
    """A test that a value of a tensor type needs no conversion, or None (other types). With
    `ints`, in-range Python ints are final for 0-d integer tensors (see Converters)."""
    if not isinstance(ty, TensorType):
        return None
    if outbound:  # only 0-d values convert on the way out (numpy scalars become arrays)
        return lambda v: type(v) is np.ndarray
    dtype, shape = np.dtype(ty.dtype), tuple(ty.shape)
    if ints and shape == () and dtype.kind in "iu":
        low, high = _int_range(dtype)
        return lambda v: (type(v) is int and low <= v <= high) or (type(v) is np.ndarray and v.dtype == dtype and v.shape == ())
    if any(isinstance(d, AnyDim) for d in shape):
        return lambda v: type(v) is np.ndarray and v.dtype == dtype and shape_fits(v.shape, shape)
    return lambda v: type(v) is np.ndarray and v.dtype == dtype and v.shape == shape


def _converted_spine(value, spine, pending, plans, path):
    """`value` rebuilt with its `pending` fields converted ({(plan, field index): depths}).

    Fields whose converter has a `bulk` form are converted together when it takes them all (a
    List of Python ints: one array); otherwise one by one in spine order, so that an error names
    the first bad field. The nodes above the deepest converted one are rebuilt."""
    converted = {}
    for key, depths in pending.items():
        plan, i = key
        bulk = getattr(_field_converter(plan, i), "bulk", None)
        items = bulk([spine[d].fields[i] for d in depths]) if bulk is not None else None
        if items is None:
            return _rebuilt_spine(value, spine, _converted_one_by_one(spine, pending, plans, path), plans)
        converted[key] = items
    if len(converted) == 1:
        ((plan, i), items), = converted.items()
        depths = pending[(plan, i)]
        if plan.arity == 2 and plan.index == 1 - i and len(depths) == depths[-1] + 1:
            # A List's spine: the same constructor down to the deepest converted node (a
            # (plan, field) pair belongs to one constructor), each node rebuilt with its item.
            return _rebuilt_pairs(spine[0].constructor, items, spine[depths[-1]].fields[plan.index], i)
    new_fields = {}
    for (plan, i), items in converted.items():
        for depth, item in zip(pending[(plan, i)], items):
            fields = new_fields.get(depth)
            if fields is None:
                fields = new_fields[depth] = list(spine[depth].fields)
            fields[i] = item
    return _rebuilt_spine(value, spine, new_fields, plans)


def _rebuilt_pairs(constructor, items, tail, item_index):
    make = ADTValue
    if item_index == 0:
        for item in reversed(items):
            tail = make(constructor, (item, tail))
    else:
        for item in reversed(items):
            tail = make(constructor, (tail, item))
    return tail


def _converted_one_by_one(spine, pending, plans, path) -> dict:
    """{depth: the node's fields after conversion}, converting the pending fields in spine order."""
    order = sorted((depth, i, plan) for (plan, i), depths in pending.items() for depth in depths)
    converted_fields = {}
    depth_of_path, at = 0, path
    for depth, i, plan in order:
        node = spine[depth]
        at, depth_of_path = _spine_path(spine, plans, at, depth_of_path, depth)
        item = _field_converter(plan, i)(node.fields[i], _Path(at, plan.labels[i]))
        if item is not node.fields[i]:
            converted_fields.setdefault(depth, list(node.fields))[i] = item
    return converted_fields


def _field_converter(plan, i):
    for index, conv, _, _ in plan.checks:
        if index == i:
            return conv
    raise AssertionError(f"field {i} has no converter")


def _ints_as_scalars(values, dtype, low, high):
    """0-d arrays of `dtype` for a list of Python ints all within [low, high], or None."""
    for v in values:
        if type(v) is not int:
            return None
    try:
        wide = np.array(values, dtype=np.int64)
    except OverflowError:
        return None
    if len(wide) and (wide.min() < low or wide.max() > high):
        return None
    # 0-d views of one array: they do not overlap, and cost a fifth of separate arrays.
    array = wide.astype(dtype)
    return [array[k, ...] for k in range(len(array))]


def _spine_path(spine, plans, path, depth_of_path, depth):
    """(the path of the node at `depth` along an ADT value's spine, depth) from the path of the
    node at `depth_of_path`: paths are built only when a field converts or an error is reported."""
    while depth_of_path < depth:
        plan = plans[spine[depth_of_path].constructor]
        path = _Path(path, plan.labels[plan.index])
        depth_of_path += 1
    return path, depth_of_path


def _rebuilt_spine(value, spine, converted_fields, plans):
    """`value` itself when no field converted, else new nodes from the deepest converted one up."""
    if not converted_fields:
        return value
    deepest = max(converted_fields)
    result = None
    for depth in range(deepest, -1, -1):
        node = spine[depth]
        fields = converted_fields.get(depth)
        if fields is None:
            fields = list(node.fields)
        if depth < deepest:  # the deepest converted node keeps its tail, unchanged
            fields[plans[node.constructor].index] = result
        result = ADTValue(node.constructor, tuple(fields))
    return result


def _bad_adt(path, ty, value, layout):
    if not isinstance(value, ADTValue):
        _fail(path, ty, value)
    _fail(path, ty, value, f"constructor {value.constructor} is not one of {', '.join(layout)}")


def _identity(value):
    return value


def _as_array(value):
    # Generated code computes on 0-d values as numpy scalars; callers always get 0-d arrays.
    return np.asarray(value) if isinstance(value, np.generic) else value


def _converted_deep(conv, *args):
    """conv(*args), again on run_deep's big stack if the value nests deeper than this thread allows.

    Conversions walk a List's spine in a loop but recurse into other fields (a tree, a List of
    Lists): only values nested thousands deep need the big stack, and they pay for it alone."""
    try:
        return conv(*args)
    except RecursionError:
        from ..relay.deep import run_deep

        return run_deep(conv, *args)  # conversions are pure (ref cells are normalized idempotently)


def _convert_all(convs, args, paths):
    return [conv(a, path) for conv, a, path in zip(convs, args, paths)]


def _convert_and_call(fn, convs, args, paths):
    converted = _converted_deep(_convert_all, convs, args, paths)
    with np.errstate(all="ignore"):
        return fn(*converted), converted


def tensor_fast_path(typed, params, result_type, checked, call_native, aligned_only: bool = False):
    """`checked` with a short cut for its common case, C-contiguous writable numpy arrays of the
    parameters' exact dtypes and shapes, passed to `typed` (a native function taking the tensors
    and returning a tensor or an array of the flattened result tensors): no flat arrays, no
    per-call objects, no numpy error state (native code ignores it). Every other call goes to
    `checked`, so every check and error message stays there. With `aligned_only`, arrays that are
    not 64-byte aligned also take `checked` (for natives that do not copy them themselves)."""
    import tvm_ffi

    from_dlpack = tvm_ffi.from_dlpack
    expected = []
    for ty in params:
        static = not any(isinstance(d, AnyDim) for d in ty.shape)
        expected.append((np.dtype(ty.dtype), tuple(ty.shape), static))
    arity = len(expected)
    finish = flat_result_reader(result_type)

    def fast_call(*args, **kwargs):
        if kwargs or len(args) != arity:
            return checked(*args, **kwargs)
        tensors = []
        for value, (dtype, shape, static) in zip(args, expected):
            if (
                type(value) is not np.ndarray
                or value.dtype != dtype
                or not (value.shape == shape if static else shape_fits(value.shape, shape))
            ):
                return checked(*args)
            flags = value.flags
            if not (flags.c_contiguous and flags.writeable):
                return checked(*args)
            tensor = from_dlpack(value)
            if aligned_only and value.ndim and tensor.data_ptr() % ALIGNMENT:
                return checked(*args)
            tensors.append(tensor)
        return finish(call_native(typed, *tensors))

    fast_call.__name__ = fast_call.__qualname__ = checked.__name__
    fast_call.__doc__ = checked.__doc__
    fast_call.__wrapped__ = checked
    return fast_call


def flat_result_reader(ty):
    """Reads the typed export's result (a tensor, or an array of the flattened tuple's tensors)."""
    from_dlpack = np.from_dlpack
    if isinstance(ty, TensorType):
        return from_dlpack

    def build(t, items):
        if isinstance(t, TupleT):
            return tuple(build(f, items) for f in t.fields)
        return from_dlpack(next(items))

    return lambda result: build(ty, iter(tuple(result)))
