"""Parsing Relay types: tensors, scalars, tuples, functions, references, type variables, ADT calls."""

from __future__ import annotations

import re

from ..ty import (
    AnyDim,
    FuncType,
    IncompleteType,
    RefType,
    SymbolicDim,
    TensorType,
    TupleType,
    TypeCall,
    TypeKind,
    TypeVar,
)
from .tokens import IDENT, INT, UNDERSCORE, describe

__all__ = ["TypeParser", "DTYPE"]

# Scalar dtypes as TVM printed them: int, int8, uint1x4, float16x4, bool, bfloat16, ...
DTYPE = re.compile(r"(?:bool|(?:u?int|float|bfloat)(?:\d+)?)(?:x\d+)?\Z")


class TypeParser:
    """Mixin: `parse_type` and helpers; needs `self.type_globals` (name -> GlobalTypeVar)."""

    def parse_type(self):
        tok = self.tok
        kind = tok.kind
        if kind == "(":
            self.advance()
            fields = self.parse_type_list(")")
            # Like TVM, any parenthesized type list is a tuple type: `(int32,)`, `()`, `(A, B)`.
            return TupleType(fields, span=self.span_from(tok))
        if kind == "fn":
            return self.parse_func_type()
        if kind == "ref":
            self.advance()
            self.expect("(")
            value = self.parse_type()
            self.expect(")")
            return RefType(value, span=self.span_from(tok))
        if kind == UNDERSCORE:
            self.advance()
            return IncompleteType(span=self.span_of(tok))
        if kind == IDENT:
            name = tok.text
            if name == "Tensor":
                return self.parse_tensor_type()
            if DTYPE.match(name):
                self.advance()
                return TensorType((), name, span=self.span_of(tok))
            type_var = self.lookup_type_var(name)
            if type_var is not None:
                self.advance()
                if self.tok.kind == "[":
                    self.fail(f"type variable {name} cannot be applied to type arguments")
                return type_var
            return self.parse_type_call()
        self.fail(f"expected a type but found {describe(tok)}")

    def parse_type_list(self, close: str) -> list:
        """Types separated by commas up to `close` (already past the opening bracket)."""
        types = []
        if self.accept(close):
            return types
        while True:
            types.append(self.parse_type())
            if self.list_separator(close):
                return types

    def parse_func_type(self):
        start = self.advance()  # `fn`
        self.type_scopes.append({})
        try:
            type_params = self.parse_type_params() if self.tok.kind == "[" else []
            self.expect("(", "`(` starting the argument types of a function type")
            arg_types = self.parse_type_list(")")
            self.expect("->", "`->` and the return type of a function type")
            ret_type = self.parse_type()
        finally:
            self.type_scopes.pop()
        return FuncType(arg_types, ret_type, type_params, span=self.span_from(start))

    def parse_type_params(self) -> list:
        """`[A, B]` binding fresh type variables in the innermost type scope."""
        self.expect("[")
        params = []
        if self.accept("]"):
            return params
        while True:
            tok = self.expect(IDENT, "a type parameter name")
            if tok.text in self.type_scopes[-1]:
                self.fail(f"duplicate type parameter {tok.text}", tok)
            type_var = TypeVar(tok.text, TypeKind.Type, span=self.span_of(tok))
            self.type_scopes[-1][tok.text] = type_var
            params.append(type_var)
            if self.list_separator("]"):
                return params

    def parse_tensor_type(self):
        start = self.advance()  # `Tensor`
        self.expect("[", "`[` after `Tensor`")
        self.expect("(", "`(` starting the shape of a tensor type")
        dims = []
        if not self.accept(")"):
            while True:
                dims.append(self.parse_dim())
                if self.list_separator(")"):
                    break
        self.expect(",", "`,` and the dtype of a tensor type")
        dtype_tok = self.expect(IDENT, "a dtype")
        if not DTYPE.match(dtype_tok.text):
            self.fail(f"unknown dtype {dtype_tok.text}", dtype_tok)
        self.expect("]")
        return TensorType(dims, dtype_tok.text, span=self.span_from(start))

    def parse_dim(self):
        tok = self.tok
        if tok.kind == "?":
            self.advance()
            return AnyDim()
        if tok.kind == INT:
            value = tok.value[0]
            if value < 0:
                self.fail(f"tensor dimension must be non-negative, found {value}")
            self.advance()
            return value
        if tok.kind == IDENT:
            # A symbolic dimension, as the printer writes TVM's shape variables: every use of the
            # name in one text is the same dimension.
            self.advance()
            symbols = self.__dict__.setdefault("shape_symbols", {})
            dim = symbols.get(tok.text)
            if dim is None:
                dim = symbols[tok.text] = SymbolicDim(tok.text)
            return dim
        self.fail(f"expected a dimension (an integer, `?` or a name) but found {describe(tok)}")

    def parse_type_call(self):
        tok = self.advance()
        name = tok.value  # a quoted name (`` `a b` ``) has its quotes in `text` only
        gtv = self.type_globals.get(name)
        if gtv is None:
            self.fail(f"unknown type {name}", tok)
        args = []
        if self.accept("["):
            args = self.parse_type_list("]")
        # As in TVM, an ADT name always denotes a type call, `List` being `List[]`.
        return TypeCall(gtv, args, span=self.span_from(tok))
