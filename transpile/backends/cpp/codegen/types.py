"""C++ spelling of LIR types: scalars for plain 0-d tensors, ffi::Tensor, std::tuple, ADT structs, closures, refs."""

from __future__ import annotations

from ....errors import UnsupportedFeatureError
from ....lir.types import AdtT, ClosureT, RefT, TensorType, TupleT, type_text
from ....relay.ty import AnyDim
from .names import Namespace, comment

__all__ = ["CppTypes", "SCALAR_CTYPES", "dtype_expr", "holds_objects", "is_cpp_scalar", "release_fields", "shape_list"]

from ..scalars import SCALAR_CTYPES, is_cpp_scalar  # noqa: F401 - shared with the light boundary code

_DL_CODES = {"int": "kDLInt", "uint": "kDLUInt", "float": "kDLFloat", "bfloat": "kDLBfloat"}


def dtype_expr(dtype: str) -> str:
    """`trt::dtype(kDLFloat, 32)` for "float32"."""
    if dtype == "bool":
        return "trt::dtype(kDLBool, 8)"
    for prefix in ("uint", "int", "bfloat", "float"):
        if dtype.startswith(prefix) and dtype[len(prefix) :].isdigit():
            return f"trt::dtype({_DL_CODES[prefix]}, {dtype[len(prefix):]})"
    raise UnsupportedFeatureError(f"dtype {dtype}", "cpp")


def shape_list(ty: TensorType) -> str:
    """`{2, 3}`; a `?` dimension is -1 (checks accept any size there)."""
    return "{" + ", ".join("-1" if isinstance(d, AnyDim) else str(int(d)) for d in ty.shape) + "}"


def holds_objects(ty) -> bool:
    """Whether a value of LIR type `ty` holds reference-counted objects (ADT values, closures, references)."""
    if isinstance(ty, (AdtT, ClosureT, RefT)):
        return True
    if isinstance(ty, TupleT):
        return any(holds_objects(f) for f in ty.fields)
    return False


def release_fields(fields: list[str], struct: str) -> list[str]:
    """A destructor releasing `fields` through trt::release_later (no recursion along long chains
    such as a list's tail, see transpile_rt_common.h); nothing when no field holds objects."""
    if not fields:
        return []
    releases = " ".join(f"trt::release_later({name});" for name in fields)
    return [
        f"  {struct}(const {struct}&) = delete;",
        f"  ~{struct}() {{ {releases} }}",
    ]


class CppTypes:
    """Names the program's ADT structs and spells every LIR type as a C++ type."""

    def __init__(self, program, names: Namespace):
        self.program = program
        self.adt_names = {}
        self.ctor_names = {}
        for adt in program.adts:
            struct = names.bind(("adt", adt.name), adt.name, "adt")
            self.adt_names[adt.name] = struct
            for ctor in adt.constructors:
                self.ctor_names[(adt.name, ctor.name)] = names.bind(
                    ("ctor", adt.name, ctor.name), f"{struct}_{ctor.name}"
                )

    def cpp(self, ty) -> str:
        if isinstance(ty, TensorType):
            if is_cpp_scalar(ty):
                return SCALAR_CTYPES[ty.dtype]
            return "trt::Tensor"
        if isinstance(ty, TupleT):
            if not ty.fields:
                return "trt::Unit"
            return "std::tuple<" + ", ".join(self.cpp(f) for f in ty.fields) + ">"
        if isinstance(ty, AdtT):
            return f"trt::Adt<{self.adt_names[ty.name]}>"
        if isinstance(ty, ClosureT):
            return "trt::Fn<" + ", ".join([self.cpp(ty.ret)] + [self.cpp(p) for p in ty.params]) + ">"
        if isinstance(ty, RefT):
            return f"trt::Ref<{self.cpp(ty.value)}>"
        raise UnsupportedFeatureError(f"values of type {type_text(ty)}", "cpp")

    def ctor_struct(self, adt: str, ctor: str) -> str:
        return self.ctor_names[(adt, ctor)]

    def definitions(self) -> list[str]:
        """Forward declarations of every ADT, then one struct per constructor."""
        lines = []
        for adt in self.program.adts:
            lines.append(f"struct {self.adt_names[adt.name]};")
        if not self.program.adts:
            return lines
        lines.append("")
        for adt in self.program.adts:
            base = self.adt_names[adt.name]
            alts = " | ".join(
                (f"{c.relay_name}({', '.join(type_text(t) for t in c.fields)})" if c.fields else c.relay_name)
                for c in adt.constructors
            )
            lines.append("// " + comment(f"{adt.name} = {alts}"))
            lines.append(f"struct {base} {{")
            lines.append("  const int32_t tag;")
            lines.append(f"  explicit {base}(int32_t tag) : tag(tag) {{}}")
            lines.append("};")
            for ctor in adt.constructors:
                struct = self.ctor_names[(adt.name, ctor.name)]
                fields = [(f"f{i}", self.cpp(t)) for i, t in enumerate(ctor.fields)]
                lines.append(f"struct {struct} final : {base} {{  // {comment(ctor.relay_name)}, tag {ctor.tag}")
                for name, cty in fields:
                    lines.append(f"  {cty} {name};")
                params = ", ".join(f"{cty} {name}" for name, cty in fields)
                inits = "".join(f", {name}(std::move({name}))" for name, _ in fields)
                lines.append(f"  explicit {struct}({params}) : {base}({ctor.tag}){inits} {{}}")
                lines += release_fields([name for (name, _), t in zip(fields, ctor.fields) if holds_objects(t)], struct)
                lines.append("};")
            lines.append("")
        return lines
