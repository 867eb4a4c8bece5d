"""The Relay language: IR, builder API, text format, type inference, Prelude, interpreter.

Mirrors the names of `tvm.relay` (TVM <= 0.19), which apache-tvm 0.25+ no longer ships.
"""

from __future__ import annotations

import sys
import types as _types

from ..errors import ParseError, RelayTypeError, TranspileError
from . import op as _op_package
from .attrs import Attrs, MetaRef
from .source import SourceName, Span
from .expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    TupleWrapper,
    TypeData,
    Var,
    const,
    var,
)
from .module import IRModule, Module
from .op.registry import OpPattern, registered_ops
from .ty import (
    Any,
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeKind,
    TypeVar,
    scalar_type,
)
from .analysis import all_vars, bound_vars, free_vars
from .visitor import ExprMutator, ExprVisitor
from .structural import assert_structural_equal, structural_equal, structural_hash
from .printer import astext, pretty_print
from .parser import fromtext, parse, parse_expr
from .typing import infer_type, infer_type_expr
from . import transform
from .prelude import Prelude
from .interpreter import evaluate
from .ndarray_format import WeightsFormatError
from .params import load_param_dict, load_params, save_param_dict, save_params
from .bind import ParamsBindingError, bind, bind_params_by_name
from . import build_module
from . import backend
from .backend import build, create_executor, vm

# Equality helpers under their historical tvm.relay names.
equal = structural_equal
alpha_equal = structural_equal


def _install_operator_namespaces() -> None:
    """Expose every registered operator as a builder: relay.add, relay.nn.dense, relay.qnn...

    As in TVM, each is reachable both as relay.X and relay.op.X; relay.nn and relay.op.nn (and
    the other prefixes) are one module object under both names.
    """
    this = sys.modules[__name__]
    for opdef in registered_ops():
        *prefix, short = opdef.name.split(".")
        target = this
        op_target = _op_package
        for part in prefix:
            child = getattr(target, part, None)
            if not isinstance(child, _types.ModuleType):
                child = _types.ModuleType(f"{target.__name__}.{part}", f"Relay operators {part}.*")
                setattr(target, part, child)
                sys.modules[child.__name__] = child
            if getattr(op_target, part, None) is not child:
                setattr(op_target, part, child)
                sys.modules.setdefault(f"{op_target.__name__}.{part}", child)
            target = child
            op_target = child
        setattr(target, short, opdef)
        setattr(op_target, short, opdef)


_install_operator_namespaces()

# Builders that TVM defined as compositions of registered operators rather than as operators.
from .op.families.reduce import logsumexp, std  # noqa: E402

_op_package.logsumexp = logsumexp
_op_package.std = std

from .op.families.reduce import mean_std, mean_variance  # noqa: E402
from .op.families.sparse import segment_sum  # noqa: E402

_op_package.mean_variance = mean_variance

from .op.families.nn.pool import GLOBAL_POOL_BUILDERS  # noqa: E402

for _name, _builder in GLOBAL_POOL_BUILDERS.items():
    setattr(sys.modules[__name__].nn, _name, _builder)
_op_package.mean_std = mean_std
_op_package.segment_sum = segment_sum

from .scope_builder import ScopeBuilder  # noqa: E402
from .span_check import SpanCheck  # noqa: E402
from . import loops  # noqa: E402
from . import dataflow_pattern  # noqa: E402
