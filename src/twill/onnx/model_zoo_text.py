"""Transformer language models of the zoo, written here as plain PyTorch modules from their
published configurations (random weights: mapping needs only shapes; no download):

* ``bert-base``: Devlin et al. (2019), BERT-Base: 12 layers, width 768, 12 heads, FFN 3072,
  word + position + token-type embeddings, post-LayerNorm, GELU (encoder only, no head);
* ``gpt2``: Radford et al. (2019), GPT-2 small: 12 layers, width 768, 12 heads, FFN 3072,
  fused QKV projection, pre-LayerNorm, causal, LM head tied to the 50,257-word embedding;
* ``t5-small``: Raffel et al. (2020), T5-Small: encoder and decoder of 6 layers each, width
  512, 8 heads of 64, ReLU FFN 2048, RMSNorm without bias, relative position buckets (32),
  cross-attention, LM head over 32,128 words; ``seq`` tokens in and ``seq`` decoder tokens
  (teacher forcing, the prefill of both stacks);
* ``llama-tiny``: a small configuration of the Llama architecture (Touvron et al., 2023):
  8 layers, width 512, 8 query heads sharing 2 key/value heads (grouped-query attention),
  rotary position embeddings (RoPE, theta 10,000), RMSNorm, SwiGLU FFN 1,408, vocabulary
  32,000, LM head.

Decoders run in one of the two phases an LLM deployment has (``phase``): ``prefill`` (a
prompt of ``seq`` tokens, causal attention over it) or ``decode`` (one new token attending
to a key/value cache of ``seq`` tokens, given as a graph input, so the attention matmuls are
GEMVs against S + 1 keys). Encoders take ``seq`` tokens. The batch is 1.
"""

from __future__ import annotations

import math
from typing import Any

from twill.errors import InvalidProblemError

__all__ = ["DECODERS", "PHASES", "TEXT_MODELS", "build_text_model"]

TEXT_MODELS = ("bert-base", "gpt2", "llama-tiny", "t5-small")
DECODERS = ("gpt2", "llama-tiny")
PHASES = ("prefill", "decode")
MAX_SEQ = 65_536

_CONFIGS: dict[str, dict[str, Any]] = {
    "bert-base": dict(d=768, layers=12, heads=12, kv=12, ffn=3072, vocab=30522, pos=512,
                      norm="layer", post=True, mlp="gelu", fused=False, rope=False, head=False),
    "gpt2": dict(d=768, layers=12, heads=12, kv=12, ffn=3072, vocab=50257, pos=1024,
                 norm="layer", post=False, mlp="gelu", fused=True, rope=False, head=True),
    "t5-small": dict(d=512, layers=6, heads=8, kv=8, ffn=2048, vocab=32128, pos=0,
                     norm="rms", post=False, mlp="relu", fused=False, rope=False, head=True),
    "llama-tiny": dict(d=512, layers=8, heads=8, kv=2, ffn=1408, vocab=32000, pos=0,
                       norm="rms", post=False, mlp="swiglu", fused=False, rope=True, head=True),
}  # fmt: skip


def _norm(nn: Any, torch: Any, kind: str, d: int) -> Any:
    if kind == "layer":
        return nn.LayerNorm(d)

    class RMSNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x: Any) -> Any:
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

    return RMSNorm()


def _rope(torch: Any, x: Any, start: int) -> Any:
    """Rotary embedding of ``x`` (B, H, S, Dh) for positions start ... start + S - 1."""
    s, dh = x.shape[-2], x.shape[-1]
    inv = 1.0 / (10000.0 ** (torch.arange(0, dh, 2, dtype=torch.float32) / dh))
    ang = torch.arange(start, start + s, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    x1, x2 = x[..., : dh // 2], x[..., dh // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def _buckets(torch: Any, s: int) -> Any:
    """T5's relative position bucket of every (query, key) pair: 16 exact distances, then
    16 logarithmic ones up to 128, both directions (32 buckets)."""
    rel = torch.arange(s)[None, :] - torch.arange(s)[:, None]
    side = (rel > 0).long() * 16
    n = rel.abs()
    far = 8 + (torch.log(n.float().clamp(min=1) / 8) / math.log(16) * 8).long()
    return side + torch.where(n < 8, n, far.clamp(max=15))


def _attention(nn: Any, torch: Any, c: dict[str, Any]) -> Any:
    d, h, kv = c["d"], c["heads"], c["kv"]
    dh = d // h

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if c["fused"]:
                self.qkv = nn.Linear(d, d + 2 * kv * dh)
            else:
                bias = c["norm"] == "layer"
                self.q = nn.Linear(d, d, bias=bias)
                self.k, self.v = nn.Linear(d, kv * dh, bias=bias), nn.Linear(d, kv * dh, bias=bias)
            self.o = nn.Linear(d, d, bias=c["norm"] == "layer")
            self.bias = nn.Embedding(32, h) if c.get("buckets") else None

        def forward(self, x: Any, past: Any, causal: bool, memory: Any = None) -> Any:
            b, s, _ = x.shape
            src = x if memory is None else memory
            if c["fused"]:
                q, k, v = self.qkv(x).split([d, kv * dh, kv * dh], -1)
            else:
                q, k, v = self.q(x), self.k(src), self.v(src)
            q = q.view(b, s, h, dh).transpose(1, 2)
            k, v = (t.view(b, src.shape[1], kv, dh).transpose(1, 2) for t in (k, v))
            start = 0 if past is None else past.shape[-2]
            if c["rope"]:
                q, k = _rope(torch, q, start), _rope(torch, k, start)
            if past is not None:  # the cache: (2, B, kv, S, Dh)
                k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
            if kv != h:  # grouped-query attention: each key/value head serves h // kv heads
                k, v = (t.repeat_interleave(h // kv, dim=1) for t in (k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
            if self.bias is not None and memory is None:  # T5: relative position buckets
                att = att + self.bias(_buckets(torch, s)).permute(2, 0, 1).unsqueeze(0)
            if causal and s > 1:
                mask = torch.ones(s, s, dtype=torch.bool).triu(1)
                att = att.masked_fill(mask, float("-inf"))
            out = torch.softmax(att, -1) @ v
            return self.o(out.transpose(1, 2).reshape(b, s, d))

    return Attention


def _block(nn: Any, torch: Any, c: dict[str, Any]) -> Any:
    attention = _attention(nn, torch, c)
    d, f = c["d"], c["ffn"]

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = attention()
            self.n1, self.n2 = _norm(nn, torch, c["norm"], d), _norm(nn, torch, c["norm"], d)
            bias = c["mlp"] == "gelu"
            self.cross = attention() if c.get("cross") else None
            self.n3 = _norm(nn, torch, c["norm"], d) if c.get("cross") else None
            self.up, self.down = nn.Linear(d, f, bias=bias), nn.Linear(f, d, bias=bias)
            self.gate = nn.Linear(d, f, bias=False) if c["mlp"] == "swiglu" else None

        def mlp(self, x: Any) -> Any:
            if self.gate is not None:
                return self.down(nn.functional.silu(self.gate(x)) * self.up(x))
            if c["mlp"] == "relu":
                return self.down(torch.relu(self.up(x)))
            return self.down(nn.functional.gelu(self.up(x)))

        def forward(self, x: Any, past: Any, causal: bool, memory: Any = None) -> Any:
            if self.cross is not None:  # T5 decoder: self-attention, cross-attention, FFN
                x = x + self.attn(self.n1(x), None, True)
                x = x + self.cross(self.n3(x), None, False, memory)
                return x + self.mlp(self.n2(x))
            if c["post"]:
                x = self.n1(x + self.attn(x, past, causal))
                return self.n2(x + self.mlp(x))
            x = x + self.attn(self.n1(x), past, causal)
            return x + self.mlp(self.n2(x))

    return Block


def build_text_model(name: str, seq: int = 128, phase: str = "prefill", **config: int) -> Any:
    """``name`` (:data:`TEXT_MODELS`) as an ``nn.Module`` in eval mode, with an
    ``example_inputs(shape)`` method giving the export's inputs for ``seq`` and ``phase``.

    ``config`` overrides numbers of the published configuration (``layers``, ``vocab`` ...:
    the tests build small versions of the same architecture)."""
    import torch

    nn = torch.nn
    key = name.lower().replace("_", "-")
    c = {**_CONFIGS[key], **config}
    if not 1 <= seq <= MAX_SEQ or (c["pos"] and seq + (phase == "decode") > c["pos"]):
        most = min(MAX_SEQ, c["pos"] - (phase == "decode")) if c["pos"] else MAX_SEQ
        raise InvalidProblemError(f"--seq {seq}: {name} takes 1 ... {most:,}", source="--seq")
    if phase not in PHASES or (phase == "decode" and key not in DECODERS):
        raise InvalidProblemError(
            f"--phase {phase}: {name} is an encoder; only decoders ({', '.join(DECODERS)}) "
            "have a decode phase",
            source="--phase",
        )
    if key == "t5-small":
        return _t5(nn, torch, c, seq).eval()
    block = _block(nn, torch, c)
    dh = c["d"] // c["heads"]

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(c["vocab"], c["d"])
            self.pos = nn.Embedding(c["pos"], c["d"]) if c["pos"] else None
            self.types = nn.Embedding(2, c["d"]) if key == "bert-base" else None
            self.blocks = nn.ModuleList(block() for _ in range(c["layers"]))
            self.norm = _norm(nn, torch, c["norm"], c["d"]) if not c["post"] else None
            self.head = nn.Linear(c["d"], c["vocab"], bias=False) if c["head"] else None

        def example_inputs(self, _shape: Any) -> tuple[Any, ...]:
            if phase == "prefill":
                return (torch.zeros(1, seq, dtype=torch.long),)
            cache = torch.zeros(c["layers"], 2, 1, c["kv"], seq, dh)
            return torch.zeros(1, 1, dtype=torch.long), cache

        def forward(self, ids: Any, cache: Any = None) -> Any:
            start = 0 if cache is None else cache.shape[-2]
            x = self.embed(ids)
            if self.pos is not None:
                x = x + self.pos(torch.arange(start, start + ids.shape[1]).unsqueeze(0))
            if self.types is not None:
                x = x + self.types(torch.zeros_like(ids))
            for i, blk in enumerate(self.blocks):
                x = blk(x, None if cache is None else cache[i], cache is None)
            x = self.norm(x) if self.norm is not None else x
            return self.head(x) if self.head is not None else x

    return LM().eval()


def _t5(nn: Any, torch: Any, c: dict[str, Any], seq: int) -> Any:
    """T5: the encoder over ``seq`` tokens, the decoder over ``seq`` tokens reading it."""
    enc_block = _block(nn, torch, {**c, "buckets": True})
    dec_block = _block(nn, torch, {**c, "buckets": True, "cross": True})

    class T5(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(c["vocab"], c["d"])
            self.enc = nn.ModuleList(enc_block() for _ in range(c["layers"]))
            self.dec = nn.ModuleList(dec_block() for _ in range(c["layers"]))
            self.n_enc, self.n_dec = (_norm(nn, torch, "rms", c["d"]) for _ in range(2))
            self.head = nn.Linear(c["d"], c["vocab"], bias=False)

        def example_inputs(self, _shape: Any) -> tuple[Any, ...]:
            ids = torch.zeros(1, seq, dtype=torch.long)
            return ids, ids.clone()

        def forward(self, ids: Any, dec_ids: Any) -> Any:
            x = self.embed(ids)
            for blk in self.enc:
                x = blk(x, None, False)
            memory, y = self.n_enc(x), self.embed(dec_ids)
            for blk in self.dec:
                y = blk(y, None, True, memory)
            return self.head(self.n_dec(y) * c["d"] ** -0.5)

    return T5()
