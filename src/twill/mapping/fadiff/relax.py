"""Continuous relaxations of the discrete mapping choices (``docs/fadiff.md``).

* **Tiling factors**: one learnable log-factor ``θ`` per (layer, slot, dimension). A slot is an
  on-chip place a factor can go (:func:`slots_for`): every on-chip level's temporal loops and,
  where the level fans out to dimensions the architecture allows, its spatial loops, inner →
  outer. On Gemmini: level-0 temporal (P, Q), level-1 spatial (C), level-1 temporal, level-2
  spatial (K), level-2 temporal (:data:`SLOTS`); a one-word level 0 takes only P and Q
  (weight-register reuse). The DRAM factor is what is left. Candidates are the divisors
  ``d`` of the dimension, with logits ``-α (θ - log d)²`` (log-space distance, so
  large dims such as 3072 are not absurdly peaked). A hard Gumbel-softmax sample picks one
  divisor per slot with a straight-through gradient.
* **Exact factorisation by construction**: slots are sampled inner → outer and a
  slot may only pick divisors of what the inner slots left (and spatial slots only up to the
  remaining fan-out), so the forward pass always sees a perfect factorisation and the DRAM
  factor is an exact integer. No rounding or repair of factors is ever needed.
* **Temperature schedule**: ``τ_t = max(τ_min, τ_0 γ^t)``.
* **Fusion variable**: plain sigmoid ``s = σ(φ)`` per candidate boundary; the
  final plan thresholds at 0.5.
* **Loop order**: three DRAM-level dataflows (DOSA's WS, IS, OS); each step
  evaluates all three and keeps, per layer, the one with the smallest first-order
  contribution to log-EDP (a hard choice, like "try all 3 after each rounding").

Preconditions: torch installed; factors of every dimension known (the layer bounds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from twill.mapping.arch import Arch
from twill.mapping.workload import DIMS, Dim, Layer, divisors

__all__ = [
    "SLOTS",
    "slots_for",
    "onchip_order",
    "DATAFLOWS",
    "FactorSpace",
    "factor_space",
    "sample_factors",
    "temperature",
    "order_tensor",
]

#: Gemmini's (level, kind) of each learnable slot, sampled inner -> outer ("t" temporal, "s"
#: spatial); :func:`slots_for` gives them for any architecture.
SLOTS: tuple[tuple[int, str], ...] = ((0, "t"), (1, "s"), (1, "t"), (2, "s"), (2, "t"))
#: DOSA's DRAM-level dataflows, written inner -> outer.
DATAFLOWS: dict[str, str] = {"WS": "PQNRSCK", "IS": "KRSPQCN", "OS": "RSCKPQN"}
#: Fixed on-chip loop orders, outer -> inner: P/Q innermost at the accumulator level keeps
#: weights stationary in the registers; C innermost at the scratchpad level keeps partial
#: sums in the accumulator.
ONCHIP_ORDERS: dict[int, str] = {0: "RSCKNQP", 1: "KCSRNQP", 2: "NQPKSRC"}
_LEVEL0_DIMS = frozenset({Dim.P, Dim.Q})


def slots_for(arch: Arch) -> tuple[tuple[int, str], ...]:
    """Learnable slots of ``arch``, inner → outer: per on-chip level its spatial slot (when it
    fans out and allows some dimension) then its temporal slot. Gemmini gives :data:`SLOTS`.

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch, simba_arch
    >>> slots_for(gemmini_arch()) == SLOTS
    True
    >>> len(slots_for(simba_arch()))
    8
    """
    out: list[tuple[int, str]] = []
    for m in range(arch.n_levels - 1):
        lv = arch.levels[m]
        if arch.fanout(m) > 1 and (lv.spatial_dims is None or lv.spatial_dims):
            out.append((m, "s"))
        out.append((m, "t"))
    return tuple(out)


def onchip_order(m: int, n_levels: int) -> str:
    """Fixed loop order (outer → inner letters) of on-chip level ``m``: Gemmini's
    :data:`ONCHIP_ORDERS` for its three levels; otherwise level 0 like Gemmini's registers,
    the outermost on-chip level like its scratchpad (C innermost) and the levels between like
    its accumulator (P, Q innermost)."""
    if n_levels == 4:
        return ONCHIP_ORDERS[m]
    if m == 0:
        return ONCHIP_ORDERS[0]
    return ONCHIP_ORDERS[2] if m == n_levels - 2 else ONCHIP_ORDERS[1]


@dataclass(frozen=True)
class FactorSpace:
    """Divisor tables of a batch of layers.

    ``divs`` ``(B, 7, D)`` long (padded with 0), ``logd`` ``(B, 7, D)`` float64, ``valid``
    ``(B, 7, D)`` bool, ``bounds`` ``(B, 7)`` long, ``allowed`` ``(n_slots, 7)`` bool,
    ``fanout`` ``(n_slots,)`` (spatial slots' fan-out, 0 for temporal slots), ``slots`` the
    (level, kind) of each slot (:func:`slots_for`), ``n_levels`` the architecture's levels.
    """

    divs: torch.Tensor
    logd: torch.Tensor
    valid: torch.Tensor
    bounds: torch.Tensor
    allowed: torch.Tensor
    fanout: tuple[int, ...]
    slots: tuple[tuple[int, str], ...] = SLOTS
    n_levels: int = 4


def factor_space(
    layers: list[Layer], arch: Arch, device: str | torch.device = "cpu"
) -> FactorSpace:
    """Divisor tables and slot rules of ``layers`` on ``arch``."""
    tables = [[divisors(ly.dim(d)) for d in DIMS] for ly in layers]
    D = max(len(t) for row in tables for t in row)
    divs = torch.zeros(len(layers), 7, D, dtype=torch.long)
    for b, row in enumerate(tables):
        for j, t in enumerate(row):
            divs[b, j, : len(t)] = torch.tensor(t)
    valid = divs > 0
    logd = torch.log(divs.clamp(min=1).to(torch.float64))
    slots = slots_for(arch)
    allowed = torch.zeros(len(slots), 7, dtype=torch.bool)
    fan = []
    for k, (lvl, kind) in enumerate(slots):
        lv = arch.levels[lvl]
        for j, d in enumerate(DIMS):
            if kind == "s":
                ok = lv.spatial_dims is None or d in lv.spatial_dims
            elif lvl == 0 and lv.entries == 1:
                ok = d in _LEVEL0_DIMS
            else:
                ok = True
            allowed[k, j] = ok
        fan.append(arch.fanout(lvl) if kind == "s" else 0)
    bounds = torch.tensor([list(ly.bounds) for ly in layers], dtype=torch.long)
    return FactorSpace(
        divs.to(device),
        logd.to(device),
        valid.to(device),
        bounds.to(device),
        allowed.to(device),
        tuple(fan),
        slots,
        arch.n_levels,
    )


def temperature(step: int, *, tau0: float, tau_min: float, decay: float) -> float:
    """``max(tau_min, tau0 * decay**step)``."""
    return max(tau_min, tau0 * decay**step)


def sample_factors(
    theta: torch.Tensor,
    space: FactorSpace,
    *,
    alpha: float,
    tau: float,
    generator: torch.Generator | None,
    hard_eval: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sample a perfect factorisation for every row.

    Parameters
    ----------
    theta
        ``(B, n_slots, 7)`` log-factors.
    space
        Divisor tables (:func:`factor_space`).
    alpha
        Sharpness of the divisor logits.
    tau
        Gumbel-softmax temperature.
    generator
        Torch generator for the Gumbel noise (ignored with ``hard_eval``).
    hard_eval
        No noise: the argmax divisor of every slot (evaluation mode).

    Returns
    -------
    temporal, spatial, chosen
        ``(B, L, 7)`` float64 factors with straight-through gradients (every level; the DRAM
        level holds the remainder), and ``(B, n_slots, 7)`` the chosen divisors (long).
    """
    B = theta.shape[0]
    dev = theta.device
    rem = space.bounds.clone()
    L = space.n_levels
    T: list[list[torch.Tensor | None]] = [[None] * 7 for _ in range(L)]
    Sp: list[list[torch.Tensor | None]] = [[None] * 7 for _ in range(L)]
    one = torch.ones(B, dtype=torch.float64, device=dev)
    on_chip = [one] * 7
    chosen = torch.ones(B, len(space.slots), 7, dtype=torch.long, device=dev)
    divf = space.divs.to(torch.float64)
    for k, (lvl, kind) in enumerate(space.slots):
        mask = space.valid & (rem.unsqueeze(-1) % space.divs.clamp(min=1) == 0)
        mask &= space.allowed[k].view(1, 7, 1) | (space.divs == 1)
        if kind == "s":
            budget = torch.full((B,), space.fanout[k], dtype=torch.long, device=dev)
            fac = []
            for j in range(7):  # spatial dims share the fan-out: sample them one by one
                mk = mask[:, j] & (space.divs[:, j] <= budget.unsqueeze(-1))
                f, hard = _pick(
                    theta[:, k, j],
                    space.logd[:, j],
                    divf[:, j],
                    mk,
                    alpha,
                    tau,
                    generator,
                    hard_eval,
                )
                budget = budget // hard
                rem[:, j] = rem[:, j] // hard
                chosen[:, k, j] = hard
                fac.append(f)
            for j in range(7):
                Sp[lvl][j] = fac[j] if Sp[lvl][j] is None else Sp[lvl][j] * fac[j]
                on_chip[j] = on_chip[j] * fac[j]
        else:
            f, hard = _pick(theta[:, k], space.logd, divf, mask, alpha, tau, generator, hard_eval)
            rem = rem // hard
            chosen[:, k] = hard
            for j in range(7):
                T[lvl][j] = f[:, j] if T[lvl][j] is None else T[lvl][j] * f[:, j]
            on_chip = [on_chip[j] * f[:, j] for j in range(7)]
    dram = space.bounds.to(torch.float64) / torch.stack(on_chip, -1)
    temporal = torch.stack(
        [
            torch.stack([T[m][j] if T[m][j] is not None else one for j in range(7)], -1)
            for m in range(L - 1)
        ]
        + [dram],
        dim=1,
    )
    spatial = torch.stack(
        [
            torch.stack([Sp[m][j] if Sp[m][j] is not None else one for j in range(7)], -1)
            for m in range(L - 1)
        ]
        + [torch.ones(B, 7, dtype=torch.float64, device=dev)],
        dim=1,
    )
    return temporal, spatial, chosen


def _pick(
    theta: torch.Tensor,
    logd: torch.Tensor,
    divf: torch.Tensor,
    mask: torch.Tensor,
    alpha: float,
    tau: float,
    generator: torch.Generator | None,
    hard_eval: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Straight-through hard Gumbel-softmax over the masked divisors of the last axis."""
    logits = -alpha * (theta.unsqueeze(-1) - logd) ** 2
    logits = logits.masked_fill(~mask, -math.inf)
    if hard_eval:
        noisy = logits
    else:
        u = torch.rand(logits.shape, generator=generator, dtype=logits.dtype, device=logits.device)
        noisy = logits - torch.log(-torch.log(u.clamp(1e-12, 1 - 1e-12)))
    soft = torch.softmax(noisy / tau, dim=-1)
    idx = noisy.argmax(dim=-1, keepdim=True)
    hard_val = torch.gather(divf, -1, idx).squeeze(-1)
    soft_val = (soft * divf).sum(-1)
    value = hard_val + (soft_val - soft_val.detach())  # exact forward, soft gradient
    return value, hard_val.round().to(torch.long)


def order_tensor(
    B: int, dataflow: str, n_levels: int = 4, device: str | torch.device = "cpu"
) -> torch.Tensor:
    """``(B, L, 7)`` outer → inner dimension indices: fixed on-chip orders, ``dataflow`` at DRAM."""
    idx = {d.value: i for i, d in enumerate(DIMS)}
    rows = [[idx[c] for c in onchip_order(m, n_levels)] for m in range(n_levels - 1)]
    rows.append([idx[c] for c in reversed(DATAFLOWS[dataflow])])
    return torch.tensor(rows, dtype=torch.long, device=device).unsqueeze(0).expand(B, -1, -1)
