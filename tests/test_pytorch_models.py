"""Whole torchvision and transformers models through `from_pytorch` and the cpp backend, against PyTorch.

ResNet-18 and a tiny BERT run in CI; the other models (ResNet-50, MobileNet v2/v3, SqueezeNet,
EfficientNet-B0, a small ViT, a small GPT-2) are `slow`. Weights are random: torchvision's
initialisation with batch-norm statistics calibrated on random images (so activations keep a
sensible scale through the network), transformers' initialisation for the language models.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import transpile  # noqa: E402
from transpile.relay.frontend import from_pytorch  # noqa: E402
from transpile.testing.torch_support import import_torchvision, import_transformers  # noqa: E402

# Relative to the output's largest magnitude: float32 through tens of layers, other summation orders.
TOLERANCE = 1e-4

# torch's own pytree code warns about its deprecated LeafSpec on every export.
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")


def _flatten(value) -> list:
    if hasattr(value, "to_tuple"):
        value = value.to_tuple()
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _flatten(item)]
    return [value]


def compare_on_cpp(module, inputs):
    module = module.eval()
    mod, params = from_pytorch(module, inputs)
    assert params == {}
    compiled = transpile.compile(mod, backend="cpp")
    got = _flatten(compiled(*[x.numpy() for x in inputs]))
    with torch.no_grad():
        want = [w.numpy() for w in _flatten(module(*inputs))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        scale = float(np.abs(w).max())
        assert scale > 1e-3, "the reference output is degenerate; the comparison would prove nothing"
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=TOLERANCE, atol=TOLERANCE * scale)


def _image(shape=(1, 3, 224, 224), seed=1):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _calibrated(module, image_shape=(1, 3, 224, 224)):
    """`module` with every batch norm's running statistics set to those of its input on random images."""
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a plain average over the calibration batch
    module.train()
    with torch.no_grad():
        module(_image((2, *image_shape[1:]), seed=2))
    return module.eval()


def _torchvision_model(name):
    models = import_torchvision().models
    torch.manual_seed(0)
    if name == "vit_small":
        module = models.VisionTransformer(
            image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=10
        )
        with torch.no_grad():  # torchvision zero-initialises the head, which would make every output 0
            module.heads.head.weight.normal_(0, 0.2)
        return module.eval(), (_image((1, 3, 32, 32)),)
    return _calibrated(getattr(models, name)()), (_image(),)


def test_resnet18():
    compare_on_cpp(*_torchvision_model("resnet18"))


VISION_SLOW = [
    "resnet50",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "mobilenet_v3_large",
    "squeezenet1_0",
    "efficientnet_b0",
    "vit_small",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", VISION_SLOW)
def test_torchvision_model(name):
    compare_on_cpp(*_torchvision_model(name))


def _tokens(vocab, shape, seed=3):
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))


def tiny_bert(attn_implementation):
    transformers = import_transformers()
    config = transformers.BertConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        vocab_size=100,
        max_position_embeddings=32,
        attn_implementation=attn_implementation,
    )
    torch.manual_seed(0)
    return transformers.BertModel(config).eval()


@pytest.mark.parametrize("attn_implementation", ["sdpa", pytest.param("eager", marks=pytest.mark.slow)])
def test_tiny_bert(attn_implementation):
    ids = _tokens(100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, 5:] = 0  # a padded second sequence: the attention mask matters
    compare_on_cpp(tiny_bert(attn_implementation), (ids, mask))


@pytest.mark.slow
@pytest.mark.parametrize("attn_implementation", ["sdpa", "eager"])
def test_small_gpt2(attn_implementation):
    transformers = import_transformers()
    config = transformers.GPT2Config(
        n_embd=64,
        n_layer=2,
        n_head=4,
        vocab_size=128,
        n_positions=32,
        bos_token_id=0,
        eos_token_id=0,
        use_cache=False,
        attn_implementation=attn_implementation,
    )
    torch.manual_seed(0)
    compare_on_cpp(transformers.GPT2LMHeadModel(config), (_tokens(128, (1, 12)),))
