"""x86 tensor intrinsics for uint8 x int8 -> int32 dot products of 4 bytes, into 4/8/16 int32 lanes.

Each intrinsic computes, for every lane i of the output vector, C[i] += sum_k A[k] * B[i, k]
(k < 4): A is 4 uint8 data values (one per input channel, broadcast to every lane), B a block of
int8 weights (lanes x 4, contiguous), C the int32 accumulators — in "local" scope: the schedule
keeps its register tile in a cache_write buffer (TVM's own intrinsics take global buffers only). Which one a kernel gets follows
the target's features (`dot_intrinsic_for`):

- avx512vnni: `vpdpbusd` (as apache-tvm's "dot_16x4_vnni"); it widens every product to int32
  before adding, so it is exact.
- AVX-512BW / AVX2 / SSSE3 (512, 256, 128 bits): `pmaddubsw` + `pmaddwd` + `paddd`. pmaddubsw adds
  two u8*s8 products into an int16 with saturation: 255*(-128)*2 = -65280 does not fit, so TVM's
  intrinsics (one pmaddubsw per block) gave wrong sums for large data values. Ours split each data
  byte into its low 7 bits and its top bit (a = lo + 128*hi): lo*w pairs stay within
  2*127*128 = 32512 and hi*w pairs within 2*128 = 256, so both pmaddubsw are exact, and pmaddwd
  (by 1 and by 128) widens them to int32 sums. Twice the multiply instructions of the inexact
  form, but results equal integer arithmetic for every input.
"""

from __future__ import annotations

import functools

__all__ = ["dot_intrinsic_for", "register_dot_intrinsics", "DOT_REDUCTION"]

DOT_REDUCTION = 4  # bytes of one dot product (input channels per instruction group)

# lanes -> (pmaddubsw, pmaddwd) LLVM intrinsics and the feature that provides them
_PMADD = {
    16: ("llvm.x86.avx512.pmaddubs.w.512", "llvm.x86.avx512.pmaddw.d.512", "avx512bw"),
    8: ("llvm.x86.avx2.pmadd.ub.sw", "llvm.x86.avx2.pmadd.wd", "avx2"),
    4: ("llvm.x86.ssse3.pmadd.ub.sw.128", "llvm.x86.sse2.pmadd.wd", "ssse3"),
}
VNNI_INTRIN = "transpile_dot_16x4_u8i8i32_vnni"


def _exact_name(lanes: int) -> str:
    return f"transpile_dot_{lanes}x4_u8i8i32_pmaddubs_exact"


def _vnni_impl():
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def impl(
        A: T.Buffer((4,), "uint8", offset_factor=1),
        B: T.Buffer((16, 4), "int8", offset_factor=1),
        C: T.Buffer((16,), "int32", offset_factor=1, scope="local"),
    ) -> None:
        with T.sblock("root"):
            T.reads(C[0:16], A[0:4], B[0:16, 0:4])
            T.writes(C[0:16])
            # LLVM >= 20 declares the byte operands as <64 x i8> (apache-tvm's own intrinsic passes
            # <16 x i32> and fails to verify)
            packed = T.reinterpret(A.vload([0], "uint8x4"), dtype="int32")
            C[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"),
                C.vload([0], dtype="int32x16"),
                T.reinterpret(T.broadcast(packed, 16), dtype="uint8x64"),
                B.vload([0, 0], dtype="int8x64"),
                dtype="int32x16",
            )

    return impl


def _desc(lanes: int):
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def desc(
        A: T.Buffer((4,), "uint8", offset_factor=1),
        B: T.Buffer((lanes, 4), "int8", offset_factor=1),
        C: T.Buffer((lanes,), "int32", offset_factor=1, scope="local"),
    ) -> None:
        with T.sblock("root"):
            T.reads(C[0:lanes], A[0:4], B[0:lanes, 0:4])
            T.writes(C[0:lanes])
            for i in T.serial(0, lanes):
                for k in T.serial(0, 4):
                    with T.sblock("update"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        C[vi] = C[vi] + T.cast(A[vk], "int32") * T.cast(B[vi, vk], "int32")

    return desc


def _exact_pmaddubs_impl(lanes: int):
    from tvm.script import tirx as T

    pmaddubs, pmaddwd, _ = _PMADD[lanes]
    u8 = f"uint8x{4 * lanes}"
    i8 = f"int8x{4 * lanes}"
    i16 = f"int16x{2 * lanes}"
    i32 = f"int32x{lanes}"

    @T.prim_func(s_tir=True)
    def impl(
        A: T.Buffer((4,), "uint8", offset_factor=1),
        B: T.Buffer((lanes, 4), "int8", offset_factor=1),
        C: T.Buffer((lanes,), "int32", offset_factor=1, scope="local"),
    ) -> None:
        with T.sblock("root"):
            T.reads(C[0:lanes], A[0:4], B[0:lanes, 0:4])
            T.writes(C[0:lanes])
            packed = T.reinterpret(A.vload([0], "uint8x4"), dtype="int32")
            low = T.bitwise_and(packed, T.int32(0x7F7F7F7F))
            high = T.bitwise_and(T.shift_right(packed, T.int32(7)), T.int32(0x01010101))
            weights = B.vload([0, 0], dtype=i8)
            low_pairs = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id(pmaddubs),
                T.reinterpret(T.broadcast(low, lanes), dtype=u8),
                weights,
                dtype=i16,
            )
            high_pairs = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id(pmaddubs),
                T.reinterpret(T.broadcast(high, lanes), dtype=u8),
                weights,
                dtype=i16,
            )
            C[T.ramp(T.int32(0), 1, lanes)] = (
                C.vload([0], dtype=i32)
                + T.call_llvm_pure_intrin(
                    T.llvm_lookup_intrinsic_id(pmaddwd), low_pairs, T.broadcast(T.int16(1), 2 * lanes), dtype=i32
                )
                + T.call_llvm_pure_intrin(
                    T.llvm_lookup_intrinsic_id(pmaddwd), high_pairs, T.broadcast(T.int16(128), 2 * lanes), dtype=i32
                )
            )

    return impl


@functools.lru_cache(maxsize=None)
def register_dot_intrinsics() -> None:
    """Registers the VNNI and the exact pmaddubsw intrinsics (once per process)."""
    from tvm.s_tir import TensorIntrin

    TensorIntrin.register(VNNI_INTRIN, _desc(16), _vnni_impl(), override=True)
    for lanes in _PMADD:
        TensorIntrin.register(_exact_name(lanes), _desc(lanes), _exact_pmaddubs_impl(lanes), override=True)


def _has(feature: str, target) -> bool:
    from tvm.target import codegen

    try:
        return bool(codegen.target_has_features(feature, target))
    except Exception:  # noqa: BLE001 - not an x86 LLVM target
        return False


def dot_intrinsic_for(target) -> tuple[str, int] | None:
    """(registered intrinsic name, int32 lanes) of the widest exact u8 x s8 dot product `target`
    has, or None (no SSSE3, or not an x86 LLVM target: the conv stays plain vector code)."""
    if target.kind.name != "llvm" or not str(target.attrs.get("mtriple", "x86_64")).startswith(("x86_64", "i686")):
        return None
    if _has("avx512vnni", target):
        register_dot_intrinsics()
        return VNNI_INTRIN, 16
    for lanes, (_, _, feature) in _PMADD.items():
        if _has(feature, target):
            register_dot_intrinsics()
            return _exact_name(lanes), lanes
    return None
