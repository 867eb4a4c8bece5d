"""Buffer indices rewritten so tvm 0.27's IterMapSimplify cannot mis-simplify them (a silently wrong read).

The bug (apache-tvm 0.27, src/arith/iter_affine_map.cc): `tirx.FlattenBuffer`, run by every
tvm.compile, passes each flattened buffer index through `arith::IterMapSimplify`. When a
`floordiv`/`floormod` by a constant c has a dividend whose constant part b (the dividend's value
with every iterator at its start: constants and non-iterator terms alike) is not a multiple of c,
IterMap "left-pads" the iterator by b mod c and, in a second pass, re-bases every floordiv/floormod
of that iterator on the padded one: SplitFloorModConst drops both the pad and the split's own
offset, SplitFloorDivConst subtracts the pad of whichever split it met first. Any other
floordiv/floormod of the same iterator whose offset differs is then off by the pad:

    iter_map_simplify([f % 2 * 2 + (f % 2 + 1) % 2], {f: [0, 4)})  ->  (f + 1) % 2 * 3   (f=0: 3, not 1)
    iter_map_simplify([(f + 1) // 2 + f // 2], {f: [0, 2)})        ->  (f + 1) // 2 * 2 - 1

A reshape whose result is sliced at an offset (or padded) produces this: the unravel of `v + 1`
over the input's shape, next to other divisions of the same fused loop. Without such an offset
nothing is padded and nothing went wrong in a sweep of ~20 000 kernel-shaped indices; symbolic
divisors and loop extents IterMap declines to simplify at all.

The rewrite, for an index holding such a division: first the index simplified knowing each
iterator's range (what tvm's StmtSimplify does before FlattenBuffer; it often removes the
division), then each division still padded, `floordiv(d, c)` / `floormod(d, c)`, with
r = b mod c (0 < r < c, or an expression when b is symbolic) and m = floormod(d - r, c), becomes

    floordiv(d, c) = floordiv(d - r, c) + select(m >= c - r, 1, 0)
    floormod(d, c) = select(m >= c - r, m + r - c, m + r)

equal for every integer d and every 0 <= r < c. `d - r` needs no padding, and IterMap does not
represent a select, so it leaves that index as it is: correct, only not re-associated. Kernels
without such a division, the common case, come back unchanged (the same object).
"""

from __future__ import annotations

__all__ = ["avoid_iter_map_padding", "needs_iter_map_padding"]


def avoid_iter_map_padding(func):
    """The PrimFunc with every buffer index holding a division that IterMap would pad rewritten as
    above. Loads, stores and block read/write regions (match_buffer sources too) are rewritten;
    values stored are left alone: FlattenBuffer simplifies indices only."""
    iterators = _Iterators(func)
    if not iterators.variables:
        return func
    return _IndexRewriter(iterators).rewrite(func)


def needs_iter_map_padding(division, iterators) -> bool:
    """Whether IterMap would left-pad for `division` (a FloorDiv/FloorMod node): a constant divisor
    above 1, a dividend that uses an iterator in a form IterMap represents, and a start value not
    provably a multiple of the divisor. `iterators`: the function's _Iterators."""
    from tvm import tirx

    divisor = division.b
    if not isinstance(divisor, tirx.IntImm) or divisor.value <= 1:
        return False
    if not iterators.used_in(division.a) or not _affine_in_iterators(division.a, iterators):
        return False
    return not _is_zero(iterators.residue_at_start(division.a, divisor))


def _affine_in_iterators(expr, iterators) -> bool:
    """Whether IterMap can represent `expr`: sums, products, floordiv and floormod of iterators, with
    any term free of iterators (a select, a cast or a load of an iterator makes IterMap give up on
    the whole index, which then needs no rewrite: a division rewritten before counts as such)."""
    from tvm import tirx

    if isinstance(expr, (tirx.Add, tirx.Sub, tirx.Mul, tirx.FloorDiv, tirx.FloorMod)):
        return _affine_in_iterators(expr.a, iterators) and _affine_in_iterators(expr.b, iterators)
    if isinstance(expr, (tirx.Var, tirx.IntImm)):
        return True
    return not iterators.used_in(expr)


class _Iterators:
    """Every loop and block iterator of a PrimFunc, with its range and its value at the start of it
    (loop variables at their minimum, block variables at their binding's value there)."""

    def __init__(self, func):
        import tvm
        import tvm_ffi
        from tvm import s_tir, sym, tirx

        definitions = []  # (variable, start, range), outer before inner

        def visit(node):
            if isinstance(node, tirx.For):
                definitions.append((node.loop_var, node.min, tvm.ir.Range.from_min_extent(node.min, node.extent)))
            else:
                for iter_var, value in zip(node.block.iter_vars, node.iter_values):
                    definitions.append((iter_var.var, value, iter_var.dom))

        tvm_ffi.structural_walk(func.body, [((tirx.For, s_tir.SBlockRealize), visit)], order="pre")
        self.variables = {var for var, _, _ in definitions}
        self._at_start = sym.Analyzer()  # iterators bound to their start values: simplify substitutes them
        self._in_range = sym.Analyzer()  # iterators bound to their ranges
        counts = {}
        for var, _, _ in definitions:
            counts[var] = counts.get(var, 0) + 1
        for var, start, domain in definitions:
            if counts[var] == 1:  # one defined twice is known by neither: its divisions count as padded
                self._at_start.bind(var, self._at_start.simplify(start))
                self._in_range.bind(var, domain)

    def used_in(self, expr) -> bool:
        import tvm_ffi
        from tvm import tirx

        found = []
        tvm_ffi.structural_walk(expr, [(tirx.Var, lambda var: found.append(var) if var in self.variables else None)])
        return bool(found)

    def residue_at_start(self, dividend, divisor):
        """The dividend's start value modulo the divisor (an IntImm, or an expression when symbolic)."""
        from tvm import tirx

        return self._at_start.simplify(tirx.floormod(dividend, divisor))

    def simplify(self, expr):
        """`expr` simplified for iterators within their ranges."""
        return self._in_range.simplify(expr)


class _IndexRewriter:
    """A structural mutation of the PrimFunc that rewrites the indices of loads, stores and regions."""

    def __init__(self, iterators: _Iterators):
        self.iterators = iterators

    def rewrite(self, func):
        import tvm
        import tvm_ffi
        from tvm import tirx

        callbacks = [
            (tvm.ir.expr.TensorLoad, self._load),
            (tvm.ir.expr.TensorRegion, self._region),
            (tirx.BufferStore, self._store),
        ]
        return tvm_ffi.structural_mutate(func, callbacks)

    def _load(self, load, mutator):
        from tvm import tirx

        indices = [self._index(index, mutator) for index in load.indices]
        if all(new.same_as(old) for new, old in zip(indices, load.indices)):
            return load
        return tirx.BufferLoad(load.source, indices, load.span)

    def _store(self, store, mutator):
        from tvm import tirx

        value = mutator.mutate(store.value)  # not an index: only the loads in it
        indices = [self._index(index, mutator) for index in store.indices]
        if value.same_as(store.value) and all(new.same_as(old) for new, old in zip(indices, store.indices)):
            return store
        return tirx.BufferStore(store.buffer, value, indices, store.span)

    def _region(self, region, mutator):
        import tvm
        from tvm import tirx

        ranges = []
        for old in region.region:
            low, extent = self._index(old.min, mutator), self._index(old.extent, mutator)
            same = low.same_as(old.min) and extent.same_as(old.extent)
            ranges.append(old if same else tvm.ir.Range.from_min_extent(low, extent))
        if all(new.same_as(old) for new, old in zip(ranges, region.region)):
            return region
        return tirx.BufferRegion(region.source, ranges)

    def _index(self, index, mutator):
        index = mutator.mutate(index)  # the loads inside it first (a gather's index)
        if not self._padded_divisions(index):
            return index
        index = self.iterators.simplify(index)
        return self._rewrite_divisions(index) if self._padded_divisions(index) else index

    def _padded_divisions(self, index) -> list:
        """The divisions of `index` (outside the loads in it) that IterMap would pad."""
        import tvm
        import tvm_ffi
        from tvm import tirx

        found = []

        def visit(node, visitor):
            if isinstance(node, (tirx.FloorDiv, tirx.FloorMod)) and needs_iter_map_padding(node, self.iterators):
                found.append(node)
            if not isinstance(node, tvm.ir.expr.TensorLoad):
                visitor.default_visit(node)

        tvm_ffi.structural_visit(index, [(object, visit)])
        return found

    def _rewrite_divisions(self, index):
        """`index` with each padded division replaced by its select form, innermost first."""
        import tvm
        import tvm_ffi
        from tvm import tirx

        def division(node, mutator):
            node = mutator.default_mutate(node)
            return self._select_form(node) if needs_iter_map_padding(node, self.iterators) else node

        return tvm_ffi.structural_mutate(
            index, [((tirx.FloorDiv, tirx.FloorMod), division), (tvm.ir.expr.TensorLoad, lambda load, _: load)]
        )

    def _select_form(self, division):
        from tvm import tirx

        dividend, divisor = division.a, division.b
        dtype = dividend.ty.dtype
        residue = self.iterators.residue_at_start(dividend, divisor)
        shifted = self.iterators.simplify(dividend - residue)  # its start is a multiple of the divisor
        remainder = tirx.floormod(shifted, divisor)
        wraps = remainder >= divisor - residue
        if isinstance(division, tirx.FloorDiv):
            one, zero = tirx.const(1, dtype), tirx.const(0, dtype)
            return tirx.floordiv(shifted, divisor) + tirx.Select(wraps, one, zero)
        return tirx.Select(wraps, remainder + (residue - divisor), remainder + residue)


def _is_zero(expr) -> bool:
    return getattr(expr, "value", None) == 0
