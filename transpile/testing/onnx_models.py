"""Real PyTorch models (torchvision CNNs, a small ViT, tiny BERT and GPT-2) exported to ONNX, for tests and benchmarks.

    exported = export_model("resnet18")
    exported.onnx_bytes     # serialized ModelProto
    exported.inputs         # {graph input name: numpy array}, in graph-input order
    exported.module         # the torch module (eval mode), called with the inputs in that order

Weights are random (seeded) — no downloads. Models are exported with the TorchScript exporter
(`torch.onnx.export(..., dynamo=False)`): the dynamo exporter needs `onnxscript`, which is not
installed here. The exporter is given a deep copy of the module because exporting a transformers
model alters the original's behaviour afterwards (its GPT-2 logits moved by 0.2 after export).
"""

from __future__ import annotations

import copy
import functools
import io
import warnings
from typing import Callable, NamedTuple

import numpy as np

from .torch_support import import_torchvision, import_transformers

__all__ = ["MODEL_NAMES", "ExportedModel", "export_model", "build_module", "torch_outputs"]

OPSET = 17


class ExportedModel(NamedTuple):
    onnx_bytes: bytes
    inputs: dict  # {name: np.ndarray}
    module: object  # torch.nn.Module


def _torchvision_cnn(factory: str, image_size: int = 224):
    def build():
        import torch

        models = import_torchvision().models
        module = getattr(models, factory)(weights=None)
        image = torch.randn(1, 3, image_size, image_size)
        return module, {"input": image}, ["output"]

    return build


def _small_vit():
    import torch

    models = import_torchvision().models
    module = models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=10
    )
    return module, {"input": torch.randn(1, 3, 32, 32)}, ["output"]


_SEQUENCE = 16
_VOCAB = 100


def _token_inputs():
    import torch

    ids = torch.randint(0, _VOCAB, (1, _SEQUENCE))
    mask = torch.ones(1, _SEQUENCE, dtype=torch.int64)
    return {"input_ids": ids, "attention_mask": mask}


def _tiny_bert():
    import torch

    transformers = import_transformers()
    config = transformers.BertConfig(
        vocab_size=_VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    bert = transformers.BertModel(config)

    class Bert(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
            return out.last_hidden_state, out.pooler_output

    return Bert(), _token_inputs(), ["last_hidden_state", "pooler_output"]


def _tiny_gpt2():
    import torch

    transformers = import_transformers()
    config = transformers.GPT2Config(
        vocab_size=_VOCAB,
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=64,
        use_cache=False,
        bos_token_id=0,
        eos_token_id=0,
    )
    gpt2 = transformers.GPT2LMHeadModel(config)

    class Gpt2(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gpt2 = gpt2

        def forward(self, input_ids, attention_mask):
            # An explicit mask keeps transformers off its packed-sequence path (torch.diff, not exportable).
            return self.gpt2(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

    return Gpt2(), _token_inputs(), ["logits"]


# name -> builder of (module, {input name: torch tensor}, output names)
_BUILDERS: dict[str, Callable] = {
    "resnet18": _torchvision_cnn("resnet18"),
    "resnet50": _torchvision_cnn("resnet50"),
    "mobilenet_v2": _torchvision_cnn("mobilenet_v2"),
    "mobilenet_v3_small": _torchvision_cnn("mobilenet_v3_small"),
    "squeezenet1_1": _torchvision_cnn("squeezenet1_1"),
    "efficientnet_b0": _torchvision_cnn("efficientnet_b0"),
    "vit_small": _small_vit,
    "bert_tiny": _tiny_bert,
    "gpt2_tiny": _tiny_gpt2,
}
MODEL_NAMES = tuple(_BUILDERS)


def build_module(name: str, seed: int = 0):
    """(torch module in eval mode, {input name: torch tensor}, output names) of model `name`."""
    import torch

    if name not in _BUILDERS:
        raise ValueError(f"unknown model {name!r}; models: {', '.join(MODEL_NAMES)}")
    torch.manual_seed(seed)
    module, inputs, outputs = _BUILDERS[name]()
    _sensible_weights(module, inputs)
    return module.eval(), inputs, outputs


def _sensible_weights(module, inputs) -> None:
    """Weights whose outputs are neither vanishing nor zero, so comparisons at rtol 1e-4 mean something.

    torchvision's initializations leave MobileNet's and EfficientNet's outputs at ~1e-9 (batch
    norms at identity statistics) and ViT's head at zero. Zero-initialized linear layers get
    He-scaled weights; batch norms get the statistics of a random batch, so every normalized
    activation has unit scale in eval mode.
    """
    import torch

    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear) and not layer.weight.detach().any():
            torch.nn.init.normal_(layer.weight, std=layer.in_features**-0.5)
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    module.eval()
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average: the statistics of exactly the calibration batch
        norm.train()
    batch = {k: torch.randn(2, *v.shape[1:]) if v.is_floating_point() else v for k, v in inputs.items()}
    with torch.no_grad():
        module(*batch.values())
    module.eval()


@functools.lru_cache(maxsize=4)
def export_model(name: str, seed: int = 0) -> ExportedModel:
    """Model `name` with seeded random weights, exported to ONNX (opset 17), with its example inputs."""
    import torch

    module, inputs, outputs = build_module(name, seed)
    buffer = io.BytesIO()
    # Not under no_grad: in inference, nn.MultiheadAttention takes a fused fast path the exporter cannot export.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
        torch.onnx.export(
            copy.deepcopy(module),
            tuple(inputs.values()),
            buffer,
            dynamo=False,
            opset_version=OPSET,
            input_names=list(inputs),
            output_names=outputs,
            do_constant_folding=True,
        )
    import onnx

    proto = onnx.load_model_from_string(buffer.getvalue())
    initializers = {t.name for t in proto.graph.initializer}
    graph_inputs = [i.name for i in proto.graph.input if i.name not in initializers]
    if graph_inputs != list(inputs):  # the exporter drops inputs the graph does not use
        raise RuntimeError(f"{name}: exported graph inputs {graph_inputs}, expected {list(inputs)}")
    arrays = {key: value.numpy() for key, value in inputs.items()}
    return ExportedModel(buffer.getvalue(), arrays, module)


def torch_outputs(exported: ExportedModel) -> list[np.ndarray]:
    """The torch module's outputs on the example inputs."""
    import torch

    with torch.no_grad():
        result = exported.module(*(torch.from_numpy(a) for a in exported.inputs.values()))
    results = result if isinstance(result, tuple) else (result,)
    return [r.numpy() for r in results]
