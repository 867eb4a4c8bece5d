"""Every function of the Relay Prelude, with results worked out by hand from TVM's definitions."""

from __future__ import annotations

from ...backends.base import ADTS, CLOSURES, NON_TAIL_RECURSION, POLYMORPHISM, RECURSION
from ..case import Case
from ._values import f32, i32, nat, none, plist, rand, rose, some

THEME = "prelude"

_LISTS = {ADTS, POLYMORPHISM}
_TAIL = {ADTS, POLYMORPHISM, RECURSION}
_NON_TAIL = {ADTS, POLYMORPHISM, RECURSION, NON_TAIL_RECURSION}
_HIGHER = {CLOSURES}


def _ints(*values):
    return plist([i32(v) for v in values])


def _case(name, source, **kwargs):
    return Case(name, source, prelude=True, **kwargs)


CASES = [
    _case(
        "id",
        """
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  @id(%x)
}""",
        inputs=(rand(11, 3),),
        expected=lambda x: x.copy(),
        features={POLYMORPHISM},
    ),
    _case(
        "compose",
        """
def @main(%x: float32) -> float32 {
  let %triple = fn (%a: float32) -> float32 { %a * 3f };
  let %inc = fn (%a: float32) -> float32 { %a + 1f };
  let %h = @compose(%triple, %inc);
  %h(%x)
}""",
        inputs=(f32(2.0),),
        expected=f32(9.0),
        features={CLOSURES, POLYMORPHISM},
    ),
    _case(
        "flip",
        """
def @main(%x: int32, %y: int32) -> int32 {
  let %minus = fn (%a: int32, %b: int32) -> int32 { %a - %b };
  let %flipped = @flip(%minus);
  %flipped(%x, %y)
}""",
        inputs=(i32(10), i32(3)),
        expected=i32(-7),
        features={CLOSURES, POLYMORPHISM},
    ),
    _case(
        "hd",
        """
def @main(%xs: List[int32]) -> int32 {
  @hd(%xs)
}""",
        inputs=(_ints(4, 5, 6),),
        expected=i32(4),
        features=_LISTS,
    ),
    _case(
        "tl",
        """
def @main(%xs: List[int32]) -> List[int32] {
  @tl(%xs)
}""",
        inputs=(_ints(4, 5, 6),),
        expected=_ints(5, 6),
        features=_LISTS,
    ),
    _case(
        "nth",
        """
def @main(%xs: List[int32], %n: int32) -> int32 {
  @nth(%xs, %n)
}""",
        inputs=(_ints(4, 5, 6), i32(2)),
        expected=i32(6),
        features=_TAIL,
    ),
    _case(
        "length",
        """
def @main(%xs: List[Tensor[(2), float32]]) -> int32 {
  @length(%xs)
}""",
        inputs=(plist([rand(12, 2), rand(13, 2), rand(14, 2), rand(15, 2)]),),
        expected=i32(4),
        features=_NON_TAIL,
    ),
    _case(
        "update",
        """
def @main(%xs: List[int32]) -> List[int32] {
  @update(%xs, 1, 9)
}""",
        inputs=(_ints(1, 2, 3),),
        expected=_ints(1, 9, 3),
        features=_NON_TAIL,
    ),
    _case(
        "map",
        """
def @main(%xs: List[int32]) -> List[int32] {
  let %square = fn (%x: int32) -> int32 { %x * %x };
  @map(%square, %xs)
}""",
        inputs=(_ints(1, 2, 3),),
        expected=_ints(1, 4, 9),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "map_tensors_to_scalars",
        """
def @main(%xs: List[Tensor[(3), float32]]) -> List[float32] {
  let %total = fn (%x: Tensor[(3), float32]) -> float32 { sum(%x) };
  @map(%total, %xs)
}""",
        inputs=(plist([rand(16, 3), rand(17, 3)]),),
        expected=lambda xs: plist([f32(xs.fields[0].sum()), f32(xs.fields[1].fields[0].sum())]),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "foldl",
        """
def @main(%xs: List[int32]) -> int32 {
  let %digits = fn (%acc: int32, %x: int32) -> int32 { %acc * 10 + %x };
  @foldl(%digits, 0, %xs)
}""",
        inputs=(_ints(1, 2, 3),),
        expected=i32(123),
        features=_TAIL | _HIGHER,
    ),
    _case(
        "foldr",
        """
def @main(%xs: List[int32]) -> int32 {
  let %digits = fn (%x: int32, %acc: int32) -> int32 { %acc * 10 + %x };
  @foldr(%digits, 0, %xs)
}""",
        inputs=(_ints(1, 2, 3),),
        expected=i32(321),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "foldr1",
        """
def @main(%xs: List[int32]) -> int32 {
  let %minus = fn (%a: int32, %b: int32) -> int32 { %a - %b };
  @foldr1(%minus, %xs)
}""",
        inputs=(_ints(10, 4, 3),),
        expected=i32(10 - (4 - 3)),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "sum",
        """
def @main(%xs: List[int32]) -> int32 {
  @sum(%xs)
}""",
        inputs=(_ints(1, 2, 3, 4, 5),),
        expected=i32(15),
        features=_TAIL | _HIGHER,
    ),
    _case(
        "concat",
        """
def @main(%xs: List[int32], %ys: List[int32]) -> List[int32] {
  @concat(%xs, %ys)
}""",
        inputs=(_ints(1, 2), _ints(3)),
        expected=_ints(1, 2, 3),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "filter",
        """
def @main(%xs: List[int32]) -> List[int32] {
  let %big = fn (%x: int32) -> bool { %x > 2 };
  @filter(%big, %xs)
}""",
        inputs=(_ints(1, 5, 2, 7),),
        expected=_ints(5, 7),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "zip",
        """
def @main(%xs: List[int32], %ys: List[float32]) -> List[(int32, float32)] {
  @zip(%xs, %ys)
}""",
        inputs=(_ints(1, 2, 3), plist([f32(4.0), f32(5.0)])),
        expected=plist([(i32(1), f32(4.0)), (i32(2), f32(5.0))]),
        features=_NON_TAIL,
    ),
    _case(
        "rev",
        """
def @main(%xs: List[int32]) -> List[int32] {
  @rev(%xs)
}""",
        inputs=(_ints(1, 2, 3),),
        expected=_ints(3, 2, 1),
        features=_TAIL | _HIGHER,
    ),
    _case(
        "map_accuml",
        """
def @main(%xs: List[int32]) -> (int32, List[int32]) {
  let %step = fn (%acc: int32, %x: int32) -> (int32, int32) { (%acc + %x, %acc * %x) };
  @map_accuml(%step, 0, %xs)
}""",
        inputs=(_ints(1, 2, 3),),
        # The Prelude conses each output onto the accumulated list: the outputs come out reversed.
        expected=(i32(6), _ints(9, 2, 0)),
        features=_TAIL | _HIGHER,
    ),
    _case(
        "map_accumr",
        """
def @main(%xs: List[int32]) -> (int32, List[int32]) {
  let %step = fn (%acc: int32, %x: int32) -> (int32, int32) { (%acc + %x, %acc * %x) };
  @map_accumr(%step, 0, %xs)
}""",
        inputs=(_ints(1, 2, 3),),
        expected=(i32(6), _ints(5, 6, 0)),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "unfoldr",
        """
def @main(%seed: int32) -> List[int32] {
  let %squares = fn (%s: int32) -> Option[(int32, int32)] {
    if (%s == 0) {
      None
    } else {
      Some((%s - 1, %s * %s))
    }
  };
  @unfoldr(%squares, %seed)
}""",
        inputs=(i32(3),),
        expected=_ints(9, 4, 1),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "unfoldl",
        """
def @main(%seed: int32) -> List[int32] {
  let %squares = fn (%s: int32) -> Option[(int32, int32)] {
    if (%s == 0) {
      None
    } else {
      Some((%s - 1, %s * %s))
    }
  };
  @unfoldl(%squares, %seed)
}""",
        inputs=(i32(3),),
        expected=_ints(1, 4, 9),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "option_values",
        """
def @main(%x: Option[int32]) -> (Option[int32], Option[float32]) {
  (%x, None)
}""",
        inputs=(some(i32(5)),),
        expected=(some(i32(5)), none()),
        features={ADTS},
    ),
    _case(
        "tmap",
        """
def @main(%t: Tree[int32]) -> Tree[int32] {
  let %double = fn (%x: int32) -> int32 { %x * 2 };
  @tmap(%double, %t)
}""",
        inputs=(rose(i32(1), [rose(i32(2)), rose(i32(3), [rose(i32(4))])]),),
        expected=rose(i32(2), [rose(i32(4)), rose(i32(6), [rose(i32(8))])]),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "size",
        """
def @main(%t: Tree[int32]) -> int32 {
  @size(%t)
}""",
        inputs=(rose(i32(1), [rose(i32(2)), rose(i32(3), [rose(i32(4))])]),),
        expected=i32(4),
        features=_NON_TAIL | _HIGHER,
    ),
    _case(
        "iterate",
        """
def @main(%x: float32) -> float32 {
  let %double = fn (%v: float32) -> float32 { %v * 2f };
  let %eight_times = @iterate(%double, 3);
  %eight_times(%x)
}""",
        inputs=(f32(1.25),),
        expected=f32(10.0),
        features={CLOSURES, POLYMORPHISM, RECURSION, NON_TAIL_RECURSION},
    ),
    _case(
        "nat_add",
        """
def @main(%x: nat) -> nat {
  @nat_add(zero, @nat_add(%x, succ(zero)))
}""",
        inputs=(nat(4),),
        expected=nat(5),
        features={ADTS, RECURSION, NON_TAIL_RECURSION},
    ),
    _case(
        "nat_double",
        """
def @main(%x: nat) -> nat {
  @nat_double(%x)
}""",
        inputs=(nat(3),),
        expected=nat(6),
        features={ADTS, RECURSION, NON_TAIL_RECURSION},
    ),
    _case(
        "nat_nth",
        """
def @main(%xs: List[int32]) -> int32 {
  @nat_nth(%xs, succ(succ(zero)))
}""",
        inputs=(_ints(10, 20, 30),),
        expected=i32(30),
        features=_TAIL,
    ),
    _case(
        "nat_update",
        """
def @main(%xs: List[int32], %n: nat) -> List[int32] {
  @nat_update(%xs, %n, 9)
}""",
        inputs=(_ints(1, 2, 3), nat(1)),
        expected=_ints(1, 9, 3),
        features=_NON_TAIL,
    ),
    _case(
        "nat_iterate",
        """
def @main(%x: int32, %n: nat) -> int32 {
  let %add3 = fn (%v: int32) -> int32 { %v + 3 };
  let %f = @nat_iterate(%add3, %n);
  %f(%x)
}""",
        inputs=(i32(1), nat(4)),
        expected=i32(13),
        features=_NON_TAIL | _HIGHER,
    ),
]
