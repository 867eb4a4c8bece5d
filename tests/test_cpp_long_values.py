"""cpp backend: values of any length without recursion in native code, and callbacks across libraries.

The boundary's generated decoders and encoders loop along a list's spine (a constructor's last field
of the ADT's own type) and the destructors of ADT nodes, closures and reference cells queue what they
held alone on a worklist (trt::release_later), so neither a list crossing the boundary nor one built
and dropped inside the program nests once per item. The small programs check that the iterative paths
keep values right (nested lists, trees, Options of lists, a recursive field that is not last); their
results are compared with the interpreter's.

The references of the running boundary call (trt::running_refs, one per thread for every library in
the process) nest: each entry that may call back into Python pushes its own table first, so two
libraries interleaved through callbacks, and a library re-entered from its own callback, exchange
the right references.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.backends import backends
from transpile.runtime import ADTValue, RefValue, values_equal

V = '#[version = "0.0.5"]\n'
BACKENDS = [b for b in ("interpreter", "cpp") if b in backends()]


def _needs_cpp() -> None:
    pytest.importorskip("tvm")
    if shutil.which("g++") is None:  # pragma: no cover - the toolchain is part of the dev environment
        pytest.skip("the cpp backend needs g++")


_compiled: dict = {}


def compiled(text: str, backend: str = "cpp"):
    if backend == "cpp":
        _needs_cpp()
    key = (text, backend)
    if key not in _compiled:
        init = relay.IRModule()
        relay.Prelude(init)
        _compiled[key] = transpile.compile(relay.parse(V + text, init_module=init), backend=backend)
    return _compiled[key]


def i32(v):
    return np.asarray(v, dtype="int32")


def as_list(values) -> ADTValue:
    out = ADTValue("Nil")
    for v in reversed(values):
        out = ADTValue("Cons", (v, out))
    return out


def items(value: ADTValue) -> list:
    out = []
    while value.constructor == "Cons":
        out.append(value.fields[0])
        value = value.fields[1]
    assert value.constructor == "Nil"
    return out


def same_on_cpp(text: str, *args):
    """The cpp result of `text` on `args`, checked equal to the interpreter's."""
    expected = compiled(text, "interpreter")(*args)
    got = compiled(text)(*args)
    assert values_equal(got, expected)  # iterative: values nested thousands deep compare too
    return got


def _run_in_subprocess(script: str, timeout: float = 600) -> str:
    """Runs `script` in a fresh interpreter: a crash in native code fails the test, not the session."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stdout}\n{done.stderr[-3000:]}"
    return done.stdout


# ---------------------------------------------------------------- long values

ECHO = "def @main(%xs: List[int32]) -> List[int32] { %xs }"


@pytest.mark.slow
def test_five_million_items_cross_into_and_out_of_native_code():
    f = compiled(ECHO)
    n = 5_000_000
    values = [i32(k) for k in range(7)]
    xs = ADTValue("Nil")
    for k in range(n):
        xs = ADTValue("Cons", (values[(n - 1 - k) % 7], xs))
    back = f(xs)
    count = 0
    while back.constructor == "Cons":
        if count < 20 or count % 999_983 == 0:
            assert int(back.fields[0]) == count % 7
        count += 1
        back = back.fields[1]
    assert count == n


SCRIPT_HEADER = """
import numpy as np
import transpile
from transpile import relay
init = relay.IRModule()
relay.Prelude(init)
"""


def test_a_program_builds_and_drops_three_million_items():
    _needs_cpp()
    # Built by a tail-recursive loop, measured, then dropped on the calling thread's own 8 MiB stack
    # (none of these programs needs the big stack): releasing the list nested once per item and
    # crashed the process. A chain through references likewise; a chain of three million closures
    # returned to Python is released when Python drops it.
    out = _run_in_subprocess(
        SCRIPT_HEADER
        + '''
def build(text):
    return transpile.compile(relay.parse('#[version = "0.0.5"]\\n' + text, init_module=init), backend="cpp")
n = np.asarray(3_000_000, "int32")
lists = build("""
def @build(%n: int32, %acc: List[int32]) -> List[int32] {
  if (%n == 0) { %acc } else { @build(%n - 1, Cons(%n, %acc)) }
}
def @count_items(%xs: List[int32], %k: int32) -> int32 {
  match (%xs) { Cons(_, %t) => @count_items(%t, %k + 1), Nil => %k }
}
def @main(%n: int32) -> (int32, int32) { (@count_items(@build(%n, Nil), 0), @count_items(@build(%n, Nil), 0)) }
""")
print(*[int(v) for v in lists(n)], flush=True)
references = build("""
type Chain { End, Link(ref(Chain)) }
def @chain_refs(%n: int32, %acc: Chain) -> Chain {
  if (%n == 0) { %acc } else { @chain_refs(%n - 1, Link(ref(%acc))) }
}
def @main(%n: int32) -> int32 { let %c = @chain_refs(%n, End); %n }
""")
print(int(references(n)), flush=True)
closures = build("""
def @nest_closures(%n: int32, %f: fn (int32) -> int32) -> fn (int32) -> int32 {
  if (%n == 0) { %f } else { @nest_closures(%n - 1, fn (%x: int32) -> int32 { %f(%x) + 1 }) }
}
def @main(%n: int32) -> fn (int32) -> int32 { @nest_closures(%n, fn (%x: int32) -> int32 { %x }) }
""")
g = closures(n)
del g
print("released")
'''
    )
    assert out.split() == ["3000000", "3000000", "3000000", "released"]


# ---------------------------------------------------------------- the iterative paths keep values right

NESTED = """
def @sums(%xss: List[List[int32]]) -> List[int32] {
  match (%xss) {
    Cons(%xs, %rest) => Cons(@total(%xs, 0), @sums(%rest)),
    Nil => Nil,
  }
}
def @total(%xs: List[int32], %acc: int32) -> int32 {
  match (%xs) { Cons(%h, %t) => @total(%t, %acc + %h), Nil => %acc }
}
def @main(%xss: List[List[int32]]) -> (List[List[int32]], List[int32]) { (%xss, @sums(%xss)) }
"""


def test_lists_of_lists_cross_item_for_item():
    lists = [[], [1], [2, 3, 4], [], list(range(50)), [-7]]
    xss = as_list([as_list([i32(v) for v in inner]) for inner in lists])
    echoed, sums = same_on_cpp(NESTED, xss)
    assert [[int(v) for v in items(inner)] for inner in items(echoed)] == lists
    assert [int(v) for v in items(sums)] == [sum(inner) for inner in lists]
    empty, none = same_on_cpp(NESTED, ADTValue("Nil"))
    assert items(empty) == [] and items(none) == []


TREE = """
type Bin { Tip, Fork(Bin, int32, Bin) }
def @mirror(%t: Bin) -> Bin {
  match (%t) {
    Fork(%l, %v, %r) => Fork(@mirror(%r), %v * 10, @mirror(%l)),
    Tip => Tip,
  }
}
def @main(%t: Bin) -> (Bin, Bin) { (%t, @mirror(%t)) }
"""


def _tree(depth: int, counter: list) -> ADTValue:
    if depth == 0:
        return ADTValue("Tip")
    left = _tree(depth - 1, counter)
    counter[0] += 1
    value = i32(counter[0])
    return ADTValue("Fork", (left, value, _tree(depth - 2 if depth % 3 == 0 else depth - 1, counter)))


def test_trees_with_two_recursive_fields_cross_node_for_node():
    tree = _tree(7, [0])
    echoed, mirrored = same_on_cpp(TREE, tree)
    assert echoed == tree
    assert mirrored.fields[1] == i32(int(tree.fields[1]) * 10)
    same_on_cpp(TREE, ADTValue("Tip"))


def test_a_deep_right_spine_and_a_deep_left_spine_cross():
    f = compiled("type Bin { Tip, Fork(Bin, int32, Bin) }\ndef @main(%t: Bin) -> Bin { %t }")
    tip = ADTValue("Tip")
    right = tip
    for k in range(200_000):  # along the last field: the decoder's and encoder's loop
        right = ADTValue("Fork", (ADTValue("Fork", (tip, i32(-k), tip)), i32(k), right))
    back, count = f(right), 0
    while back.constructor == "Fork":
        k = 200_000 - 1 - count
        assert back.fields[0].fields[1] == i32(-k) and back.fields[1] == i32(k)
        back, count = back.fields[2], count + 1
    assert count == 200_000
    left = tip
    for k in range(20_000):  # along the first field: nested calls (on the big stack)
        left = ADTValue("Fork", (left, i32(k), tip))
    back, count = f(left), 0
    while back.constructor == "Fork":
        assert back.fields[1] == i32(20_000 - 1 - count) and back.fields[2].constructor == "Tip"
        back, count = back.fields[0], count + 1
    assert count == 20_000


OPTIONS = """
def @main(%o: Option[List[int32]], %os: List[Option[List[int32]]]) -> (Option[List[int32]], List[Option[List[int32]]]) {
  (%o, %os)
}
"""


def test_options_of_lists_and_lists_of_options_cross():
    some = ADTValue("Some", (as_list([i32(v) for v in range(1000)]),))
    mixed = as_list([ADTValue("None"), ADTValue("Some", (as_list([]),)), some, ADTValue("Some", (as_list([i32(5)]),))])
    o, os = same_on_cpp(OPTIONS, some, mixed)
    assert [int(v) for v in items(o.fields[0])] == list(range(1000))
    assert [x.constructor for x in items(os)] == ["None", "Some", "Some", "Some"]
    assert items(items(os)[1].fields[0]) == [] and [int(v) for v in items(items(os)[3].fields[0])] == [5]
    o, os = same_on_cpp(OPTIONS, ADTValue("None"), ADTValue("Nil"))
    assert o.constructor == "None" and items(os) == []


# A recursive field that is not the last (Snoc(init, last)), and one with a tensor and a reference.
SNOC = """
type Snoc { Lin, Snoc(Snoc, int32) }
type Rope { Leaf(Tensor[(?), float32]), Join(ref(int32), Rope), Tag((int32, Tensor[(2), float32], List[int32]), Rope) }
def @count(%s: Snoc, %k: int32) -> int32 { match (%s) { Snoc(%init, _) => @count(%init, %k + 1), Lin => %k } }
def @main(%s: Snoc, %r: Rope) -> (Snoc, Rope, int32) { (%s, %r, @count(%s, 0)) }
"""


def test_other_recursive_layouts_cross():
    snoc = ADTValue("Lin")
    for k in range(5000):
        snoc = ADTValue("Snoc", (snoc, i32(k)))
    cell = RefValue(i32(3))
    rope = ADTValue("Leaf", (np.arange(3, dtype="float32"),))
    for k in range(300):
        rope = ADTValue("Join", (cell, rope))
    # a tuple of a scalar, a tensor and a list as a field, released through its items
    rope = ADTValue("Tag", ((i32(1), np.ones(2, "float32"), as_list([i32(4)])), rope))
    s, r, count = compiled(SNOC)(snoc, rope)
    assert s == snoc and int(count) == 5000
    assert r.constructor == "Tag" and [int(v) for v in items(r.fields[0][2])] == [4]
    r = r.fields[1]
    assert r.fields[0] is cell and r.fields[1].fields[0] is cell  # one cell, however often it crosses
    depth = 0
    while r.constructor == "Join":
        r, depth = r.fields[1], depth + 1
    assert depth == 300 and np.array_equal(r.fields[0], np.arange(3, dtype="float32"))
    small = ADTValue("Snoc", (ADTValue("Snoc", (ADTValue("Lin"), i32(1))), i32(2)))
    same_on_cpp(SNOC, small, ADTValue("Join", (RefValue(i32(9)), ADTValue("Leaf", (np.ones(2, "float32"),)))))


# Values released inside the program while shared with what it returns: the worklist only takes
# what the dying node held alone.
SHARING = """
def @main(%xs: List[int32]) -> (List[int32], List[int32], fn () -> List[int32]) {
  let %ys = Cons(1, Cons(2, %xs));
  let %zs = match (%ys) { Cons(_, %t) => %t, Nil => Nil };
  let %dropped = Cons(0, %ys);
  (%zs, %xs, fn () -> List[int32] { Cons(9, %zs) })
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_shared_tails_survive_the_release_of_what_held_them(backend):
    xs = as_list([i32(v) for v in range(100)])
    zs, same, later = compiled(SHARING, backend)(xs)
    assert [int(v) for v in items(zs)] == [2, *range(100)]
    assert same == xs
    assert [int(v) for v in items(later())] == [9, 2, *range(100)]
    del zs, same
    assert [int(v) for v in items(later())] == [9, 2, *range(100)]


# One native list shared by calls on several threads at once: each call conses onto it and drops
# its own nodes while the others hold it; the last owner, whoever it is, releases it.
SHARED_BASE = """
def @build(%n: int32, %acc: List[int32]) -> List[int32] {
  if (%n == 0) { %acc } else { @build(%n - 1, Cons(%n, %acc)) }
}
def @count_items(%xs: List[int32], %k: int32) -> int32 {
  match (%xs) { Cons(_, %t) => @count_items(%t, %k + 1), Nil => %k }
}
def @main(%n: int32) -> fn (int32) -> int32 {
  let %base = @build(%n, Nil);
  fn (%m: int32) -> int32 { @count_items(@build(%m, %base), 0) }
}
"""


def test_a_list_shared_by_threads_is_released_once():
    from concurrent.futures import ThreadPoolExecutor

    count = compiled(SHARED_BASE)(i32(100_000))
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda m: int(count(i32(m))), [1000 * k for k in range(40)]))
    assert results == [100_000 + 1000 * k for k in range(40)]
    del count  # the base goes with the closure


# ---------------------------------------------------------------- callbacks across libraries

# Two different libraries with ADTs of one name and different layouts; each calls a Python
# callback while references of its own are registered as the running call's.
LIB_A = """
type Box { Box(int32) }
def @main(%r: ref(int32), %k: fn (Box) -> Box) -> int32 {
  let %u = ref_write(%r, 10);
  let %x = match (%k(Box(1))) { Box(%v) => %v };
  let %y = ref_read(%r);
  let %z = match (%k(Box(2))) { Box(%v) => %v };
  %x * 1000 + %y * 10 + %z + ref_read(%r) * 100000
}
"""

LIB_B = """
type Box { Box(float32, ref(float32)) }
def @main(%s: ref(float32), %g: fn (Box) -> float32) -> float32 {
  let %u = ref_write(%s, 2.5f);
  let %v = %g(Box(ref_read(%s), %s));
  ref_read(%s) + %v
}
"""


def _interleaved(backend: str):
    """Python -> A -> callback -> B -> callback -> A (re-entered) -> callback, with writes to every
    running call's references on the way; returns everything observed."""
    library_a, library_b = compiled(LIB_A, backend), compiled(LIB_B, backend)
    log = []
    r = RefValue(i32(0))

    def g(box):
        value, s = box.fields
        log.append(("g", float(value), float(s.value), int(r.value)))
        s.value = np.asarray(float(s.value) + 0.25, "float32")  # B's reference, B is running
        if len(log) < 4:  # A inside B inside A
            inner = RefValue(i32(0))
            total = library_a(inner, lambda b: ADTValue("Box", (i32(int(b.fields[0]) + int(inner.value)),)))
            log.append(("inner", int(total), int(inner.value)))
        r.value = i32(int(r.value) + 1)  # the outer A call's reference, while B runs
        return np.asarray(float(value) * 2, "float32")

    def k(box):
        log.append(("k", int(box.fields[0]), int(r.value)))
        s = RefValue(np.asarray(0.0, "float32"))
        out = library_b(s, g)
        log.append(("b", float(out), float(s.value)))
        r.value = i32(int(r.value) + 20)
        return ADTValue("Box", (i32(int(box.fields[0]) * 3),))

    total = library_a(r, k)
    return int(total), int(r.value), log


def test_two_libraries_interleaved_through_callbacks_keep_their_references():
    _needs_cpp()
    expected = _interleaved("interpreter")
    assert _interleaved("cpp") == expected
    total, final, log = expected
    assert final == 52 and log[2] == ("inner", 1011112, 10)  # sanity of the reference run itself


REENTRANT = """
def @main(%r: ref(int32), %depth: int32, %k: fn (int32) -> int32) -> int32 {
  let %u = ref_write(%r, ref_read(%r) + %depth);
  let %x = if (%depth > 0) { %k(%depth - 1) } else { 0 };
  let %w = ref_write(%r, ref_read(%r) * 2);
  ref_read(%r) + %x
}
"""


def _reentered(backend: str):
    """@main called from its own callback four levels deep; every level writes the reference of the
    call around it while that call runs. Returns the result, the cells' final values and the log."""
    f = compiled(REENTRANT, backend)
    cells, log = [RefValue(i32(1))], []

    def callback_for(outer):
        def again(depth):
            log.append((int(depth), int(outer.value)))  # the running call's write, sent with the callback
            cell = RefValue(i32(100 * int(depth)))
            cells.append(cell)
            result = int(f(cell, depth, callback_for(cell)))
            outer.value = i32(int(outer.value) + 1)  # reaches the outer call, still running
            return i32(result % 1009 * 10 + len(log))

        return again

    result = f(cells[0], i32(4), callback_for(cells[0]))
    return int(result), [int(c.value) for c in cells], log


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_library_called_again_from_its_own_callback(backend):
    result, cells, log = _reentered(backend)
    assert cells == [(1 + 4 + 1) * 2, (300 + 3 + 1) * 2, (200 + 2 + 1) * 2, (100 + 1 + 1) * 2, 0]
    assert log == [(3, 5), (2, 303), (1, 202), (0, 101)]
    if backend != "interpreter":
        assert result == _reentered("interpreter")[0]
