"""A small model zoo written as plain PyTorch modules, and their export to ONNX.

The architectures follow their papers (layer shapes only; weights are left at their random
initialisation, which does not matter for mapping):

* ``resnet50``: He et al., "Deep Residual Learning for Image Recognition" (2016), bottleneck
  blocks [3, 4, 6, 3], with the stride in the 3×3 convolution (the v1.5 variant that DOSA's
  and torchvision's ResNet-50 use);
* ``mobilenet_v2``: Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks"
  (2018), Table 2, width 1.0;
* ``efficientnet_b0``: Tan and Le, "EfficientNet" (2019), Table 1, squeeze-and-excitation 0.25,
  Swish;
* ``vit_b_16``: Dosovitskiy et al., "An Image is Worth 16x16 Words" (2021), ViT-Base: patch 16,
  width 768, 12 layers, 12 heads, MLP 3072.

:func:`export_onnx` exports any ``nn.Module`` (the zoo's or a user's) with the legacy
TorchScript exporter (no onnxscript needed), falling back to the dynamo exporter.
:func:`exported_model` does it in a private temporary folder that is removed afterwards.
torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
import logging
import math
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from twill.errors import BackendUnavailableError, InvalidProblemError

__all__ = [
    "EXPORTERS",
    "MODELS",
    "build_model",
    "export_onnx",
    "exported_model",
    "parse_input_shape",
]

log = logging.getLogger(__name__)

MODELS = ("resnet50", "mobilenet_v2", "efficientnet_b0", "vit_b_16")
_DEFAULT_INPUT = (1, 3, 224, 224)


#: Largest ``--input`` tensor (elements): 2^26, 256 MiB of float32.
MAX_INPUT_ELEMENTS = 2**26
#: Largest ``--input`` dimension (a layer dimension's limit, docs/formats.md).
MAX_INPUT_DIM = 2**24


def parse_input_shape(text: str | None) -> tuple[int, ...]:
    """``"1x3x224x224"`` → ``(1, 3, 224, 224)``; ``None`` gives that default.

    Every dimension lies in 1 ... 2^24 and the tensor has at most 2^26 elements, checked
    before any model is built (docs/formats.md)."""
    if not text:
        return _DEFAULT_INPUT
    try:
        dims = tuple(int(x) for x in text.lower().split("x"))
    except ValueError:
        dims = ()
    if len(dims) != 4 or min(dims) < 1 or max(dims) > MAX_INPUT_DIM:
        raise InvalidProblemError(
            f"--input: expected NxCxHxW with integers from 1 to {MAX_INPUT_DIM:,}, "
            f"got {text[:40]!r}",
            source="--input",
        )
    if math.prod(dims) > MAX_INPUT_ELEMENTS:
        raise InvalidProblemError(
            f"--input: {math.prod(dims):,} elements is above the limit of "
            f"{MAX_INPUT_ELEMENTS:,} (2^26)",
            source="--input",
        )
    return dims


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise BackendUnavailableError("the model zoo needs torch") from exc
    return torch


def _conv_bn(nn: Any, cin: int, cout: int, k: int, s: int = 1, g: int = 1, act: Any = None) -> Any:
    layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([act()] if act is not None else []))


def _resnet50(nn: Any) -> Any:
    class Bottleneck(nn.Module):
        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(
                _conv_bn(nn, cin, width, 1, act=nn.ReLU),
                _conv_bn(nn, width, width, 3, stride, act=nn.ReLU),
                _conv_bn(nn, width, cout, 1),
            )
            self.short = _conv_bn(nn, cin, cout, 1, stride) if stride != 1 or cin != cout else None
            self.relu = nn.ReLU()

        def forward(self, x: Any) -> Any:
            out = self.body(x)  # the projection shortcut runs after conv3, as in torchvision
            return self.relu(out + (x if self.short is None else self.short(x)))

    blocks: list[Any] = []
    cin = 64
    for width, n, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(n):
            blocks.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    return nn.Sequential(
        _conv_bn(nn, 3, 64, 7, 2, act=nn.ReLU),
        nn.MaxPool2d(3, 2, 1),
        *blocks,
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(2048, 1000),
    )


def _inverted_residual(nn: Any, act: Any, se: bool) -> Any:
    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, t: int, k: int, s: int) -> None:
            super().__init__()
            hid = cin * t
            parts = [_conv_bn(nn, cin, hid, 1, act=act)] if t != 1 else []
            parts.append(_conv_bn(nn, hid, hid, k, s, g=hid, act=act))
            self.expand = nn.Sequential(*parts)
            self.se = (
                nn.Sequential(
                    nn.AdaptiveAvgPool2d(1),
                    nn.Conv2d(hid, max(1, cin // 4), 1),
                    act(),
                    nn.Conv2d(max(1, cin // 4), hid, 1),
                    nn.Sigmoid(),
                )
                if se
                else None
            )
            self.project = _conv_bn(nn, hid, cout, 1)
            self.residual = s == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            h = self.expand(x)
            if self.se is not None:
                h = h * self.se(h)
            h = self.project(h)
            return x + h if self.residual else h

    return Block


def _mobile(nn: Any, settings: tuple, stem: int, act: Any, se: bool, kernel: bool) -> Any:
    block = _inverted_residual(nn, act, se)
    layers = [_conv_bn(nn, 3, stem, 3, 2, act=act)]
    cin = stem
    for row in settings:
        t, k, c, n, s = row if kernel else (row[0], 3, *row[1:])
        for i in range(n):
            layers.append(block(cin, c, t, k, s if i == 0 else 1))
            cin = c
    return nn.Sequential(
        *layers,
        _conv_bn(nn, cin, 1280, 1, act=act),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(1280, 1000),
    )


_MBV2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1))
_MBV2 += ((6, 160, 3, 2), (6, 320, 1, 1))
_EFFB0 = ((1, 3, 16, 1, 1), (6, 3, 24, 2, 2), (6, 5, 40, 2, 2), (6, 3, 80, 3, 2))
_EFFB0 += ((6, 5, 112, 3, 1), (6, 5, 192, 4, 2), (6, 3, 320, 1, 1))


def _vit_b_16(nn: Any, torch: Any, image: int) -> Any:
    dim, heads, depth, mlp, patch = 768, 12, 12, 3072, 16
    n_tok = (image // patch) ** 2 + 1

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))

        def forward(self, x: Any) -> Any:
            b, n, _ = x.shape
            qkv = self.qkv(self.ln1(x)).reshape(b, n, 3, heads, dim // heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
            att = torch.softmax(q @ k.transpose(-2, -1) * (dim // heads) ** -0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, n, dim))
            return x + self.mlp(self.ln2(x))

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Conv2d(3, dim, patch, patch)
            self.cls = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos = nn.Parameter(torch.zeros(1, n_tok, dim))
            self.blocks = nn.Sequential(*[Encoder() for _ in range(depth)])
            self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, 1000)

        def forward(self, x: Any) -> Any:
            x = self.embed(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
            return self.head(self.ln(self.blocks(x))[:, 0])

    return ViT()


def build_model(name: str, input_shape: tuple[int, ...] = _DEFAULT_INPUT) -> Any:
    """The zoo's ``name`` (:data:`MODELS`) as a ``torch.nn.Module`` in eval mode."""
    torch = _torch()
    nn = torch.nn
    key = name.lower().replace("-", "_")
    builders: dict[str, Callable[[], Any]] = {
        "resnet50": lambda: _resnet50(nn),
        "mobilenet_v2": lambda: _mobile(nn, _MBV2, 32, nn.ReLU6, se=False, kernel=False),
        "efficientnet_b0": lambda: _mobile(nn, _EFFB0, 32, nn.SiLU, se=True, kernel=True),
        "vit_b_16": lambda: _vit_b_16(nn, torch, input_shape[-1]),
    }
    if key not in builders:
        raise InvalidProblemError(
            f"unknown model {name!r}; choose one of {', '.join(MODELS)}", source="--model"
        )
    _check_image_input(key, input_shape)
    return builders[key]().eval()


def _check_image_input(key: str, shape: tuple[int, ...]) -> None:
    """The zoo's image models take NxCxHxW with 3 channels; ViT a square image of at least
    one 16-pixel patch; the CNNs at least 32x32 (five stride-2 stages)."""
    n, c, h, w = shape
    bad = ""
    if c != 3:
        bad = f"{key} takes 3 input channels, got {c}"
    elif key == "vit_b_16" and (h != w or h < 16):
        bad = f"{key} takes a square image of at least 16x16 pixels, got {h}x{w}"
    elif min(h, w) < 32:
        bad = f"{key} takes images of at least 32x32 pixels, got {h}x{w}"
    if bad:
        raise InvalidProblemError(f"--input {n}x{c}x{h}x{w}: {bad}", source="--input")


EXPORTERS = ("auto", "legacy", "dynamo")


def export_onnx(
    module: Any, input_shape: tuple[int, ...], path: str | Path, exporter: str = "auto"
) -> Path:
    """Export ``module`` on a zero input of ``input_shape`` to ONNX at ``path``.

    ``exporter``: ``legacy`` (TorchScript, opset 17), ``dynamo`` (``torch.onnx.export``'s
    default since PyTorch 2.9; needs onnxscript) or ``auto`` (legacy, then dynamo if that
    fails). A module that no exporter can export at this input is an input error.
    """
    torch = _torch()
    example = getattr(module, "example_inputs", None)
    args = example(input_shape) if example else (torch.zeros(*input_shape),)
    p = Path(path)
    errors = []
    for kind in ("legacy", "dynamo") if exporter == "auto" else (exporter,):
        try:
            with torch.no_grad():
                if kind == "legacy":
                    torch.onnx.export(module, args, str(p), dynamo=False, opset_version=17)
                else:
                    torch.onnx.export(module, args, str(p), dynamo=True, external_data=False)
            return p
        except Exception as exc:  # noqa: BLE001 - the exporters raise anything
            log.info("%s ONNX export failed (%s)", kind, exc)
            errors.append(f"{kind}: {str(exc).splitlines()[0][:300] if str(exc) else exc!r}")
    raise InvalidProblemError(
        f"could not export {type(module).__name__} to ONNX at input {input_shape} "
        f"({'; '.join(errors)})",
        source="--model",
    )


@contextlib.contextmanager
def exported_model(
    model: str | Any, input_shape: tuple[int, ...] = _DEFAULT_INPUT, exporter: str = "auto"
) -> Iterator[Path]:
    """Yield the path of ``model`` (a zoo name or an ``nn.Module``) exported to ONNX.

    The file lives in a private temporary folder that is removed on exit.
    """
    module = build_model(model, input_shape) if isinstance(model, str) else model
    name = model if isinstance(model, str) else type(model).__name__
    tmp = Path(tempfile.mkdtemp(prefix="twill_onnx_"))
    try:
        yield export_onnx(module, input_shape, tmp / f"{name}.onnx", exporter)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
