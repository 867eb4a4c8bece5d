"""Deferred constraints: operator type relations and tuple projections that wait for argument types."""

from __future__ import annotations

from .. import expr as E
from ..op.registry import RelationError, normalize_attrs
from ..ty import IncompleteType, TensorType, TupleType, Type
from .show import show_type
from .text import plural, were

__all__ = ["DeferredConstraints", "Relation", "Projection"]


class Relation:
    """An operator call waiting until its argument types are fully known."""

    __slots__ = ("call", "opdef", "arg_types", "out")

    def __init__(self, call, opdef, arg_types, out):
        self.call, self.opdef, self.arg_types, self.out = call, opdef, arg_types, out


class Projection:
    """A tuple projection `e.i` waiting until the type of `e` is known to be a tuple."""

    __slots__ = ("node", "tuple_type", "out")

    def __init__(self, node, tuple_type, out):
        self.node, self.tuple_type, self.out = node, tuple_type, out


class DeferredConstraints:
    """Mixin of TypeInferencer: operator calls and projections, retried until their inputs are known."""

    def _operator_call(self, call: E.Call) -> Type:
        op = call.op
        opdef = self._opdefs.get(op.name, False)
        if opdef is False:
            opdef = self._opdefs[op.name] = op.definition
        if opdef is None:
            self.fail(f"operator {op.name} is not in the operator registry", call)
        count = len(call.args)
        if opdef.num_inputs is not None and count != opdef.num_inputs:
            self.fail(
                f"operator {op.name} expects {opdef.num_inputs} argument{plural(opdef.num_inputs)} "
                f"but {count} {were(count)} given",
                call,
            )
        arg_types = [self.infer(a) for a in call.args]
        self.call_type_args.append((call, ()))
        self.operator_calls.append((call, arg_types))
        job = Relation(call, opdef, arg_types, None)
        out = self._run_relation(job)
        if out is None:  # an argument type is still unknown: retried as inference proceeds
            job.out = IncompleteType()
            self.pending.append(job)
            return job.out
        return out

    def _try_relation(self, job: Relation) -> bool:
        out = self._run_relation(job)
        if out is None:
            return False
        self.expect(job.out, out, f"in the result of {job.opdef.name}", job.call)
        return True

    def _run_relation(self, job: Relation) -> Type | None:
        """The relation's output type, or None while an argument type has unknown parts.

        Arguments of unknown type first get the types the operator implies for them (its
        `infer_args`, TVM's reporter->Assign on an input), unified like any other constraint.
        """
        resolved = self._resolved_arguments(job)
        call, opdef = job.call, job.opdef
        attrs = self._attrs_of(job)
        if any(ty is None for ty in resolved):
            if opdef.infer_args is None or not self._infer_arguments(job, resolved, attrs):
                return None
            resolved = self._resolved_arguments(job)
            if any(ty is None for ty in resolved):
                return None
        try:
            return opdef.type_rel(resolved, attrs)
        except RelationError as exc:
            self.fail(str(exc), call)
        except Exception as exc:
            if opdef.extras.get("user_relation"):
                raise  # as TVM's FFI did, a Python relation's own exception reaches the caller unchanged
            if isinstance(exc, ValueError):
                self.fail(f"{opdef.name}: {exc}", call)
            # A relation crashing on odd input is still the program's type error.
            types = ", ".join(show_type(t) for t in resolved)
            self.fail(f"{opdef.name}: cannot type the call with arguments ({types}): {exc}", call)

    def _resolved_arguments(self, job: Relation) -> list:
        """The argument types with solved parts filled in; None for those not fully known yet."""
        solver = self.solver
        resolved = []
        for ty in job.arg_types:
            ty = solver.find(ty)
            if type(ty) is not TensorType:
                ty = solver.resolve(ty)
                if not solver.is_complete(ty):
                    ty = None
            resolved.append(ty)
        return resolved

    def _attrs_of(self, job: Relation):
        attrs = job.call.attrs
        if attrs is not None:
            return attrs
        try:
            return normalize_attrs(job.opdef, {})
        except ValueError as exc:
            self.fail(f"{job.opdef.name}: {exc}", job.call)

    def _infer_arguments(self, job: Relation, resolved: list, attrs) -> bool:
        """Unifies the unknown arguments with the types the operator implies; True when any was given."""
        call, opdef = job.call, job.opdef
        try:
            implied = opdef.infer_args(resolved, attrs)
        except RelationError as exc:
            self.fail(str(exc), call)
        except Exception as exc:  # like a relation's crash: the program's type error, at the call
            known = ", ".join("?" if t is None else show_type(t) for t in resolved)
            self.fail(f"{opdef.name}: cannot infer its argument types from ({known}): {exc}", call)
        progress = False
        for position, ty in sorted(implied.items()):
            if resolved[position] is not None:
                continue  # known arguments are checked by the relation itself, with its own message
            self.expect(
                ty,
                job.arg_types[position],
                f"in argument {position + 1} of {opdef.name} (the type its other arguments and attributes imply)",
                call.args[position],
                call,
            )
            progress = True
        return progress

    def _try_projection(self, job: Projection) -> bool:
        found = self.solver.find(job.tuple_type)
        if isinstance(found, IncompleteType):
            return False
        node = job.node
        if not isinstance(found, TupleType):
            self.fail(f"cannot take field .{node.index} of a value of non-tuple type {self.show(found)}", node)
        if not 0 <= node.index < len(found.fields):
            self.fail(
                f"tuple index .{node.index} is out of range for type {self.show(found)} "
                f"with {len(found.fields)} field{plural(len(found.fields))}",
                node,
            )
        self.expect(found.fields[node.index], job.out, f"in the tuple projection .{node.index}", node)
        return True

    def solve_pending(self) -> None:
        """Retry deferred relations and projections until none makes progress."""
        progress = True
        while self.pending and progress:
            progress = False
            waiting = []
            for job in self.pending:
                done = self._try_relation(job) if isinstance(job, Relation) else self._try_projection(job)
                if done:
                    progress = True
                else:
                    waiting.append(job)
            self.pending = waiting

    def _report_blocked(self, job) -> None:
        if isinstance(job, Projection):
            self.fail(
                f"cannot infer the type of the tuple in the projection .{job.node.index} "
                f"(its type is still unknown: {self.show(job.tuple_type)})",
                job.node,
            )
        unknown = [
            str(i + 1) for i, t in enumerate(job.arg_types) if not self.solver.is_complete(self.solver.resolve(t))
        ]
        which = ", ".join(unknown)
        hint = ""
        if job.opdef.infer_args is not None:
            it = "it" if len(unknown) == 1 else "them"
            hint = f": annotate {it}, or give the attributes {job.opdef.name} derives {it} from"
        self.fail(
            f"cannot infer argument types of {job.opdef.name} "
            f"(argument{plural(len(unknown))} {which} {'has' if len(unknown) == 1 else 'have'} an unknown type){hint}",
            job.call,
        )
