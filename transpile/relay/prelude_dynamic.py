"""TVM's dynamic tensor arrays: per-dtype tensor ADTs of any rank up to 6 and tensor-array functions.

`TensorArrayOps(prelude, "float32").register()` adds to `prelude.mod` the type

    type tensor_float32_t {
      tensor_nil_float32,
      tensor0_float32(Tensor[(), float32]),
      tensor1_float32(Tensor[(?), float32]),
      ...
      tensor6_float32(Tensor[(?, ?, ?, ?, ?, ?), float32]),
    }

and the functions over it and over `List[tensor_float32_t]` (tensor arrays), named
`<canonical>_<dtype>` as TVM named them: tensor_take, tensor_expand_dims, tensor_concatenate,
tensor_array, tensor_array_read/write, tensor_array_unstack_tensor1..6, tensor_array_scatter/split/
concat/stack/gather. The Prelude defines the types of DYNAMIC_DTYPES when it loads and the functions
of a dtype when they are first looked up (see Prelude.get_global_var).
"""

from __future__ import annotations

from .expr import Clause, Constructor, Function, GlobalVar, If, Let, Match, PatternConstructor, PatternVar
from .expr import PatternWildcard, TypeData, Var, const
from .prelude_static import TensorArrayLookupError, check_dtype
from .prelude_static_arrays import concat_fold
from .ty import Any, GlobalTypeVar, TensorType, scalar_type

__all__ = ["TensorArrayOps", "DYNAMIC_DTYPES", "MAX_RANK"]

# The dtypes TVM's Prelude defined tensor arrays for.
DYNAMIC_DTYPES = ("float32", "float16", "float64", "int32", "uint8", "int8", "int16", "uint16", "int64")
MAX_RANK = 6


def _int32(name: str) -> Var:
    return Var(name, scalar_type("int32"))


def _length(tensor):
    from . import op

    return op.take(op.shape_of(tensor), const(0))


class TensorArrayOps:
    """Defines the dynamic tensor array of one dtype in `prelude.mod` (TVM's class of that name)."""

    def __init__(self, prelude, dtype: str):
        self.prelude = prelude
        self.dtype = check_dtype(dtype)
        self.list, self.cons, self.nil = prelude.mod.get_type("List")

    def get_name(self, canonical: str) -> str:
        if canonical == "tensor_t":
            return f"tensor_{self.dtype}_t"
        return f"{canonical}_{self.dtype}"

    def get_global_var(self, canonical: str) -> GlobalVar:
        return self.prelude.mod.get_global_var(self.get_name(canonical))

    def get_type(self, canonical: str) -> GlobalTypeVar:
        return self.prelude.mod.get_global_type_var(self.get_name(canonical))

    def get_ctor(self, canonical: str) -> Constructor:
        _, *constructors = self.prelude.mod.get_type(self.get_name("tensor_t"))
        name = self.get_name(canonical)
        for ctor in constructors:
            if ctor.name_hint == name:
                return ctor
        raise TensorArrayLookupError(f"type {self.get_name('tensor_t')} has no constructor {name}")

    @property
    def tensor_type_var(self) -> GlobalTypeVar:
        self.define_tensor_adt()
        return self.get_type("tensor_t")

    def _tensor_t(self):
        return self.tensor_type_var()

    def _tensor_array_t(self):
        return self.list(self.tensor_type_var())

    def _rank_ctor(self, rank: int) -> Constructor:
        return self.get_ctor(f"tensor{rank}")

    def _any_tensor(self, rank: int) -> TensorType:
        return TensorType([Any()] * rank, self.dtype)

    def is_defined(self, canonical: str) -> bool:
        name = self.get_name(canonical)
        return any(gv.name_hint == name for gv in self.prelude.mod.get_global_vars())

    def _define(self, canonical: str, build) -> None:
        """Adds `build(GlobalVar)` as the function `canonical` unless the module has it already."""
        if not self.is_defined(canonical):
            gv = GlobalVar(self.get_name(canonical))
            self.prelude.mod[gv] = build(gv)

    def _match_ranks(self, value, ranks, body_of):
        """`match (value) { tensorK(%tK) => body_of(K, %tK) | ... }` over `ranks`."""
        clauses = []
        for rank in ranks:
            t = Var(f"t{rank}")
            clauses.append(Clause(PatternConstructor(self._rank_ctor(rank), [PatternVar(t)]), body_of(rank, t)))
        return Match(value, clauses, False)

    # ----- the ADT and the functions over one tensor ----------------------------------------
    def define_tensor_adt(self) -> None:
        """`type tensor_<dtype>_t { tensor_nil_<dtype>, tensor0_<dtype>(Tensor[()]), ..., tensor6_<dtype>(...) }`."""
        name = self.get_name("tensor_t")
        if any(gtv.name_hint == name for gtv in self.prelude.mod.get_global_type_vars()):
            return
        gtv = GlobalTypeVar(name)
        constructors = [Constructor(self.get_name("tensor_nil"), [], gtv)]
        constructors += [
            Constructor(self.get_name(f"tensor{rank}"), [self._any_tensor(rank)], gtv) for rank in range(MAX_RANK + 1)
        ]
        self.prelude.mod[gtv] = TypeData(gtv, [], constructors)

    def define_tensor_take(self) -> None:
        """tensor_take(t, lower, upper): rows lower..upper-1 of a tensor of rank >= 1."""
        from . import op

        def build(gv):
            tensor = Var("tensor", self._tensor_t())
            lower, upper = _int32("lower"), _int32("upper")
            rows = op.arange(lower, upper, dtype="int32")
            body = self._match_ranks(
                tensor, range(1, MAX_RANK + 1), lambda rank, t: self._rank_ctor(rank)(op.take(t, rows, axis=0))
            )
            return Function([tensor, lower, upper], body, self._tensor_t(), [])

        self._define("tensor_take", build)

    def define_tensor_expand_dims(self) -> None:
        """tensor_expand_dims(x): a tensor of rank < 6 with a new leading axis."""
        from . import op

        def build(gv):
            x = Var("x", self._tensor_t())
            body = self._match_ranks(
                x, range(MAX_RANK), lambda rank, t: self._rank_ctor(rank + 1)(op.expand_dims(t, 0, 1))
            )
            return Function([x], body, self._tensor_t(), [])

        self._define("tensor_expand_dims", build)

    def define_tensor_concat(self) -> None:
        """tensor_concatenate(x, y): two tensors of one rank (1..6) joined on axis 0."""
        from . import op

        def build(gv):
            x, y = Var("x", self._tensor_t()), Var("y", self._tensor_t())

            def join(rank, first):
                second = Var(f"t{rank}2")
                ctor = self._rank_ctor(rank)
                clause = Clause(
                    PatternConstructor(ctor, [PatternVar(second)]), ctor(op.concatenate([first, second], axis=0))
                )
                return Match(y, [clause], False)

            return Function([x, y], self._match_ranks(x, range(1, MAX_RANK + 1), join), self._tensor_t())

        self._define("tensor_concatenate", build)

    # ----- tensor arrays ---------------------------------------------------------------------
    def define_tensor_array(self) -> None:
        """tensor_array(n): a list of n tensor_nil."""
        from . import op

        def build(gv):
            n = _int32("x")
            nil_tensor = self.get_ctor("tensor_nil")
            body = If(op.equal(n, const(0)), self.nil(), self.cons(nil_tensor(), gv(op.subtract(n, const(1)))))
            return Function([n], body, self._tensor_array_t(), [])

        self._define("tensor_array", build)

    def define_tensor_array_read(self) -> None:
        def build(gv):
            tensor_array, n = Var("tensor_array", self._tensor_array_t()), _int32("x")
            return Function([tensor_array, n], self.prelude.nth(tensor_array, n), self._tensor_t(), [])

        self._define("tensor_array_read", build)

    def define_tensor_array_write(self) -> None:
        def build(gv):
            tensor_array, n, v = Var("tensor_array", self._tensor_array_t()), _int32("x"), Var("v", self._tensor_t())
            return Function([tensor_array, n, v], self.prelude.update(tensor_array, n, v), self._tensor_array_t(), [])

        self._define("tensor_array_write", build)

    def define_tensor_array_unstack(self, rank: int) -> None:
        """tensor_array_unstack_tensor<rank>(t): the rows of a Tensor of that rank as a tensor array."""
        from . import op

        def build(gv):
            helper = GlobalVar(self.get_name(f"tensor_array_unstack_tensor{rank}_helper"))
            i, up = _int32("i"), _int32("up")
            t = Var("t", self._any_tensor(rank))
            row = self._rank_ctor(rank - 1)(op.take(t, i, axis=0))
            helper_body = If(op.equal(i, up), self.nil(), self.cons(row, helper(op.add(i, const(1)), up, t)))
            self.prelude.mod[helper] = Function([i, up, t], helper_body, self._tensor_array_t(), [])
            tensor = Var("tensor", self._any_tensor(rank))
            return Function([tensor], helper(const(0), _length(tensor), tensor), self._tensor_array_t(), [])

        self._define(f"tensor_array_unstack_tensor{rank}", build)

    # TVM's names for the unstack of each rank.
    def define_tensor_array_unstack_tensor1(self) -> None:
        self.define_tensor_array_unstack(1)

    def define_tensor_array_unstack_tensor2(self) -> None:
        self.define_tensor_array_unstack(2)

    def define_tensor_array_unstack_tensor3(self) -> None:
        self.define_tensor_array_unstack(3)

    def define_tensor_array_unstack_tensor4(self) -> None:
        self.define_tensor_array_unstack(4)

    def define_tensor_array_unstack_tensor5(self) -> None:
        self.define_tensor_array_unstack(5)

    def define_tensor_array_unstack_tensor6(self) -> None:
        self.define_tensor_array_unstack(6)

    def define_tensor_array_scatter(self) -> None:
        """tensor_array_scatter(ta, indices, values): ta with element indices[k] replaced by values[k]."""
        from . import op

        self.define_tensor_array_read()
        self.define_tensor_array_write()

        def build(gv):
            write, read = self.get_global_var("tensor_array_write"), self.get_global_var("tensor_array_read")
            helper = GlobalVar(self.get_name("tensor_array_scatter_helper"))
            ta = Var("ta", self._tensor_array_t())
            current, limit = _int32("current"), _int32("limit")
            indices_ = Var("indices_", TensorType([Any()], "int32"))
            values_ = Var("values_", self._tensor_array_t())
            next_ta = write(ta, op.take(indices_, current), read(values_, current))
            helper_body = If(
                op.equal(current, limit), ta, helper(next_ta, op.add(current, const(1)), limit, indices_, values_)
            )
            self.prelude.mod[helper] = Function(
                [ta, current, limit, indices_, values_], helper_body, self._tensor_array_t(), []
            )
            tensor_array = Var("tensor_array", self._tensor_array_t())
            indices = Var("indices", TensorType([Any()], "int32"))
            values = Var("values", self._tensor_array_t())
            body = helper(tensor_array, const(0), _length(indices), indices, values)
            return Function([tensor_array, indices, values], body, self._tensor_array_t(), [])

        self._define("tensor_array_scatter", build)

    def define_tensor_array_split(self) -> None:
        """tensor_array_split(ta, value, lengths): element k of ta replaced by the next lengths[k] rows of value."""
        from . import op

        self.define_tensor_array_write()
        self.define_tensor_take()

        def build(gv):
            write, take = self.get_global_var("tensor_array_write"), self.get_global_var("tensor_take")
            helper = GlobalVar(self.get_name("ta_split_helper"))
            ta, value1 = Var("tensor_array", self._tensor_array_t()), Var("value1", self._tensor_t())
            offset1, current1, limit1 = _int32("offset1"), _int32("current1"), _int32("limit1")
            lengths1 = Var("lengths", TensorType([Any()], "int32"))
            length = op.take(lengths1, current1)
            rest = helper(ta, value1, op.add(offset1, length), op.add(current1, const(1)), limit1, lengths1)
            helper_body = If(
                op.equal(current1, limit1), ta, write(rest, current1, take(value1, offset1, op.add(length, offset1)))
            )
            self.prelude.mod[helper] = Function(
                [ta, value1, offset1, current1, limit1, lengths1], helper_body, self._tensor_array_t(), []
            )
            tensor_array, value = Var("tensor_array", self._tensor_array_t()), Var("value", self._tensor_t())
            lengths = Var("lengths", TensorType([Any()], "int32"))
            body = helper(tensor_array, value, const(0), const(0), _length(lengths), lengths)
            return Function([tensor_array, value, lengths], body, self._tensor_array_t(), [])

        self._define("tensor_array_split", build)

    def define_tensor_array_concat(self) -> None:
        """tensor_array_concat(ta): the elements joined on axis 0; tensor_nil for an empty array."""
        self.define_tensor_concat()

        def build(gv):
            concatenate = self.get_global_var("tensor_concatenate")
            tensor_array = Var("tensor_array", self._tensor_array_t())
            body = concat_fold(tensor_array, gv, concatenate, self.get_ctor("tensor_nil")(), self.cons, self.nil)
            return Function([tensor_array], body, self._tensor_t(), [])

        self._define("tensor_array_concat", build)

    def define_tensor_array_stack(self) -> None:
        """tensor_array_stack(ta): the elements stacked on a new axis 0."""
        self.define_tensor_expand_dims()
        self.define_tensor_concat()

        def build(gv):
            expand_dims = self.get_global_var("tensor_expand_dims")
            concatenate = self.get_global_var("tensor_concatenate")
            tensor_array = Var("tensor_array", self._tensor_array_t())
            expanded = Var("expanded", self._tensor_array_t())
            stacked = self.prelude.foldl(concatenate, self.prelude.hd(expanded), self.prelude.tl(expanded))
            body = Let(expanded, self.prelude.map(expand_dims, tensor_array), stacked)
            return Function([tensor_array], body, self._tensor_t(), [])

        self._define("tensor_array_stack", build)

    def define_tensor_array_gather(self) -> None:
        """tensor_array_gather(ta, indices): the elements at `indices`, stacked.

        TVM defined this one but left it out of register() (it called a helper its class lacked).
        """
        from . import op

        self.define_tensor_array_read()
        self.define_tensor_array_stack()

        def build(gv):
            stack, read = self.get_global_var("tensor_array_stack"), self.get_global_var("tensor_array_read")
            helper = GlobalVar(self.get_name("tensor_array_gather_helper"))
            ta, accu = Var("ta", self._tensor_array_t()), Var("accu", self._tensor_array_t())
            current, limit = _int32("current"), _int32("limit")
            indices_ = Var("indices_", TensorType([Any()], "int32"))
            previous = op.subtract(current, const(1))
            helper_body = If(
                op.equal(current, const(0)),
                stack(accu),
                helper(ta, self.cons(read(ta, op.take(indices_, previous)), accu), previous, limit, indices_),
            )
            self.prelude.mod[helper] = Function([ta, accu, current, limit, indices_], helper_body, self._tensor_t(), [])
            tensor_array = Var("tensor_array", self._tensor_array_t())
            indices = Var("indices", TensorType([Any()], "int32"))
            count = _length(indices)
            body = helper(tensor_array, self.nil(), count, count, indices)
            return Function([tensor_array, indices], body, self._tensor_t(), [])

        self._define("tensor_array_gather", build)

    def register(self) -> None:
        """Defines the ADT and every function of this dtype in the module."""
        self.define_tensor_adt()
        self.define_tensor_take()
        self.define_tensor_expand_dims()
        self.define_tensor_concat()
        self.define_tensor_array()
        self.define_tensor_array_read()
        self.define_tensor_array_write()
        for rank in range(1, MAX_RANK + 1):
            self.define_tensor_array_unstack(rank)
        self.define_tensor_array_scatter()
        self.define_tensor_array_split()
        self.define_tensor_array_concat()
        self.define_tensor_array_stack()
        self.define_tensor_array_gather()


class DynamicTensorArrayLookups:
    """The dynamic tensor-array lookups of TVM's Prelude (mixed into Prelude; needs `self.mod`).

    The Prelude defines the tensor types of DYNAMIC_DTYPES when it loads (code reads them straight
    from the module: `mod.get_type("tensor_float32_t")`); the functions of a dtype, 30 of them,
    are defined the first time one is looked up through the Prelude, so a module using none of
    them does not type-check them on every compile.
    """

    def _load_tensor_array_types(self) -> None:
        for dtype in DYNAMIC_DTYPES:
            TensorArrayOps(self, dtype).define_tensor_adt()

    def tensor_array_global_var(self, canonical: str, dtype: str) -> GlobalVar:
        """The function `<canonical>_<dtype>`, defining the dtype's tensor-array functions first if needed."""
        name = f"{canonical}_{dtype}"
        for gv in self.mod.get_global_vars():
            if gv.name_hint == name:
                return gv
        TensorArrayOps(self, dtype).register()
        return self.mod.get_global_var(name)

    def tensor_array_type(self, canonical: str, dtype: str) -> GlobalTypeVar:
        """The per-dtype type `canonical` (`tensor_t` → tensor_<dtype>_t), defined for any dtype on first use."""
        ops = TensorArrayOps(self, dtype)
        if canonical == "tensor_t":
            ops.define_tensor_adt()
        return self.mod.get_global_type_var(ops.get_name(canonical))

    def get_tensor_ctor(self, canonical: str, dtype: str) -> Constructor:
        """A constructor of tensor_<dtype>_t by canonical name, e.g. ("tensor2", "float32") -> tensor2_float32."""
        ops = TensorArrayOps(self, dtype)
        ops.define_tensor_adt()
        return ops.get_ctor(canonical)
