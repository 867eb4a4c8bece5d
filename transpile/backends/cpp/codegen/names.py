"""C++ spelling of user-given names: identifiers (sanitized, never reserved, unique per scope), string literals and comments.

Every name in a program (globals, constructors, types, variables, the entry) is user input: the
builder API accepts any string. Nothing of it reaches the C++ source unescaped — identifiers keep
only [A-Za-z0-9_], text in string literals is byte-escaped and text in comments is kept to
printable ASCII that cannot end the comment or continue it onto the next line.
"""

from __future__ import annotations

import re

__all__ = ["Namespace", "identifier", "is_reserved", "c_string", "comment", "CPP_KEYWORDS"]

CPP_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t
    class co_await co_return co_yield compl concept const consteval constexpr constinit const_cast continue
    decltype default delete do double dynamic_cast else enum explicit export extern false final float for
    friend goto if import inline int long module mutable namespace new noexcept not not_eq nullptr operator
    or or_eq override private protected public register reinterpret_cast requires return short signed sizeof
    static static_assert static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq""".split()
)

# Names the generated code or its headers use unqualified where a user-derived name could shadow
# them: namespaces, the scalar types, DLPack enumerators, generated globals (entry points, W0)
# and the locals of generated marshalling functions, whose bodies mention user ADT names.
_TAKEN_BY_GENERATED_CODE = frozenset(
    """main std trt ffi tvm tvm_ffi env arena Tensor Any errno assert offsetof stdin stdout stderr unix linux
    major minor alloca setjmp math_errhandling
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ptrdiff_t intptr_t uintptr_t
    DLTensor DLDataType DLDevice DLManagedTensor TVMFFIAny kDLInt kDLUInt kDLFloat kDLBfloat kDLBool kDLCPU
    transpile_call run_entry typed_entry w0 last_error set_input run get_output get_num_inputs
    get_num_outputs get_input_index kInputNames inputs outputs
    r w refs result out tag c k cell in args v fn received sent known running key name index value e t dst src i""".split()
)

# Families of numbered names the generator makes up (marshalling functions dec_3, kernel wrapper
# locals p0 / s0 / out0 / v1, their shape variables p0_dim1, struct fields f0, arguments a0).
_GENERATED_FAMILY = re.compile(r"(?:(?:dec|enc|put|take|PyFn)_\d+|[afpsv]\d+|out\d+|(?:p|out)\d+_dim\d+)")
# All-capitals names are macros by convention (NAN, INFINITY, INT64_C, EOF, TRT_STACK_CHECK, ...).
_MACRO_LIKE = re.compile(r"[A-Z][A-Z0-9_]+")
_INVALID = re.compile(r"[^A-Za-z0-9_]")


def is_reserved(name: str) -> bool:
    """Whether `name` must not be used as an identifier of the generated C++."""
    return (
        name in CPP_KEYWORDS
        or name in _TAKEN_BY_GENERATED_CODE
        or "__" in name  # reserved to the implementation, like a leading underscore
        or _GENERATED_FAMILY.fullmatch(name) is not None
        or _MACRO_LIKE.fullmatch(name) is not None
    )


def identifier(name: str, fallback: str = "v") -> str:
    """A valid C++ identifier close to `name`: [A-Za-z0-9_] only, no leading or doubled underscore,
    never a keyword or a name the generated code or its headers use."""
    text = re.sub("_+", "_", _INVALID.sub("_", str(name))).strip("_") or fallback
    if text[0].isdigit():
        text = f"{fallback}{text}"
    if is_reserved(text):
        text += "_v"  # never reserved: a lower-case letter, no doubled underscore, no numbered family
    return text


def c_string(text: str) -> str:
    """A C/C++ string literal holding the UTF-8 bytes of `text` (any character, NUL included).

    Bytes outside printable ASCII, quotes, backslashes and `?` (trigraphs, in C) are octal escapes,
    which never absorb the characters after them (hex escapes would)."""
    data = str(text).encode("utf-8", "backslashreplace")  # a lone surrogate stays visible as \udxxx
    out = []
    for byte in data:
        if 0x20 <= byte < 0x7F and byte not in b'"\\?':
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def comment(text: str) -> str:
    """`text` made safe inside a `//` or `/* */` comment: printable ASCII only, other characters as
    \\u escapes; no `*/`, no backslash (a trailing one would continue a `//` comment), no `??`."""
    out = []
    for char in str(text):
        code = ord(char)
        if char == "\\":
            out.append("\\x5c")
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{{{code:x}}}")
    return "".join(out).replace("*/", "*\\x2f").replace("??", "?\\x3f")


class Namespace:
    """Maps keys to distinct identifiers; children see the parent's names as taken."""

    def __init__(self, parent: "Namespace | None" = None):
        self.parent = parent
        self.names: dict = {}
        self.taken: set[str] = set()

    def child(self) -> "Namespace":
        return Namespace(self)

    def _is_taken(self, name: str) -> bool:
        scope = self
        while scope is not None:
            if name in scope.taken:
                return True
            scope = scope.parent
        return False

    def bind(self, key, name: str, fallback: str = "v") -> str:
        base = identifier(name, fallback)
        candidate, suffix = base, 0
        while self._is_taken(candidate):
            suffix += 1
            candidate = f"{base}_{suffix}"
            if is_reserved(candidate):  # dec -> dec_1 would be a generated marshalling function
                candidate = f"{base}_v{suffix}"
        self.taken.add(candidate)
        self.names[key] = candidate
        return candidate

    def reserve(self, name: str) -> None:
        self.taken.add(name)

    def get(self, key):
        scope = self
        while scope is not None:
            if key in scope.names:
                return scope.names[key]
            scope = scope.parent
        return None

    def lookup(self, key) -> str:
        name = self.get(key)
        if name is None:
            raise KeyError(key)
        return name
