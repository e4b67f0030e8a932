"""ONNX files exported here from tiny PyTorch modules, one per failure class of issue 42:
an Add/Mul of two activations that no compute layer produced (the embedding sum of BERT and
GPT-2, T5's RMSNorm: was an IndexError, exit 70), a residual around a reshape (ConvNeXt: the
re-typed edge made ``fuse`` refuse the import), ops without MACs (masks, NaN guards, index
arithmetic: were refused), shapes computed in the graph (a same-padding ``Pad``: were
unknown), and a two-block transformer through both PyTorch exporters."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
nn = torch.nn

from twill.mapping.workload import Dim  # noqa: E402
from twill.onnx.model import read_onnx  # noqa: E402
from twill.onnx.model_zoo import export_onnx  # noqa: E402


def _export(tmp_path, module, x, exporter="legacy", name="m"):
    path = tmp_path / f"{name}.onnx"
    module.example_inputs = lambda _shape: (x,)
    return export_onnx(module.eval(), tuple(x.shape), path, exporter)


class _EmbeddingSum(nn.Module):
    """Word + position embeddings summed (two gathers, no compute layer), then a Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.word, self.pos, self.fc = nn.Embedding(100, 32), nn.Embedding(16, 32), nn.Linear(32, 8)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.fc(self.word(ids) + self.pos(pos))


class _RMSNorm(nn.Module):
    """T5's RMSNorm on the graph input: x * rsqrt(mean(x^2)) * g (a Mul of two paths)."""

    def __init__(self) -> None:
        super().__init__()
        self.g, self.fc = nn.Parameter(torch.ones(32)), nn.Linear(32, 32)

    def forward(self, x):
        return self.fc(self.g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)))


def test_join_of_two_non_layer_activations(tmp_path):
    ids = torch.zeros(1, 16, dtype=torch.long)
    imp = read_onnx(_export(tmp_path, _EmbeddingSum(), ids, name="emb"))
    (fc,) = imp.layers
    assert (fc.dim(Dim.P), fc.dim(Dim.C), fc.dim(Dim.K)) == (16, 32, 8)
    assert imp.free_ops.get("Gather", 0) >= 2  # the embedding lookups are free glue
    imp = read_onnx(_export(tmp_path, _RMSNorm(), torch.zeros(1, 8, 32), name="rms"))
    assert [ly.total_macs for ly in imp.layers] == [8 * 32 * 32]


class _ConvNeXtish(nn.Module):
    """Two ConvNeXt blocks: depthwise 7x7 (NCHW), then LayerNorm and two Linears in NHWC, and
    the residual add around them (its shapes differ between a Conv and a MatMul layer)."""

    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, c, 4, 4)
        self.dw = nn.ModuleList(nn.Conv2d(c, c, 7, padding=3, groups=c) for _ in range(2))
        self.ln = nn.ModuleList(nn.LayerNorm(c) for _ in range(2))
        self.up = nn.ModuleList(nn.Linear(c, 4 * c) for _ in range(2))
        self.down = nn.ModuleList(nn.Linear(4 * c, c) for _ in range(2))

    def forward(self, x):
        x = self.stem(x)
        for dw, ln, up, down in zip(self.dw, self.ln, self.up, self.down, strict=True):
            h = dw(x).permute(0, 2, 3, 1)
            x = x + down(nn.functional.gelu(up(ln(h)))).permute(0, 3, 1, 2)
        return x


def test_convnext_residual_keeps_the_chain_a_candidate(tmp_path):
    net = read_onnx(_export(tmp_path, _ConvNeXtish(), torch.zeros(1, 3, 32, 32))).network
    assert net.check() == []  # was: "consumer has 2 producers" from the re-typed residual
    kinds = {(net.layers[e.src].name[:3], net.layers[e.dst].name[:3]): e.kind for e in net.edges}
    assert kinds[("002", "003")] == "chain"  # up -> down stays a fusion candidate
    assert "epilogue" in kinds.values()  # the shape-mismatched residual: no data read


class _Guards(nn.Module):
    """Mask, NaN-guard and index arithmetic between two Linears: GatherElements, IsNaN, And,
    Not, Ceil, Mod, Less, Greater, GreaterOrEqual, Log, Where (all free)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        h = self.a(x)
        idx = torch.remainder(torch.ceil(h.abs()).long(), 8)
        g = torch.gather(h, -1, idx)
        ok = (~torch.isnan(g)) & (g > -1e9) & (g >= -1e9) & (g < 1e9)
        h = torch.where(ok, g, torch.zeros_like(g)) + torch.log(h.abs() + 1)
        return self.b(h)


def test_ops_without_macs_are_free(tmp_path):
    imp = read_onnx(_export(tmp_path, _Guards(), torch.zeros(1, 4, 8)))
    assert len(imp.layers) == 2
    want = "GatherElements IsNaN And Not Ceil Mod Less Greater GreaterOrEqual Log Where"
    assert set(want.split()) <= set(imp.free_ops)


class _SamePad(nn.Module):
    """TensorFlow-style same padding computed from the input's shape (EfficientNet ports)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.fc = nn.Conv2d(3, 8, 3, 2), nn.Conv2d(8, 8, 1)

    def forward(self, x):
        h, w = x.shape[-2:]  # traced: the pads are computed in the graph from Shape
        ph = ((h + 1) // 2 - 1) * 2 + 3 - h
        pw = ((w + 1) // 2 - 1) * 2 + 3 - w
        x = nn.functional.pad(x, [pw // 2, pw - pw // 2, ph // 2, ph - ph // 2])
        return self.fc(self.conv(x))


def test_shapes_computed_in_the_graph_are_evaluated(tmp_path):
    import onnx

    path = _export(tmp_path, _SamePad(), torch.zeros(1, 3, 17, 17))
    inferred = onnx.shape_inference.infer_shapes(onnx.load(str(path)), data_prop=True)
    known = {
        v.name for v in inferred.graph.value_info if v.type.tensor_type.shape.dim[-1].dim_value
    }
    assert not any(n.startswith("/conv") for n in known)  # onnx alone leaves them unknown
    imp = read_onnx(path)
    assert "constant folding with onnx.reference" in imp.notes[0]
    conv, fc = imp.layers
    assert (conv.dim(Dim.P), conv.dim(Dim.Q), fc.dim(Dim.P)) == (9, 9, 9)
    assert imp.network.edges[0].kind == "chain"


class _Block(nn.Module):
    """A pre-norm transformer block: fused QKV, scaled-dot-product attention, GELU MLP."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.h, d // self.h).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x))))


@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
def test_two_block_transformer_both_exporters(tmp_path, exporter):
    pytest.importorskip("onnxscript") if exporter == "dynamo" else None
    model = nn.Sequential(_Block(), _Block())
    imp = read_onnx(_export(tmp_path, model, torch.zeros(1, 16, 32), exporter))
    shapes = [(ly.dim(Dim.P), ly.dim(Dim.C), ly.dim(Dim.K), ly.groups) for ly in imp.layers]
    block = [(16, 32, 96, 1), (16, 8, 16, 4), (16, 16, 8, 4), (16, 32, 32, 1)]
    block += [(16, 32, 128, 1), (16, 128, 32, 1)]
    assert shapes == block * 2  # QKV, Q.K^T and P.V per head (G = 4 heads), out, MLP
    per_block = 16 * 32 * 96 + 2 * 4 * 16 * 16 * 8 + 16 * 32 * 32 + 2 * 16 * 32 * 128
    assert imp.network.macs == 2 * per_block
    assert imp.network.check() == []


def test_external_data(tmp_path):
    import onnx

    path = _export(tmp_path, _SamePad(), torch.zeros(1, 3, 17, 17))
    model = onnx.load(str(path))
    moved = tmp_path / "ext" / "m.onnx"
    moved.parent.mkdir()
    onnx.save_model(model, str(moved), save_as_external_data=True, size_threshold=0,
                    location="m.data")  # fmt: skip
    assert (tmp_path / "ext" / "m.data").stat().st_size > 0
    imp = read_onnx(moved)
    assert [ly.key for ly in imp.layers] == [ly.key for ly in read_onnx(path).layers]


def test_llama_tiny_decode_attention_is_grouped_by_heads(tmp_path):
    """Decode: one token against a KV cache of S: the attention matmuls are GEMVs over
    S + 1 keys, one group per query head (grouped-query attention repeats the 2 KV heads)."""
    from twill.onnx.model_zoo_text import build_text_model

    module = build_text_model("llama-tiny", 8, "decode", layers=2, vocab=64)  # 2 of 8 layers
    imp = read_onnx(export_onnx(module, (1,), tmp_path / "llama.onnx", "legacy"))
    att = [ly for ly in imp.layers if ly.groups > 1]
    assert {(ly.dim(Dim.P), ly.dim(Dim.C), ly.dim(Dim.K), ly.groups) for ly in att} == {
        (1, 64, 9, 8),  # q . K^T: 8 heads, 64 deep, S + 1 keys
        (1, 9, 64, 8),  # softmax . V
    }
    proj = [ly for ly in imp.layers if ly.groups == 1]
    assert {(ly.dim(Dim.C), ly.dim(Dim.K)) for ly in proj} >= {(512, 128), (512, 1408), (1408, 512)}
    assert all(ly.dim(Dim.P) == 1 for ly in imp.layers)
    assert len(imp.layers) == 2 * 9 + 1  # q k v, 2 attention, o, gate up down; LM head


def test_zoo_options_refused_where_they_do_not_apply(capsys):
    from twill.cli import main

    cases = [
        (["--model", "gpt2", "--input", "1x3x224x224"], "not --input"),
        (["--model", "resnet50", "--seq", "5"], "image model"),
        (["--model", "bert-base", "--phase", "decode"], "encoder"),
        (["--model", "swin-tiny", "--input", "1x3x200x200"], "multiple of 224"),
    ]
    for argv, why in cases:
        assert main(["import-onnx", *argv, "-o", "unused"]) == 2
        assert why in capsys.readouterr().err


class _CachedDecoder(nn.Module):
    """Two pre-norm blocks decoding one token, the KV cache passed as ``past_key_values``
    (one key and one value tensor per block, ``(1, heads, S, d / heads)``, as Hugging Face
    exports it) and the grown cache returned as ``present``."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(_Block(d, heads) for _ in range(2))

    def forward(self, x, k0, v0, k1, v1):
        present = []
        for blk, (pk, pv) in zip(self.blocks, ((k0, v0), (k1, v1)), strict=True):
            b, s, d = x.shape
            q, k, v = blk.qkv(blk.ln1(x)).view(b, s, 3, blk.h, d // blk.h).unbind(2)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            k, v = torch.cat([pk, k], 2), torch.cat([pv, v], 2)
            a = nn.functional.scaled_dot_product_attention(q, k, v)
            x = x + blk.o(a.transpose(1, 2).reshape(b, s, d))
            x = x + blk.down(nn.functional.gelu(blk.up(blk.ln2(x))))
            present += [k, v]
        return x, *present


@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
def test_decode_from_past_key_values_inputs(tmp_path, exporter):
    """A decoder exported with its KV cache as inputs (``past_key_values``) imports as the
    decode phase: the attention matmuls run against the cache of S = 24 keys plus the new one,
    per head, and the MACs equal a count by hand."""
    pytest.importorskip("onnxscript") if exporter == "dynamo" else None
    S = 24
    cache = [torch.zeros(1, 4, S, 8) for _ in range(4)]
    module = _CachedDecoder().eval()
    module.example_inputs = lambda _shape: (torch.zeros(1, 1, 32), *cache)
    imp = read_onnx(export_onnx(module, (1, 1, 32), tmp_path / "kv.onnx", exporter))
    att = [(ly.dim(Dim.P), ly.dim(Dim.C), ly.dim(Dim.K), ly.groups) for ly in imp.layers
           if ly.groups > 1]  # fmt: skip
    assert att == [(1, 8, S + 1, 4), (1, S + 1, 8, 4)] * 2  # q.K^T and P.V over S + 1 keys
    per_block = 32 * 96 + 2 * 4 * (S + 1) * 8 + 32 * 32 + 2 * 32 * 128
    assert imp.network.macs == 2 * per_block
    assert all(ly.dim(Dim.P) == 1 for ly in imp.layers)  # one token: GEMVs
