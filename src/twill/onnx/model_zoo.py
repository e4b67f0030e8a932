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
import sys
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
    "model_key",
    "exported_model",
    "parse_input_shape",
]

log = logging.getLogger(__name__)

MODELS = (
    "resnet50",
    "mobilenet_v2",
    "efficientnet_b0",
    "vit_b_16",
    "swin-tiny",
    "bert-base",
    "gpt2",
    "llama-tiny",
    "t5-small",
)
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


def _swin_block(nn: Any, torch: Any, dim: int, heads: int, res: int, shift: int) -> Any:
    """One Swin block: (shifted) 7x7 window attention with a relative position bias, MLP."""
    w = min(7, res)
    shift = 0 if res <= w else shift

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.table = nn.Parameter(torch.zeros((2 * w - 1) ** 2, heads))
            ys, xs = torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")
            pos = torch.stack([ys.flatten(), xs.flatten()])
            rel = (pos[:, :, None] - pos[:, None, :]).permute(1, 2, 0) + (w - 1)
            self.register_buffer("index", rel[..., 0] * (2 * w - 1) + rel[..., 1])

        def forward(self, x: Any) -> Any:
            b, n, c = x.shape
            h = self.n1(x).view(b, res, res, c)
            if shift:
                h = torch.roll(h, (-shift, -shift), (1, 2))
            h = h.view(b, res // w, w, res // w, w, c).permute(0, 1, 3, 2, 4, 5)
            h = h.reshape(-1, w * w, c)  # (windows, 49, C)
            q, k, v = self.qkv(h).view(h.shape[0], w * w, 3, heads, c // heads).unbind(2)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            att = q @ k.transpose(-2, -1) * (c // heads) ** -0.5
            att = att + self.table[self.index].permute(2, 0, 1).unsqueeze(0)
            h = (torch.softmax(att, -1) @ v).transpose(1, 2).reshape(-1, w * w, c)
            h = self.proj(h).view(b, res // w, res // w, w, w, c).permute(0, 1, 3, 2, 4, 5)
            h = h.reshape(b, res, res, c)
            if shift:
                h = torch.roll(h, (shift, shift), (1, 2))
            x = x + h.reshape(b, n, c)
            return x + self.mlp(self.n2(x))

    return Block()


def _swin_tiny(nn: Any, torch: Any, image: int) -> Any:
    """Swin-T (Liu et al., 2021): patch 4, width 96, depths 2-2-6-2, heads 3-6-12-24, 7x7
    windows shifted by 3 in every second block, patch merging between stages."""

    class Merge(nn.Module):
        def __init__(self, dim: int, res: int) -> None:
            super().__init__()
            self.res, self.norm = res, nn.LayerNorm(4 * dim)
            self.red = nn.Linear(4 * dim, 2 * dim, bias=False)

        def forward(self, x: Any) -> Any:
            b, _, c = x.shape
            x = x.view(b, self.res // 2, 2, self.res // 2, 2, c).permute(0, 1, 3, 4, 2, 5)
            return self.red(self.norm(x.reshape(b, (self.res // 2) ** 2, 4 * c)))

    parts: list[Any] = []
    res, dim = image // 4, 96
    for i, (depth, heads) in enumerate(zip((2, 2, 6, 2), (3, 6, 12, 24), strict=True)):
        parts += [_swin_block(nn, torch, dim, heads, res, 3 * (j % 2)) for j in range(depth)]
        if i < 3:
            parts.append(Merge(dim, res))
            res, dim = res // 2, dim * 2

    class Swin(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed, self.n0 = nn.Conv2d(3, 96, 4, 4), nn.LayerNorm(96)
            self.body, self.norm = nn.Sequential(*parts), nn.LayerNorm(dim)
            self.head = nn.Linear(dim, 1000)

        def forward(self, x: Any) -> Any:
            x = self.body(self.n0(self.embed(x).flatten(2).transpose(1, 2)))
            return self.head(self.norm(x).mean(1))

    return Swin()


def model_key(name: str) -> str:
    """The zoo's spelling of ``name`` (``bert_base`` and ``BERT-base`` are ``bert-base``), or
    ``""`` when it names no zoo model."""
    want = name.lower().replace("_", "-")
    return next((m for m in MODELS if m.replace("_", "-") == want), "")


def build_model(
    name: str,
    input_shape: tuple[int, ...] | None = None,
    *,
    seq: int | None = None,
    phase: str | None = None,
) -> Any:
    """The zoo's ``name`` (:data:`MODELS`) as a ``torch.nn.Module`` in eval mode.

    Image models take ``input_shape`` (NxCxHxW, default 1x3x224x224); text models take
    ``seq`` tokens (default 128) and decoders a ``phase`` (``prefill`` or ``decode``).
    Whatever does not apply to the model is refused (exit 2) before anything is built.
    """
    torch = _torch()
    nn = torch.nn
    key = model_key(name)
    if not key:
        raise InvalidProblemError(
            f"unknown model {name!r}; choose one of {', '.join(MODELS)}", source="--model"
        )
    from twill.onnx.model_zoo_text import TEXT_MODELS, build_text_model

    if key in TEXT_MODELS:
        if input_shape is not None:
            raise InvalidProblemError(
                f"{key} takes token ids: give --seq S (and --phase), not --input", source="--input"
            )
        return build_text_model(key, seq or 128, phase or "prefill")
    if seq is not None or phase is not None:
        raise InvalidProblemError(
            f"{key} is an image model: --seq and --phase apply to "
            f"{', '.join(TEXT_MODELS)}; give --input NxCxHxW",
            source="--seq" if seq is not None else "--phase",
        )
    shape = input_shape or _DEFAULT_INPUT
    _check_image_input(key, shape)
    builders: dict[str, Callable[[], Any]] = {
        "resnet50": lambda: _resnet50(nn),
        "mobilenet_v2": lambda: _mobile(nn, _MBV2, 32, nn.ReLU6, se=False, kernel=False),
        "efficientnet_b0": lambda: _mobile(nn, _EFFB0, 32, nn.SiLU, se=True, kernel=True),
        "vit_b_16": lambda: _vit_b_16(nn, torch, shape[-1]),
        "swin-tiny": lambda: _swin_tiny(nn, torch, shape[-1]),
    }
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
    elif key == "swin-tiny" and (h != w or h % 224):
        bad = f"{key} takes a square image whose side is a multiple of 224, got {h}x{w}"
    elif min(h, w) < 32:
        bad = f"{key} takes images of at least 32x32 pixels, got {h}x{w}"
    if bad:
        raise InvalidProblemError(f"--input {n}x{c}x{h}x{w}: {bad}", source="--input")


EXPORTERS = ("auto", "legacy", "dynamo")


def _weights_outside(path: Path) -> None:
    """Move the weights of a TorchScript export into ``<name>.data`` beside it (the dynamo
    exporter does that itself), so that the graph stays far below the reader's size limit."""
    import onnx

    if path.stat().st_size < 16 * 1024 * 1024:
        return
    model = onnx.load(str(path))
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=f"{path.name}.data", size_threshold=4096)  # fmt: skip


def export_onnx(
    module: Any,
    input_shape: tuple[int, ...],
    path: str | Path,
    exporter: str = "auto",
    *,
    constant_folding: bool = True,
) -> Path:
    """Export ``module`` on a zero input of ``input_shape`` to ONNX at ``path``.

    ``exporter``: ``legacy`` (TorchScript, opset 17), ``dynamo`` (``torch.onnx.export``'s
    default since PyTorch 2.9; needs onnxscript) or ``auto`` (legacy, then dynamo if that
    fails). A module that no exporter can export at this input is an input error.
    ``constant_folding=False`` skips the legacy exporter's constant folding: the layers and
    their edges are the same (every zoo model, both text phases), the export of ResNet-50
    is 25-55 % faster, and the file keeps the free ops folding would remove (BatchNorm,
    weight ``Identity`` and shape ``Unsqueeze``/``Concat``), so ``free_ops`` differs; the
    mapping commands, which report no free ops, export so (issue 51).
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
                    torch.onnx.export(
                        module,
                        args,
                        str(p),
                        dynamo=False,
                        opset_version=17,
                        do_constant_folding=constant_folding,
                    )
                    _weights_outside(p)
                else:  # its progress lines go to stderr: stdout may carry --json
                    with contextlib.redirect_stdout(sys.stderr):
                        torch.onnx.export(module, args, str(p), dynamo=True, external_data=True)
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
    model: str | Any,
    input_shape: tuple[int, ...] | None = None,
    exporter: str = "auto",
    *,
    seq: int | None = None,
    phase: str | None = None,
    constant_folding: bool = True,
) -> Iterator[Path]:
    """Yield the path of ``model`` (a zoo name or an ``nn.Module``) exported to ONNX.

    The file (and its external weight data) lives in a private temporary folder that is
    removed on exit. ``seq`` and ``phase`` as :func:`build_model`, ``constant_folding`` as
    :func:`export_onnx`.
    """
    if isinstance(model, str):
        module = build_model(model, input_shape, seq=seq, phase=phase)
    else:
        module = model
    shape = input_shape or _DEFAULT_INPUT
    name = model_key(model) if isinstance(model, str) else type(model).__name__
    tmp = Path(tempfile.mkdtemp(prefix="twill_onnx_"))
    try:
        yield export_onnx(
            module, shape, tmp / f"{name}.onnx", exporter, constant_folding=constant_folding
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
