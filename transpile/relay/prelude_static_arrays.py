"""The static tensor-array functions that combine several elements: unstack, scatter, split, concat, stack, gather.

A mixin of StaticTensorArrayOps (prelude_static.py), which provides the names, the ADT of this
shape (`tensor_type_var`, `get_ctor`), the ADTs of other shapes (`_get_adt_by_shape`), the
single-element functions and `_define` (adds a function unless the module has it).
"""

from __future__ import annotations

from .expr import Clause, Function, If, Let, Match, PatternConstructor, PatternVar, PatternWildcard, Var, const
from .ty import Any, TensorType, scalar_type

__all__ = ["StaticTensorArrayCombinators"]


def _int32(name: str) -> Var:
    return Var(name, scalar_type("int32"))


def _length(tensor):
    """The first dimension of `tensor`, computed at run time."""
    from . import op

    return op.take(op.shape_of(tensor), const(0))



def concat_fold(tensor_array, recurse, concatenate, empty, cons, nil) -> Match:
    """The body of tensor_array_concat: `empty` for [], else the elements joined pairwise by `concatenate`,
    the tail through `recurse` (the function's own GlobalVar)."""
    hd, tl = Var("hd"), Var("tl")
    joined = concatenate(hd, recurse(tl))
    rest = Match(tl, [Clause(PatternConstructor(nil), hd), Clause(PatternWildcard(), joined)], False)
    clauses = [
        Clause(PatternConstructor(nil), empty),
        Clause(PatternConstructor(cons, [PatternVar(hd), PatternVar(tl)]), rest),
    ]
    return Match(tensor_array, clauses, False)

class StaticTensorArrayCombinators:
    """Functions over whole static tensor arrays (see StaticTensorArrayOps)."""

    def define_tensor_array_unstack(self) -> None:
        """tensor_array_unstack(t): the rows of a Tensor[shape] as an array of tensors of shape[1:]."""
        if not self.shape:
            return
        from . import op

        def build(gv):
            row_type, row_ctor, _ = self._get_adt_by_shape(self.shape[1:])
            helper = self._helper_var("tensor_array_unstack_helper")
            i, up = _int32("i"), _int32("up")
            t = Var("t", TensorType(self.shape, self.dtype))
            helper_body = If(
                op.equal(i, up),
                self.nil(),
                self.cons(row_ctor(op.take(t, i, axis=0)), helper(op.add(i, const(1)), up, t)),
            )
            self.prelude.mod[helper] = Function([i, up, t], helper_body, self.list(row_type()), [])

            tensor = Var("tensor", TensorType(self.shape, self.dtype))
            return Function([tensor], helper(const(0), _length(tensor), tensor), self.list(row_type()), [])

        self._define("tensor_array_unstack", build)

    def define_tensor_array_scatter(self, indices_shape=None, force_update=False) -> None:
        """tensor_array_scatter(ta, indices, values): ta with element indices[k] replaced by values[k].

        With `indices_shape` the indices are typed with that static shape and the function is
        named with `_indices_<dims>` appended; `force_update` redefines an existing one.
        """
        from . import op

        extra_shapes = {"indices": indices_shape} if indices_shape is not None else None
        indices_type = TensorType(indices_shape if indices_shape is not None else [Any()], "int32")
        self.define_tensor_array_read()
        self.define_tensor_array_write()

        def build(gv):
            write = self.get_global_var("tensor_array_write")
            read = self.get_global_var("tensor_array_read")
            helper = self._helper_var("tensor_array_scatter_helper", extra_shapes)
            ta = Var("ta", self._tensor_array_t())
            current, limit = _int32("current"), _int32("limit")
            indices_ = Var("indices_", indices_type)
            values_ = Var("values_", self._tensor_array_t())
            helper_body = If(
                op.equal(current, limit),
                ta,
                helper(
                    write(ta, op.take(indices_, current), read(values_, current)),
                    op.add(current, const(1)),
                    limit,
                    indices_,
                    values_,
                ),
            )
            self.prelude.mod[helper] = Function(
                [ta, current, limit, indices_, values_], helper_body, self._tensor_array_t(), []
            )

            tensor_array = Var("tensor_array", self._tensor_array_t())
            indices = Var("indices", indices_type)
            values = Var("values", self._tensor_array_t())
            count = _length(indices) if indices_shape is None else const(int(indices_type.shape[0]))
            body = helper(tensor_array, const(0), count, indices, values)
            return Function([tensor_array, indices, values], body, self._tensor_array_t(), [])

        self._define("tensor_array_scatter", build, force_update, extra_shapes)

    def define_tensor_array_split(self, value_shape=None, lengths_shape=None, force_update=False) -> None:
        """tensor_array_split(ta, value, lengths): element k of ta replaced by the next lengths[k] rows of value.

        The array holds tensors of first dim `?`. `value_shape`/`lengths_shape` type the value and
        lengths statically; `force_update` redefines an existing split with them (same name).
        """
        if not self.shape:
            return
        from . import op

        def build(gv):
            out_type, _, out_ops = self._get_adt_by_shape([Any(), *self.shape[1:]])
            out_ops.define_tensor_array_write()
            write = out_ops.get_global_var("tensor_array_write")
            if value_shape is None:
                self.define_tensor_take()
                value_type, take = self.tensor_type_var, self.get_global_var("tensor_take")
            else:
                value_type, _, value_ops = self._get_adt_by_shape(value_shape)
                value_ops.define_tensor_take()
                take = value_ops.get_global_var("tensor_take")
            lengths_type = TensorType(lengths_shape if lengths_shape is not None else [Any()], "int32")
            helper = self._helper_var("ta_split_helper")

            ta = Var("tensor_array", self.list(out_type()))
            value1 = Var("value1", value_type())
            offset1, current1, limit1 = _int32("offset1"), _int32("current1"), _int32("limit1")
            lengths1 = Var("lengths", lengths_type)
            length = op.take(lengths1, current1)
            helper_body = If(
                op.equal(current1, limit1),
                ta,
                write(
                    helper(ta, value1, op.add(offset1, length), op.add(current1, const(1)), limit1, lengths1),
                    current1,
                    take(value1, offset1, op.add(length, offset1)),
                ),
            )
            self.prelude.mod[helper] = Function(
                [ta, value1, offset1, current1, limit1, lengths1], helper_body, self.list(out_type()), []
            )

            tensor_array = Var("tensor_array", self.list(out_type()))
            value = Var("value", value_type())
            lengths = Var("lengths", lengths_type)
            count = _length(lengths) if lengths_shape is None else const(int(lengths_type.shape[0]))
            body = helper(tensor_array, value, const(0), const(0), count, lengths)
            return Function([tensor_array, value, lengths], body, self.list(out_type()), [])

        self._define("tensor_array_split", build, force_update)

    def define_tensor_array_concat(self) -> None:
        """tensor_array_concat(ta): the elements (of first dim `?`) joined on axis 0; tensor_nil for []."""
        if not self.shape:
            return

        def build(gv):
            out_type, _, out_ops = self._get_adt_by_shape([Any(), *self.shape[1:]])
            out_ops.define_tensor_concatenate()
            concatenate = out_ops.get_global_var("tensor_concatenate")
            tensor_array = Var("tensor_array", self.list(out_type()))
            body = concat_fold(tensor_array, gv, concatenate, out_ops.get_ctor("tensor_nil")(), self.cons, self.nil)
            return Function([tensor_array], body, out_type(), [])

        self._define("tensor_array_concat", build)

    def define_tensor_array_stack(self) -> None:
        """tensor_array_stack(ta): the elements stacked on a new axis 0 (of dim `?`; 1 with batch_dim 1)."""
        self.define_tensor_expand_dims()

        def build(gv):
            out_type, _, out_ops = self._get_adt_by_shape([self._new_axis(), *self.shape])
            out_ops.define_tensor_concatenate()
            concatenate = out_ops.get_global_var("tensor_concatenate")
            expand_dims = self.get_global_var("tensor_expand_dims")
            tensor_array = Var("tensor_array", self._tensor_array_t())
            expanded = Var("expanded", self.list(out_type()))
            if self.batch_dim == 1:
                stacked = self.prelude.id(self.prelude.hd(expanded))
            else:
                stacked = self.prelude.foldl(concatenate, self.prelude.hd(expanded), self.prelude.tl(expanded))
            # TVM repeated the map in both arguments of foldl; it is computed once here.
            body = Let(expanded, self.prelude.map(expand_dims, tensor_array), stacked)
            return Function([tensor_array], body, out_type(), [])

        self._define("tensor_array_stack", build)

    def define_tensor_array_gather(self) -> None:
        """tensor_array_gather(ta, indices): the elements at `indices`, stacked (as tensor_array_stack)."""
        from . import op

        self.define_tensor_array_read()
        self.define_tensor_array_stack()

        def build(gv):
            out_type, _, _ = self._get_adt_by_shape([self._new_axis(), *self.shape])
            stack = self.get_global_var("tensor_array_stack")
            read = self.get_global_var("tensor_array_read")
            helper = self._helper_var("tensor_array_gather_helper")
            ta = Var("ta", self._tensor_array_t())
            accu = Var("accu", self._tensor_array_t())
            current, limit = _int32("current"), _int32("limit")
            indices_ = Var("indices_", TensorType([Any()], "int32"))
            previous = op.subtract(current, const(1))
            # Walks the indices backwards, consing each element read onto the front of `accu`.
            helper_body = If(
                op.equal(current, const(0)),
                stack(accu),
                helper(ta, self.cons(read(ta, op.take(indices_, previous)), accu), previous, limit, indices_),
            )
            self.prelude.mod[helper] = Function([ta, accu, current, limit, indices_], helper_body, out_type(), [])

            tensor_array = Var("tensor_array", self._tensor_array_t())
            indices = Var("indices", TensorType([Any()], "int32"))
            count = _length(indices)
            body = helper(tensor_array, self.nil(), count, count, indices)
            return Function([tensor_array, indices], body, out_type(), [])

        self._define("tensor_array_gather", build)
