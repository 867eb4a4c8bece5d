"""C++ of the library's entry points: flat-array marshalling, the TVM-FFI exports, W0 and the C API.

Every value crossing into Python travels in prefix order, as the columns [ints, floats, objects]
of one `ffi::Array<Any>` (see transpile_rt.h); `enc_N`/`dec_N` are generated per LIR type (an ADT's
loop along its spine, so a list of any length takes constant stack). Exports:
- `transpile_call(args) -> results`: the generic entry (any types), used by the Python wrapper;
- `main` (the entry's name): typed, for entries taking and returning only tensors (tuples of
  tensors are returned as an ffi::Array): `tvm.runtime.load_module(so)["main"](*tensors)`;
- W0 (w0.py): `default(dev)` making executors with their own state, and the module-level
  `set_input(index or name, tensor)`, `run()`, `get_output(index)`, `get_num_inputs()`,
  `get_num_outputs()`, `get_input_index(name)`;
- a plain C API: `transpile_<entry>_run(inputs, outputs)` and `transpile_last_error()`.
"""

from __future__ import annotations

from ....errors import UnsupportedFeatureError
from ....lir.types import AdtT, ClosureT, RefT, TensorType, TupleT, type_text
from .names import c_string, comment
from .types import SCALAR_CTYPES, dtype_expr, is_cpp_scalar, shape_list
from .w0 import w0_exports

__all__ = ["Marshal", "tensor_signature"]


def _flatten_result(ty) -> list[TensorType] | None:
    if isinstance(ty, TensorType):
        return [ty]
    if isinstance(ty, TupleT):
        out = []
        for f in ty.fields:
            sub = _flatten_result(f)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None


def tensor_signature(entry) -> tuple[list[TensorType], list[TensorType]] | None:
    """(input types, flat output types) when the entry takes and returns only tensors."""
    if not all(isinstance(p.type, TensorType) for p in entry.params):
        return None
    outputs = _flatten_result(entry.ret)
    if outputs is None:
        return None
    return [p.type for p in entry.params], outputs


class Marshal:
    """Generates enc/dec functions on demand; `code()` returns prototypes, then definitions."""

    def __init__(self, types, program):
        self.types = types
        self.program = program
        self.ids: dict = {}
        self.prototypes: list[str] = []
        self.definitions: list[str] = []
        self.structs: list[str] = []

    def _id(self, ty) -> tuple[int, bool]:
        if ty in self.ids:
            return self.ids[ty], False
        n = len(self.ids)
        self.ids[ty] = n
        return n, True

    def dec(self, ty) -> str:
        n, new = self._id(ty)
        if new:
            self._make(ty, n)
        return f"dec_{n}"

    def enc(self, ty) -> str:
        n, new = self._id(ty)
        if new:
            self._make(ty, n)
        return f"enc_{n}"

    def _make(self, ty, n: int) -> None:
        cty = self.types.cpp(ty)
        self.prototypes.append(f"static {cty} dec_{n}(trt::Reader& r);  // {comment(type_text(ty))}")
        self.prototypes.append(f"static void enc_{n}(trt::Writer& w, const {cty}& v);")
        dec_body, enc_body = self._bodies(ty, n)
        self.definitions.append(f"static {cty} dec_{n}(trt::Reader& r) {{")
        self.definitions.extend(dec_body)
        self.definitions.append("}")
        value = "value" if isinstance(ty, AdtT) else "v"  # an ADT encoder walks a node pointer `v`
        self.definitions.append(f"static void enc_{n}(trt::Writer& w, const {cty}& {value}) {{")
        self.definitions.extend(enc_body)
        self.definitions.append("}")

    def _bodies(self, ty, n: int):
        types = self.types
        if isinstance(ty, TensorType):
            if is_cpp_scalar(ty):
                ctype = SCALAR_CTYPES[ty.dtype]
                if ty.dtype == "bool":
                    return ["  return r.next().cast<bool>();"], ["  w.put(v);"]
                if ty.dtype.startswith("float"):
                    return [f"  return static_cast<{ctype}>(r.next().cast<double>());"], [
                        "  w.put(static_cast<double>(v));"
                    ]
                return [f"  return static_cast<{ctype}>(r.next().cast<int64_t>());"], [
                    "  w.put(static_cast<int64_t>(v));"
                ]
            check = f'trt::checked_tensor(r.next().cast<trt::Tensor>(), {shape_list(ty)}, {dtype_expr(ty.dtype)}, "argument")'
            return [f"  return {check};"], ["  w.put(v);"]
        if isinstance(ty, TupleT):
            decs = [self.dec(f) for f in ty.fields]
            encs = [self.enc(f) for f in ty.fields]
            dec = [f"  return {types.cpp(ty)}{{{', '.join(f'{d}(r)' for d in decs)}}};"]  # braces: left to right
            enc = [f"  {e}(w, std::get<{i}>(v));" for i, e in enumerate(encs)] or ["  (void)w; (void)v;"]
            return dec, enc
        if isinstance(ty, RefT):
            return self._ref_bodies(ty, n)
        if isinstance(ty, AdtT):
            return self._adt_bodies(ty)
        if isinstance(ty, ClosureT):
            struct = f"PyFn_{n}"
            cty = types.cpp(ty)
            params = [(f"a{i}", types.cpp(p)) for i, p in enumerate(ty.params)]
            arg_encs = [self.enc(p) for p in ty.params]
            ret_dec = self.dec(ty.ret)
            ret_enc = self.enc(ty.ret)
            arg_decs = [self.dec(p) for p in ty.params]
            base = cty[len("trt::Fn<") : -1]
            self.structs += [
                "// " + comment(f"A Python callable passed where closure {type_text(ty)} is expected."),
                f"struct {struct} final : trt::FnObj<{base}> {{",
                "  trt::ffi::Function f;",
                f"  explicit {struct}(trt::ffi::Function f) : f(std::move(f)) {{}}",
                f"  {types.cpp(ty.ret)} call({', '.join(f'{c} {a}' for a, c in params)}) const override;",
                "};",
            ]
            call_def = [
                f"{types.cpp(ty.ret)} {struct}::call({', '.join(f'{c} {a}' for a, c in params)}) const {{",
                "  trt::RefTable refs(trt::running_numbered());  // the running call's references first",
                "  trt::Writer w(refs);",
                "  refs.send_contents(w, refs.size());",
                *[f"  {e}(w, {a});" for e, (a, _) in zip(arg_encs, params)],
                "  const int64_t sent = refs.size();",
                "  trt::AnyArray out = f(w.finish()).cast<trt::AnyArray>();",
                "  trt::Reader r(out, refs);",
                f"  {types.cpp(ty.ret)} result = {ret_dec}(r);",
                "  refs.receive_contents(r, sent);  // what the callee wrote into our references",
                "  return result;",
                "}",
            ]
            self.definitions.extend(call_def)
            dec = [f"  return std::make_shared<{struct}>(r.next().cast<trt::ffi::Function>());"]
            enc = [
                "  trt::Fn<" + base + "> fn = v;",
                "  // The references this crossing numbers, which the closure may have captured: a call of it",
                "  // numbers them first and takes their contents as the caller holds them (see RefTable).",
                "  w.put(trt::ffi::Function::FromTyped([fn, known = w.refs.numbered()](trt::AnyArray in) -> trt::AnyArray {",
                "    trt::init_stack_limit();",
                "    trt::RefTable refs(*known);",
                "    trt::RunningRefs running(refs);",
                "    trt::Reader r(in, refs);",
                "    refs.receive_contents(r, refs.size());",
                *[f"    {c} {a} = {d}(r);" for (a, c), d in zip(params, arg_decs)],
                "    const int64_t received = refs.size();",
                f"    auto result = fn->call({', '.join(f'std::move({a})' for a, _ in params)});",
                "    trt::Writer out(refs);",
                f"    {ret_enc}(out, result);",
                "    refs.send_contents(out, received);",
                "    return out.finish();",
                "  }));",
            ]
            return dec, enc
        raise TypeError(f"no marshalling for {type_text(ty)}")

    def _adt_bodies(self, ty: AdtT):
        """An ADT value: its tag, then its fields. A constructor whose last field is of this very
        type (a list's Cons, a tree's right branch: the spine) continues a loop there instead of
        recursing, so a list of any length decodes and encodes in constant stack; nodes are built
        head first, each new one stored into the previous one's spine field (not yet shared)."""
        types = self.types
        adt = self.program.adt(ty.name)
        cty = types.cpp(ty)
        base = types.adt_names[adt.name]
        dec = [
            f"  {cty} result;",
            f"  {cty}* hole = &result;  // where the node read next belongs",
            "  for (;;) {",
            "    const int64_t tag = r.next().cast<int64_t>();",
            "    switch (tag) {",
        ]
        enc = [
            f"  const {base}* v = value.get();",
            "  for (;;) {",
            "    w.put(static_cast<int64_t>(v->tag));",
            "    switch (v->tag) {",
        ]
        for ctor in adt.constructors:
            struct = types.ctor_struct(adt.name, ctor.name)
            spine = bool(ctor.fields) and ctor.fields[-1] == ty
            heads = ctor.fields[:-1] if spine else ctor.fields
            dec.append(f"      case {ctor.tag}: {{  // {comment(ctor.relay_name)}")
            names = []
            for i, f in enumerate(heads):
                dec.append(f"        {types.cpp(f)} f{i} = {self.dec(f)}(r);")
                names.append(f"std::move(f{i})")
            enc.append(f"      case {ctor.tag}: {{")
            if ctor.fields:
                enc.append(f"        const auto& c = static_cast<const {struct}&>(*v);")
            enc += [f"        {self.enc(f)}(w, c.f{i});" for i, f in enumerate(heads)]
            if spine:
                last = f"f{len(ctor.fields) - 1}"
                dec += [
                    f"        auto node = std::make_shared<{struct}>({', '.join(names + [f'{cty}()'])});",
                    f"        {cty}* next = &node->{last};",
                    "        *hole = std::move(node);",
                    "        hole = next;",
                    "        continue;",
                ]
                enc += [f"        v = c.{last}.get();", "        continue;"]
            else:
                dec += [f"        *hole = std::make_shared<{struct}>({', '.join(names)});", "        return result;"]
                enc.append("        return;")
            dec.append("      }")
            enc.append("      }")
        dec += [
            "    }",
            f'    TVM_FFI_THROW(ValueError) << "no constructor with tag " << tag << {c_string(" in " + adt.name)};',
            "  }",
        ]
        enc += ["    }", "    return;", "  }"]
        return dec, enc

    def _ref_bodies(self, ty: RefT, n: int):
        """A reference crosses as its index in the call's RefTable, then (the first time) its contents;
        put_N/take_N send and receive a cell's final contents after the call (see transpile_rt.h)."""
        contents = self.types.cpp(ty.value)
        dec_contents, enc_contents = self.dec(ty.value), self.enc(ty.value)
        cell = f"trt::Cell<{contents}>"
        self.prototypes.append(f"static void put_{n}(trt::Writer& w, const void* cell);")
        self.prototypes.append(f"static void take_{n}(trt::Reader& r, void* cell);")
        self.definitions += [
            f"static void put_{n}(trt::Writer& w, const void* cell) {{",
            f"  {enc_contents}(w, static_cast<const {cell}*>(cell)->value);",
            "}",
            f"static void take_{n}(trt::Reader& r, void* cell) {{",
            f"  static_cast<{cell}*>(cell)->value = {dec_contents}(r);",
            "}",
        ]
        dec = [
            "  const int64_t k = r.next().cast<int64_t>();",
            f"  if (k < r.refs.size()) return r.refs.get<{contents}>(k);",
            f"  trt::Ref<{contents}> cell = trt::ref_new<{contents}>({contents}{{}});",
            f"  r.refs.add(k, cell, put_{n}, take_{n});  // before the contents, which may refer back to it",
            f"  cell->value = {dec_contents}(r);",
            "  return cell;",
        ]
        enc = [
            "  const int64_t k = w.refs.find(v.get());",
            "  if (k >= 0) {",
            "    w.put(k);",
            "    return;",
            "  }",
            f"  w.put(w.refs.add(w.refs.size(), v, put_{n}, take_{n}));",
            f"  {enc_contents}(w, v->value);",
        ]
        return dec, enc

    def code(self) -> list[str]:
        return self.structs + [""] + self.prototypes + [""] + self.definitions


def entry_exports(module, entry, big_stack: bool, standalone: bool = False) -> tuple[list[str], list[str]]:
    """(C++ lines of the exported entry points, C header lines).

    `standalone` (the TVM-free bundle): only the plain C API, for tensor-only entries; no TVM-FFI
    exports, no W0 and no Python boundary marshalling."""
    fn = module.function_name(entry.name)
    lines = ["// ---------------------------------------------------------------- exported entry points", ""]
    if not standalone:
        lines += _generic_entry(module, entry, fn)
    signature = tensor_signature(entry)
    if signature is None:
        if standalone:
            params = ", ".join(f"%{p.name}: {type_text(p.type)}" for p in entry.params)
            raise UnsupportedFeatureError(
                f"a standalone bundle of @{module.program.entry}({params}) -> {type_text(entry.ret)}: "
                "its C API passes tensors only, so the entry must take and return tensors (or tuples of them)",
                "cpp",
            )
        return lines, []
    inputs, outputs = signature
    lines += _run_entry(module, entry, fn, inputs, big_stack)
    if not standalone:
        lines += _tvm_exports(module, entry, inputs, outputs)
    lines += _c_api(module, inputs, outputs)
    return lines, _c_header(module, entry, inputs, outputs, standalone)


def _generic_entry(module, entry, fn: str) -> list[str]:
    """`transpile_call`: any argument and result types, as flat arrays (the Python wrapper's entry)."""
    types = module.types
    marshal = module.marshal
    decs = [marshal.dec(p.type) for p in entry.params]
    ret_enc = marshal.enc(entry.ret)
    body = [
        "  trt::RefTable refs;",
        "  trt::RunningRefs running(refs);  // for callbacks into Python (see transpile_rt.h)",
        "  trt::Reader r(args, refs);",
    ]
    names = []
    for i, (p, d) in enumerate(zip(entry.params, decs)):
        body.append(f"  {types.cpp(p.type)} a{i} = {d}(r);")
        names.append(f"std::move(a{i})")
    body += [
        "  const int64_t received = refs.size();",
        f"  auto result = {fn}({', '.join(names)});",
        "  trt::Writer w(refs);",
        f"  {ret_enc}(w, result);",
        "  refs.send_contents(w, received);  // the caller's references, as the call left them",
    ]
    lines = [
        "// The generic entry: arguments and results as flat arrays (see transpile_rt.h).",
        "static trt::AnyArray transpile_call(trt::AnyArray args) {",
        "  trt::init_stack_limit();",
    ]
    # Deep recursion, or deep values to decode/encode: on the thread's big stack (the caller's
    # thread, so no thread is started per call; see run_on_big_stack).
    if module.big_stack or any(_has_adt(t) for t in [p.type for p in entry.params] + [entry.ret]):
        lines += ["  trt::AnyArray out;", "  trt::run_on_big_stack([&] {"]
        lines += ["  " + b for b in body] + ["    out = w.finish();", "  });", "  return out;"]
    else:
        lines += body + ["  return w.finish();"]
    lines += [
        "}",
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(transpile_call, transpile_call);",
        "",
    ]
    return lines


def _has_adt(ty) -> bool:
    from ....lir.types import AdtT, ClosureT, RefT, TupleT

    if isinstance(ty, AdtT):
        return True
    if isinstance(ty, TupleT):
        return any(_has_adt(f) for f in ty.fields)
    if isinstance(ty, RefT):
        return _has_adt(ty.value)
    if isinstance(ty, ClosureT):
        return any(_has_adt(p) for p in ty.params) or _has_adt(ty.ret)
    return False


def _run_entry(module, entry, fn: str, inputs, big_stack: bool) -> list[str]:
    """`run_entry`, the core every tensor interface shares: checked tensors in, flat tensors out."""
    types = module.types
    relay_entry = module.program.entry
    run_wrap = (
        (lambda body: ["  trt::run_on_big_stack([&] {"] + ["  " + b for b in body] + ["  });"])
        if big_stack
        else (lambda body: ["  trt::init_stack_limit();"] + body)
    )
    core = [
        f"static std::vector<trt::Tensor> run_entry(const std::vector<trt::Tensor>& in) {{",
        f"  if (in.size() != {len(inputs)}) TRT_THROW(TypeError) << "
        + c_string(f"@{relay_entry} expects {len(inputs)} argument(s) but got ")
        + " << in.size();",
        "  std::vector<trt::Tensor> out;",
    ]
    body = []
    args = []
    for i, (p, ty) in enumerate(zip(entry.params, inputs)):
        what = f"argument {i + 1} (%{p.name}) of @{relay_entry}"
        checked = f"trt::checked_tensor(in[{i}], {shape_list(ty)}, {dtype_expr(ty.dtype)}, {c_string(what)})"
        if is_cpp_scalar(ty):
            body.append(f"  {SCALAR_CTYPES[ty.dtype]} a{i} = trt::scalar_of<{SCALAR_CTYPES[ty.dtype]}>({checked});")
        else:
            body.append(f"  trt::Tensor a{i} = {checked};")
        args.append(f"a{i}")
    body.append(f"  auto result = {fn}({', '.join(args)});")
    body.extend(_flatten_out(entry.ret, "result", types))
    core += run_wrap(body)
    core += ["  return out;", "}", ""]
    return core


def _tvm_exports(module, entry, inputs, outputs) -> list[str]:
    """The TVM-FFI exports: `tvm.runtime.load_module(so)["<entry>"](*tensors)` and W0."""
    params = ", ".join(f"trt::Tensor a{i}" for i in range(len(inputs)))
    ret_single = len(outputs) == 1 and isinstance(entry.ret, TensorType)
    lines = [
        f"static {'trt::Tensor' if ret_single else 'trt::AnyArray'} typed_entry({params}) {{",
        f"  std::vector<trt::Tensor> out = run_entry({{{', '.join(f'a{i}' for i in range(len(inputs)))}}});",
        "  return out[0];" if ret_single else "  return trt::AnyArray(out.begin(), out.end());",
        "}",
        f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({module.export_name}, typed_entry);",
        "",
    ]
    lines += w0_exports(entry.params, len(outputs))  # W0: executors and the module-level functions
    return lines


def _c_api(module, inputs, outputs) -> list[str]:
    """The plain C API (both flavours): `<prefix>_run(inputs, outputs)` and `transpile_last_error()`."""
    c_name = module.c_prefix
    return [
        "// The plain C API (declared in the header beside the library).",
        "static thread_local std::string last_error;",
        f'extern "C" TRT_EXPORT int {c_name}_run(const DLTensor* const* inputs, DLTensor** outputs) {{',
        "  try {",
        "    std::vector<trt::Tensor> in;",
        f"    for (int i = 0; i < {len(inputs)}; ++i) {{",
        "      const DLTensor* t = inputs[i];",
        '      if (t == nullptr) TRT_THROW(ValueError) << "input " << i << " is NULL";',
        '      if (!trt::is_contiguous(*t)) TRT_THROW(ValueError) << "input " << i << " is not contiguous";',
        "      in.push_back(trt::wrap_static(static_cast<char*>(t->data) + t->byte_offset, trt::shape_view(t->shape, t->ndim), t->dtype));",
        "    }",
        "    std::vector<trt::Tensor> out = run_entry(in);",
        "    for (size_t i = 0; i < out.size(); ++i) {",
        "      DLTensor* dst = outputs[i];",
        "      const DLTensor& src = *out[i].GetDLTensorPtr();",
        '      if (dst == nullptr || dst->data == nullptr) TRT_THROW(ValueError) << "output " << i << " has no buffer";',
        "      if (dst->ndim != src.ndim || dst->dtype.code != src.dtype.code || dst->dtype.bits != src.dtype.bits ||",
        "          trt::data_size(*dst) != trt::data_size(src))",
        '        TRT_THROW(ValueError) << "output " << i << ": expected Tensor[" << trt::shape_text(src) << ", " << trt::dtype_text(src.dtype) << "]";',
        "      std::memcpy(static_cast<char*>(dst->data) + dst->byte_offset, src.data, trt::data_size(src));",
        "    }",
        "    return 0;",
        "  } catch (const std::exception& e) {",
        "    last_error = e.what();",
        "    return -1;",
        "  }",
        "}",
        f'extern "C" TRT_EXPORT const char* transpile_last_error(void) {{ return last_error.c_str(); }}',
        f'extern "C" TRT_EXPORT int {c_name}_num_inputs(void) {{ return {len(inputs)}; }}',
        f'extern "C" TRT_EXPORT int {c_name}_num_outputs(void) {{ return {len(outputs)}; }}',
        "",
    ]


def _c_header(module, entry, inputs, outputs, standalone: bool = False) -> list[str]:
    """The C header declaring the plain C API."""
    c_name = module.c_prefix
    relay_entry = module.program.entry
    sig = ", ".join(f"%{p.name}: {type_text(p.type)}" for p in entry.params)
    # Where dlpack.h is: runtime/ in a standalone bundle, beside this header in an exported artifact.
    includes = "-IDIR -IDIR/runtime" if standalone else "-IDIR"
    return [
        "/* Generated by transpile (cpp backend); do not edit.",
        f" * Using it from C, with DIR the directory of this header and lib{module.export_name}.so (see README.txt there):",
        f" *   gcc -std=c99 your_program.c {includes} -LDIR -l{module.export_name} -Wl,-rpath,DIR */",
        f"#ifndef {c_name.upper()}_H_",
        f"#define {c_name.upper()}_H_",
        "",
        "#include <dlpack/dlpack.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        "/* " + comment(f"@{relay_entry}({sig}) -> {type_text(entry.ret)}"),
        " *",
        " * inputs:  " + comment(", ".join(f"[{i}] {type_text(t)}" for i, t in enumerate(inputs)) or "none"),
        " * outputs: " + comment(", ".join(f"[{i}] {type_text(t)}" for i, t in enumerate(outputs))),
        " * Outputs are caller-allocated (contiguous, right shape and dtype); results are copied into them.",
        " * Returns 0 on success, -1 on error (then see transpile_last_error()). */",
        f"int {c_name}_run(const DLTensor* const* inputs, DLTensor** outputs);",
        f"int {c_name}_num_inputs(void);",
        f"int {c_name}_num_outputs(void);",
        "/* The message of the last error on this thread. */",
        "const char* transpile_last_error(void);",
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
        f"#endif  /* {c_name.upper()}_H_ */",
        "",
    ]


def _flatten_out(ty, expr: str, types) -> list[str]:
    if isinstance(ty, TupleT):
        out = []
        for i, f in enumerate(ty.fields):
            out.extend(_flatten_out(f, f"std::get<{i}>({expr})", types))
        return out
    if is_cpp_scalar(ty):
        return [f"  out.push_back(trt::scalar_tensor<{SCALAR_CTYPES[ty.dtype]}>({expr}, {dtype_expr(ty.dtype)}));"]
    return [f"  out.push_back({expr});"]
