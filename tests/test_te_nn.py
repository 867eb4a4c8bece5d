"""TE/topi lowerings of the nn.* operators, compiled by TVM and checked against the numpy reference."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from transpile.relay.op import registry
from transpile.relay.ty import TensorType, TupleType

tvm = pytest.importorskip("tvm")
from tvm import te  # noqa: E402

# nn operators deliberately without a TE lowering (keep this list short and explained).
NO_TE_IMPL: dict[str, str] = {}

F32, F16 = "float32", "float16"


def case(op, args, attrs=None, *, positive=(), ints=False, id=None):
    """One compiled configuration: `args` are (shape, dtype) pairs; `positive` lists args drawn > 0."""
    return pytest.param(op, args, attrs or {}, positive, ints, id=id or op)


CASES = [
    # activations
    case("nn.relu", [((3, 5), F32)]),
    case("nn.relu", [((2, 7), F16)], id="relu-f16"),
    case("nn.leaky_relu", [((4, 6), F32)], {"alpha": 0.1}),
    case("nn.prelu", [((2, 3, 4, 4), F32), ((3,), F32)]),
    case("nn.prelu", [((2, 4, 5), F32), ((5,), F32)], {"axis": -1}, id="prelu-last-axis"),
    case("nn.softmax", [((3, 10), F32)]),
    case("nn.softmax", [((2, 5, 3), F32)], {"axis": 1}, id="softmax-axis1"),
    case("nn.softmax", [((2, 4, 16), F16)], id="softmax-f16"),
    case("nn.log_softmax", [((3, 10), F32)]),
    case("nn.log_softmax", [((4, 3, 2), F32)], {"axis": 0}, id="log_softmax-axis0"),
    # linear algebra
    case("nn.dense", [((4, 8), F32), ((3, 8), F32)]),
    case("nn.dense", [((2, 5, 8), F32), ((6, 8), F32)], id="dense-3d"),
    case("nn.dense", [((8,), F32), ((6, 8), F32)], id="dense-1d"),
    case("nn.dense", [((4, 16), F16), ((8, 16), F16)], id="dense-f16"),
    case("nn.dense", [((4, 16), F16), ((8, 16), F16)], {"out_dtype": F32}, id="dense-f16-out-f32"),
    case("nn.dense", [((3, 8), "int8"), ((5, 8), "int8")], {"out_dtype": "int32"}, ints=True, id="dense-int8"),
    # int8 sums wrap around like the reference's int64 sum cast back to int8.
    case("nn.dense", [((3, 8), "int8"), ((5, 8), "int8")], ints=True, id="dense-int8-wraps"),
    case("nn.matmul", [((4, 8), F32), ((8, 3), F32)]),
    case("nn.matmul", [((8, 4), F32), ((3, 8), F32)], {"transpose_a": True, "transpose_b": True}, id="matmul-tt"),
    case("nn.matmul", [((2, 4, 8), F32), ((8, 3), F32)], id="matmul-3d"),
    case("nn.contrib_dense_pack", [((4, 8), F32), ((2, 8, 16), F32)], {"weight_layout": "NC16n"}),
    case("nn.contrib_dense_pack", [((2, 3, 8), F32), ((1, 8, 10), F32)], {"weight_layout": "NC10n"}, id="dense_pack-3d"),
    case("nn.batch_matmul", [((2, 4, 8), F32), ((2, 3, 8), F32)], {"transpose_b": True}),
    case("nn.batch_matmul", [((2, 4, 8), F32), ((2, 8, 3), F32)], {"transpose_b": False}, id="batch_matmul-nn"),
    case(
        "nn.batch_matmul",
        [((2, 8, 4), F32), ((1, 3, 8), F32)],
        {"transpose_a": True, "transpose_b": True},
        id="batch_matmul-tt-bcast",
    ),
    case("nn.batch_matmul", [((1, 4, 8), F32), ((3, 8, 5), F32)], {"transpose_b": False}, id="batch_matmul-bcast-a"),
    case("nn.batch_matmul", [((2, 4, 16), F16), ((2, 6, 16), F16)], {"transpose_b": True}, id="batch_matmul-f16"),
    case("nn.bias_add", [((2, 3, 4, 4), F32), ((3,), F32)]),
    case("nn.bias_add", [((2, 5), F32), ((5,), F32)], {"axis": -1}, id="bias_add-last"),
    case("nn.batch_flatten", [((2, 3, 4, 5), F32)]),
    case("nn.batch_flatten", [((3,), F32)], id="batch_flatten-1d"),
    # convolutions
    case("nn.conv2d", [((1, 3, 8, 8), F32), ((4, 3, 3, 3), F32)]),
    case(
        "nn.conv2d",
        [((2, 4, 9, 7), F32), ((6, 4, 3, 2), F32)],
        {"strides": (2, 1), "padding": (1, 0, 2, 1), "dilation": (1, 2)},
        id="conv2d-stride-pad-dil",
    ),
    case("nn.conv2d", [((1, 4, 6, 6), F32), ((6, 2, 3, 3), F32)], {"groups": 2, "padding": (1, 1)}, id="conv2d-groups"),
    case(
        "nn.conv2d", [((1, 4, 6, 6), F32), ((4, 1, 3, 3), F32)], {"groups": 4, "padding": (1, 1)}, id="conv2d-depthwise"
    ),
    case(
        "nn.conv2d",
        [((1, 3, 6, 6), F32), ((3, 2, 3, 3), F32)],
        {"groups": 3, "channels": 6, "kernel_size": (3, 3)},
        id="conv2d-depthwise-mult",
    ),
    case(
        "nn.conv2d",
        [((1, 6, 6, 3), F32), ((3, 3, 3, 4), F32)],
        {"padding": (1, 1), "data_layout": "NHWC", "kernel_layout": "HWIO"},
        id="conv2d-nhwc-hwio",
    ),
    case(
        "nn.conv2d",
        [((1, 6, 6, 3), F32), ((4, 3, 3, 3), F32)],
        {"padding": (1, 1), "data_layout": "NHWC", "kernel_layout": "OHWI", "out_dtype": F32},
        id="conv2d-nhwc-ohwi",
    ),
    case(
        "nn.conv2d",
        [((1, 6, 6, 4), F32), ((3, 3, 4, 1), F32)],
        {"padding": (1, 1), "groups": 4, "data_layout": "NHWC", "kernel_layout": "HWOI"},
        id="conv2d-nhwc-dw-hwoi",
    ),
    case(
        "nn.conv2d",
        [((1, 5, 5, 3), F32), ((3, 3, 3, 2), F32)],
        {"groups": 3, "channels": 6, "kernel_size": (3, 3), "data_layout": "NHWC", "kernel_layout": "HWOI"},
        id="conv2d-nhwc-dw-mult",
    ),
    case(
        "nn.conv2d",
        [((1, 6, 6, 4), F32), ((3, 3, 2, 4), F32)],
        {"groups": 2, "data_layout": "NHWC", "kernel_layout": "HWIO", "strides": (2, 2)},
        id="conv2d-nhwc-groups",
    ),
    case("nn.conv2d", [((1, 3, 6, 6), F32), ((4, 3, 3, 3), F32)], {"out_layout": "NHWC"}, id="conv2d-out-nhwc"),
    case("nn.conv2d", [((1, 8, 6, 6), F16), ((4, 8, 3, 3), F16)], {"padding": (1, 1)}, id="conv2d-f16"),
    case("nn.conv2d", [((1, 8, 6, 6), F16), ((4, 8, 1, 1), F16)], {"out_dtype": F32}, id="conv2d-f16-out-f32"),
    case(
        "nn.conv2d",
        [((1, 3, 5, 5), "int8"), ((2, 3, 3, 3), "int8")],
        {"out_dtype": "int32"},
        ints=True,
        id="conv2d-int8",
    ),
    case("nn.conv1d", [((2, 3, 10), F32), ((4, 3, 3), F32)], {"strides": (2,), "padding": (1, 2)}),
    case("nn.conv1d", [((1, 4, 9), F32), ((4, 2, 3), F32)], {"groups": 2, "dilation": (2,)}, id="conv1d-groups"),
    case(
        "nn.conv1d",
        [((1, 9, 4), F32), ((3, 4, 5), F32)],
        {"data_layout": "NWC", "kernel_layout": "WIO"},
        id="conv1d-nwc",
    ),
    case("nn.conv2d_transpose", [((1, 3, 4, 4), F32), ((3, 5, 3, 3), F32)]),
    case(
        "nn.conv2d_transpose",
        [((1, 4, 5, 4), F32), ((4, 2, 3, 3), F32)],
        {"strides": (2, 2), "padding": (1, 1), "output_padding": (1, 1)},
        id="conv2d_transpose-stride",
    ),
    case(
        "nn.conv2d_transpose",
        [((1, 4, 4, 4), F32), ((4, 3, 3, 2), F32)],
        {"groups": 2, "dilation": (2, 1), "padding": (1, 0, 0, 1)},
        id="conv2d_transpose-groups-dil",
    ),
    case(
        "nn.contrib_conv2d_NCHWc",
        [((1, 2, 5, 5, 4), F32), ((2, 2, 3, 3, 4, 4), F32)],
        {
            "padding": (1, 1),
            "channels": 8,
            "kernel_size": (3, 3),
            "data_layout": "NCHW4c",
            "kernel_layout": "OIHW4i4o",
            "out_layout": "NCHW4c",
        },
    ),
    case(
        "nn.contrib_conv2d_NCHWc",
        [((1, 2, 5, 5, 4), F32), ((3, 8, 3, 3), F32)],
        {
            "channels": 3,
            "kernel_size": (3, 3),
            "strides": (2, 2),
            "data_layout": "NCHW4c",
            "kernel_layout": "OIHW",
            "out_layout": "NCHW",
        },
        id="contrib_conv2d_NCHWc-unblocked-out",
    ),
    # pooling
    case("nn.max_pool2d", [((1, 2, 7, 7), F32)], {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1)}),
    case(
        "nn.max_pool2d",
        [((1, 2, 6, 7), F32)],
        {"pool_size": (2, 3), "strides": (2, 2), "ceil_mode": True},
        id="max_pool2d-ceil",
    ),
    case(
        "nn.max_pool2d",
        [((1, 8, 8, 3), F32)],
        {"pool_size": (4, 4), "strides": (4, 4), "layout": "NHWC"},
        id="max_pool2d-nhwc",
    ),
    case(
        "nn.max_pool2d",
        [((1, 2, 9, 9), F32)],
        {"pool_size": (2, 2), "dilation": (2, 2), "padding": (1, 1)},
        id="max_pool2d-dilation",
    ),
    case("nn.avg_pool2d", [((1, 2, 7, 7), F32)], {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1)}),
    case(
        "nn.avg_pool2d",
        [((1, 2, 7, 7), F32)],
        {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1), "count_include_pad": True},
        id="avg_pool2d-incl",
    ),
    case(
        "nn.avg_pool2d",
        [((1, 2, 6, 7), F32)],
        {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1), "ceil_mode": True, "count_include_pad": True},
        id="avg_pool2d-ceil-incl",
    ),
    case(
        "nn.avg_pool2d",
        [((1, 2, 6, 7), F32)],
        {"pool_size": (3, 2), "strides": (2, 2), "ceil_mode": True},
        id="avg_pool2d-ceil",
    ),
    case(
        "nn.avg_pool2d",
        [((1, 8, 8, 3), F16)],
        {"pool_size": (4, 4), "strides": (4, 4), "layout": "NHWC"},
        id="avg_pool2d-nhwc-f16",
    ),
    case(
        "nn.avg_pool2d",
        [((1, 2, 6, 6), "int8")],
        {"pool_size": (3, 3), "strides": (3, 3)},
        ints=True,
        id="avg_pool2d-int8",
    ),
    case(
        "nn.avg_pool2d",
        [((1, 5, 5, 2), "int32")],
        {"pool_size": (2, 2), "padding": (1, 1), "layout": "NHWC"},
        ints=True,
        id="avg_pool2d-int32-nhwc",
    ),
    case(
        "nn.max_pool2d",
        [((1, 2, 5, 5), "int8")],
        {"pool_size": (2, 2), "padding": (1, 1)},
        ints=True,
        id="max_pool2d-int8",
    ),
    case("nn.global_avg_pool2d", [((1, 2, 3, 3), "int8")], ints=True, id="global_avg_pool2d-int8"),
    case("nn.max_pool1d", [((2, 3, 9), F32)], {"pool_size": (3,), "strides": (2,), "padding": (1, 0)}),
    case("nn.avg_pool1d", [((2, 3, 9), F32)], {"pool_size": (3,), "strides": (2,), "padding": (1, 1)}),
    case(
        "nn.avg_pool1d",
        [((2, 9, 3), F32)],
        {"pool_size": (2,), "strides": (2,), "layout": "NWC", "ceil_mode": True},
        id="avg_pool1d-nwc-ceil",
    ),
    case("nn.global_avg_pool2d", [((2, 3, 5, 4), F32)]),
    case("nn.global_avg_pool2d", [((2, 5, 4, 3), F16)], {"layout": "NHWC"}, id="global_avg_pool2d-nhwc-f16"),
    case("nn.global_max_pool2d", [((2, 3, 5, 4), F32)]),
    case("nn.adaptive_avg_pool2d", [((1, 2, 7, 9), F32)], {"output_size": (3, 4)}),
    case(
        "nn.adaptive_avg_pool2d",
        [((1, 7, 9, 2), F32)],
        {"output_size": (1,), "layout": "NHWC"},
        id="adaptive_avg_pool2d-nhwc",
    ),
    case("nn.adaptive_max_pool2d", [((1, 2, 7, 9), F32)], {"output_size": (2, None)}),
    # normalization
    case("nn.batch_norm", [((2, 3, 4, 4), F32)] + [((3,), F32)] * 4, positive=(4,)),
    case(
        "nn.batch_norm",
        [((2, 4, 3), F32)] + [((3,), F32)] * 4,
        {"axis": -1, "center": False},
        positive=(4,),
        id="batch_norm-last-nocenter",
    ),
    case(
        "nn.batch_norm", [((1, 4, 3, 3), F16)] + [((4,), F16)] * 4, {"scale": False}, positive=(4,), id="batch_norm-f16"
    ),
    case("nn.layer_norm", [((2, 3, 8), F32), ((8,), F32), ((8,), F32)]),
    case(
        "nn.layer_norm",
        [((2, 6, 3), F32), ((6,), F32), ((6,), F32)],
        {"axis": 1, "scale": False},
        id="layer_norm-axis1",
    ),
    case("nn.layer_norm", [((2, 16), F16), ((16,), F16), ((16,), F16)], id="layer_norm-f16"),
    case("nn.instance_norm", [((2, 3, 4, 5), F32), ((3,), F32), ((3,), F32)]),
    case("nn.instance_norm", [((2, 4, 5, 3), F32), ((3,), F32), ((3,), F32)], {"axis": 3}, id="instance_norm-nhwc"),
    case("nn.group_norm", [((2, 6, 4, 3), F32), ((6,), F32), ((6,), F32)], {"num_groups": 3}),
    case(
        "nn.group_norm",
        [((2, 3, 3, 4), F32), ((4,), F32), ((4,), F32)],
        {"num_groups": 2, "axis": -1},
        id="group_norm-last",
    ),
    case("nn.l2_normalize", [((2, 3, 4), F32)], {"eps": 1e-6, "axis": (1,)}),
    case("nn.l2_normalize", [((2, 3, 4), F32)], {"eps": 1e-6, "axis": ()}, id="l2_normalize-all"),
    case("nn.l2_normalize", [((2, 3, 4), F32)], {"eps": 1e-6, "axis": (0, -1)}, id="l2_normalize-two-axes"),
    case("nn.dropout", [((3, 4), F32)], {"rate": 0.3}),
    # spatial
    case("nn.pad", [((2, 3), F32), ((), F32)], {"pad_width": ((1, 2), (0, 3))}),
    case("nn.pad", [((4, 5), F32), ((), F32)], {"pad_width": ((-1, 2), (1, -2))}, id="pad-crop"),
    case(
        "nn.pad",
        [((2, 3, 4), F32), ((), F32)],
        {"pad_width": ((0, 0), (2, 1), (3, 3)), "pad_mode": "edge"},
        id="pad-edge",
    ),
    case(
        "nn.pad",
        [((2, 3, 4), F32), ((), F32)],
        {"pad_width": ((0, 0), (2, 2), (3, 3)), "pad_mode": "reflect"},
        id="pad-reflect",
    ),
    case("nn.pad", [((2, 3), F16), ((), F32)], {"pad_width": ((1, 1), (1, 1))}, id="pad-f16-value-f32"),
    case("nn.upsampling", [((1, 2, 3, 4), F32)], {"scale_h": 2.0, "scale_w": 3.0}),
    case(
        "nn.upsampling", [((1, 3, 4, 2), F32)], {"scale_h": 1.5, "scale_w": 2.0, "layout": "NHWC"}, id="upsampling-nhwc"
    ),
    case(
        "nn.upsampling",
        [((1, 2, 3, 4), F32)],
        {"scale_h": 2.0, "scale_w": 2.0, "method": "bilinear"},
        id="upsampling-bilinear",
    ),
    case(
        "nn.upsampling",
        [((1, 2, 3, 4), F32)],
        {"scale_h": 2.0, "scale_w": 1.5, "method": "bilinear", "align_corners": True},
        id="upsampling-bilinear-ac",
    ),
    case(
        "nn.upsampling",
        [((1, 2, 3, 4), F32)],
        {"scale_h": 2.0, "scale_w": 2.0, "align_corners": True},
        id="upsampling-nearest-ac",
    ),
    case(
        "nn.upsampling", [((2, 3, 4, 1), F32)], {"scale_h": 2.0, "scale_w": 2.0, "layout": "CHWN"}, id="upsampling-chwn"
    ),
]


def _random_input(rng, shape, dtype, positive, ints):
    if ints or np.dtype(dtype).kind in "iu":
        # Wide enough that int8 window sums overflow int8 (the lowering must accumulate wider).
        return rng.integers(-100, 100, size=shape).astype(dtype)
    if positive:
        return rng.uniform(0.2, 1.5, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _outputs(te_result):
    return list(te_result) if isinstance(te_result, (list, tuple)) else [te_result]


def _out_types(out_type):
    return list(out_type.fields) if isinstance(out_type, TupleType) else [out_type]


class _Built:
    """Every case lowered to one PrimFunc each, all compiled by a single tvm.compile call."""

    def __init__(self, params):
        self.entries, self.errors = {}, {}
        funcs = {}
        for index, param in enumerate(params):
            op, args, attrs, positive, ints = param.values
            opdef = registry.get(op)
            name = f"k{index}_{op.replace('.', '_')}"
            try:
                # As the tvm.relay.nn builders: Python-side defaults (dense's units=None) apply.
                normalized = registry.normalize_attrs(opdef, {**opdef.extras.get("builder_defaults", {}), **attrs})
                out_type = opdef.type_rel([TensorType(shape, dtype) for shape, dtype in args], normalized)
                placeholders = [te.placeholder(shape, dtype, name=f"arg{i}") for i, (shape, dtype) in enumerate(args)]
                outs = _outputs(opdef.te_impl(placeholders, normalized, out_type))
                funcs[name] = te.create_prim_func([*placeholders, *outs]).with_attr("global_symbol", name)
            except Exception as error:  # reported by the case's own test
                self.errors[param.id] = error
                continue
            self.entries[param.id] = (name, opdef, normalized, out_type)
        self.executable = tvm.compile(tvm.IRModule(funcs), target="llvm")

    def run(self, param):
        if param.id in self.errors:
            raise self.errors[param.id]
        op, args, attrs, positive, ints = param.values
        name, opdef, normalized, out_type = self.entries[param.id]
        rng = np.random.default_rng(zlib.crc32(param.id.encode()))
        inputs = [_random_input(rng, shape, dtype, i in positive, ints) for i, (shape, dtype) in enumerate(args)]
        out_types = _out_types(out_type)
        outs = [tvm.runtime.empty(tuple(t.shape), t.dtype) for t in out_types]
        self.executable[name](*[tvm.runtime.tensor(x) for x in inputs], *outs)
        expected = opdef.numpy_impl(inputs, normalized, out_type)
        expected = list(expected) if isinstance(expected, tuple) else [expected]
        return [o.numpy() for o in outs], expected, out_types


@pytest.fixture(scope="module")
def built():
    return _Built(CASES)


@pytest.mark.parametrize("case_id", [p.id for p in CASES])
def test_te_matches_numpy(built, case_id):
    param = next(p for p in CASES if p.id == case_id)
    got, expected, out_types = built.run(param)
    assert len(got) == len(expected)
    for g, e, t in zip(got, expected, out_types):
        assert g.shape == tuple(t.shape) and g.dtype == np.dtype(t.dtype)
        assert e.shape == g.shape
        if np.dtype(t.dtype).kind in "iub":
            np.testing.assert_array_equal(g, e)
        elif t.dtype == "float16":
            np.testing.assert_allclose(g.astype(np.float32), e.astype(np.float32), rtol=2e-2, atol=2e-2)
        else:
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_case_ids_are_unique():
    ids = [p.id for p in CASES]
    assert len(ids) == len(set(ids))


def test_every_nn_op_has_a_te_impl_or_is_excluded():
    nn_ops = {opdef.name for opdef in registry.registered_ops() if opdef.name.startswith("nn.")}
    missing = sorted(name for name in nn_ops if registry.get(name).te_impl is None and name not in NO_TE_IMPL)
    assert missing == []
    stale = sorted(name for name in NO_TE_IMPL if name not in nn_ops or registry.get(name).te_impl is not None)
    assert stale == []


def test_every_nn_op_with_a_te_impl_is_tested():
    from test_te_nn_extra import TESTED_OPS  # the newer nn operators are checked there

    tested = {p.values[0] for p in CASES} | TESTED_OPS
    lowered = {o.name for o in registry.registered_ops() if o.name.startswith("nn.") and o.te_impl is not None}
    assert lowered - tested == set()


def test_importing_the_registry_does_not_import_tvm():
    import subprocess
    import sys

    code = "import sys, transpile.relay; transpile.relay.op.registry.registered_ops(); print('tvm' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def _compile_one(op, arg_types, attrs):
    opdef = registry.get(op)
    normalized = registry.normalize_attrs(opdef, attrs)
    out_type = opdef.type_rel(arg_types, normalized)
    placeholders = [te.placeholder(tuple(t.shape), t.dtype, name=f"arg{i}") for i, t in enumerate(arg_types)]
    outs = _outputs(opdef.te_impl(placeholders, normalized, out_type))
    pf = te.create_prim_func([*placeholders, *outs]).with_attr("global_symbol", "single")
    return tvm.compile(tvm.IRModule({"single": pf}), target="llvm")["single"], opdef, normalized, out_type


def test_integer_average_pool_truncates_toward_zero_like_topi():
    # Windows of [[-3, -2], [0, 0]] and [[5, 2], [0, 0]]: sums -5 and 7 over 4 taps.
    data = np.array([[[[-3, -2, 5, 2], [0, 0, 0, 0]]]], dtype="int32")
    kernel, opdef, attrs, out_type = _compile_one(
        "nn.avg_pool2d", [TensorType(data.shape, "int32")], {"pool_size": (2, 2), "strides": (2, 2)}
    )
    out = tvm.runtime.empty((1, 1, 1, 2), "int32")
    kernel(tvm.runtime.tensor(data), out)
    expected = np.array([[[[-1, 1]]]], dtype="int32")
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(opdef.numpy_impl([data], attrs, out_type), expected)


def test_conv2d_transpose_known_values():
    # A 1x1 input pixel of value 2 scattered through a 2x2 kernel at stride 2, then cropped by padding 1 on the left.
    data = np.full((1, 1, 2, 1), 2.0, dtype="float32")
    weight = np.arange(4, dtype="float32").reshape(1, 1, 2, 2)
    kernel, *_ = _compile_one(
        "nn.conv2d_transpose",
        [TensorType(data.shape, F32), TensorType(weight.shape, F32)],
        {"strides": (2, 2), "padding": (0, 1, 0, 0)},
    )
    out = tvm.runtime.empty((1, 1, 4, 1), F32)
    kernel(tvm.runtime.tensor(data), tvm.runtime.tensor(weight), out)
    np.testing.assert_array_equal(out.numpy()[0, 0, :, 0], [2.0, 6.0, 2.0, 6.0])


# Small corpus programs whose nn calls use the less common layouts and dtypes
# (NCHW4c / OIHW4i4o, NHWC with OHWI / HWOI, int32 accumulation, NHWC pools).
CORPUS_FILES = (
    "test_cpp_aot__1.relay",
    "test_crt_aot__1.relay",
    "test_dataflow_pattern__1.relay",
    "test_dataflow_pattern__2.relay",
    "test_legalize__5.relay",
    "test_legalize__6.relay",
    "test_legalize__7.relay",
    "test_legalize__8.relay",
    "test_micro_model_library_format__2.relay",
)


def test_nn_calls_of_corpus_programs_lower_and_match_numpy(corpus_dir):
    from corpus_support import load, records

    from transpile import relay
    from transpile.relay.expr import Op
    from transpile.relay.visitor import ExprVisitor

    class Calls(ExprVisitor):
        def __init__(self):
            super().__init__()
            self.found = {}

        def visit_call(self, call):
            if isinstance(call.op, Op) and call.op.name.startswith("nn."):
                arg_types = [a.checked_type for a in call.args]
                key = (call.op.name, tuple(map(str, arg_types)), repr(dict(call.attrs)))
                self.found.setdefault(key, (call.op.name, arg_types, call.attrs, call.checked_type))
            super().visit_call(call)

    calls = Calls()
    chosen = [r for r in records("module", "ok") if r["file"] in CORPUS_FILES]
    assert len(chosen) == len(CORPUS_FILES)
    for record in chosen:
        for _, func in relay.transform.InferType()(load(record)).functions.items():
            calls.visit(func)
    found = list(calls.found.values())
    assert {"nn.contrib_conv2d_NCHWc", "nn.conv2d", "nn.max_pool2d"} <= {c[0] for c in found}
    funcs = {}
    for index, (op, arg_types, attrs, out_type) in enumerate(found):
        placeholders = [te.placeholder(tuple(t.shape), t.dtype, name=f"arg{i}") for i, t in enumerate(arg_types)]
        outs = _outputs(registry.get(op).te_impl(placeholders, attrs, out_type))
        funcs[f"c{index}"] = te.create_prim_func([*placeholders, *outs]).with_attr("global_symbol", f"c{index}")
    executable = tvm.compile(tvm.IRModule(funcs), target="llvm")
    rng = np.random.default_rng(7)
    for index, (op, arg_types, attrs, out_type) in enumerate(found):
        inputs = [_random_input(rng, tuple(t.shape), t.dtype, False, False) for t in arg_types]
        outs = [tvm.runtime.empty(tuple(t.shape), t.dtype) for t in _out_types(out_type)]
        executable[f"c{index}"](*[tvm.runtime.tensor(x) for x in inputs], *outs)
        expected = registry.get(op).numpy_impl(inputs, attrs, out_type)
        expected = list(expected) if isinstance(expected, tuple) else [expected]
        for got, want in zip(outs, expected):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4, err_msg=f"{op} {attrs}")


SYMBOLIC_BATCH_CASES = (
    "nn.relu",
    "softmax-axis1",
    "dense-3d",
    "nn.bias_add",
    "conv2d-nhwc-ohwi",
    "conv2d-depthwise",
    "avg_pool2d-ceil-incl",
    "nn.global_avg_pool2d",
    "nn.adaptive_avg_pool2d",
    "nn.batch_norm",
    "layer_norm-axis1",
    "nn.group_norm",
    "l2_normalize-all",
    "pad-crop",
    "pad-reflect",
    "upsampling-bilinear",
    "nn.contrib_conv2d_NCHWc",
)


def test_lowerings_accept_a_symbolic_leading_dimension():
    # Relay's Any dims reach the lowering as TIR variables; one kernel then serves every batch size.
    from transpile.relay.ty import Any

    funcs, runs = {}, []
    for index, case_id in enumerate(SYMBOLIC_BATCH_CASES):
        op, args, attrs, positive, ints = next(p for p in CASES if p.id == case_id).values
        opdef = registry.get(op)
        normalized = registry.normalize_attrs(opdef, {**opdef.extras.get("builder_defaults", {}), **attrs})
        (shape0, dtype0), rest = args[0], args[1:]
        symbolic_type = opdef.type_rel(
            [TensorType((Any(),) + shape0[1:], dtype0)] + [TensorType(s, d) for s, d in rest], normalized
        )
        placeholders = [te.placeholder((te.var("n"),) + shape0[1:], dtype0, name="arg0")]
        placeholders += [te.placeholder(s, d, name=f"arg{i + 1}") for i, (s, d) in enumerate(rest)]
        outs = _outputs(opdef.te_impl(placeholders, normalized, symbolic_type))
        name = f"s{index}"
        funcs[name] = te.create_prim_func([*placeholders, *outs]).with_attr("global_symbol", name)
        runs.append((name, opdef, normalized, [((3,) + shape0[1:], dtype0)] + list(rest), positive))
    executable = tvm.compile(tvm.IRModule(funcs), target="llvm")
    rng = np.random.default_rng(11)
    for name, opdef, normalized, args, positive in runs:
        out_type = opdef.type_rel([TensorType(s, d) for s, d in args], normalized)
        inputs = [_random_input(rng, s, d, i in positive, False) for i, (s, d) in enumerate(args)]
        outs = [tvm.runtime.empty(tuple(t.shape), t.dtype) for t in _out_types(out_type)]
        executable[name](*[tvm.runtime.tensor(x) for x in inputs], *outs)
        expected = opdef.numpy_impl(inputs, normalized, out_type)
        expected = list(expected) if isinstance(expected, tuple) else [expected]
        for got, want in zip(outs, expected):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5, err_msg=opdef.name)
