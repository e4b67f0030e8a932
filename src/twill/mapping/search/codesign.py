"""Hardware-mapping co-design of a Gemmini for one network by gradient descent (DOSA's one-loop
search, Hong et al., MICRO 2023, Sec. 4; issue 52, item 4), and the sampling baselines it is
compared with at the same number of model evaluations.

* **Gradient** (:func:`codesign_gradient`): the array side and the two buffer sizes are
  continuous, ``x = lo (hi / lo)^σ(z)`` in each one's range, starting at the default Gemmini
  (16 x 16, 128 kB, 32 kB), and descend jointly with the relaxed mappings of every unique
  layer (FADiff's straight-through Gumbel factors, :mod:`twill.mapping.fadiff.relax`, costed
  by its differentiable twin of the cost model, :mod:`twill.mapping.fadiff.model`, under
  DOSA's three DRAM dataflows, each layer taking its cheapest). The per-access energies are
  :func:`~twill.mapping.arch.gemmini_energies` of the continuous parameters, the scratchpad
  bandwidth scales with the array as in :func:`~twill.mapping.arch.gemmini_arch`, the area
  is :func:`twill.mapping.area.gemmini_area_mm2`. Loss: ``log Σ energy + log Σ cycles``
  (layers weighted by count) plus squared hinges on spatial factors beyond the array, tiles
  beyond either buffer and an area beyond the budget. The hardware moves at a quarter of
  the mappings' step, and spatial factors are sampled up to 1.25 times the relaxed array.
  Every ``readout_every`` steps the argmax mappings are read out on two legal roundings (the
  smallest integer hardware they all fit, as DOSA derives hardware from mappings, and the
  relaxed point rounded and raised until they fit); each layer keeps its best dataflow under
  the exact NumPy model; the lowest-EDP legal point is kept.
* **Random** (:func:`codesign_random`): legal points drawn log-uniformly per parameter
  (integers, within the budget), each with the first ``k`` valid random perfect
  factorisations per layer (:func:`~twill.mapping.search.random.sample_batch`,
  capacity-checked before costing, as Timeloop's random mapper rejects invalid mappings);
  each layer takes its best.
* **Grid** (:func:`codesign_grid`): the same on every legal point of the powers-of-two grid,
  the samples shared out evenly.

Evaluations are counted as mappings costed by a model: a relaxed mapping in one gradient step
(feasible or not), an exact one at a read-out, a valid random draw (the invalid draws the
capacity check rejects are not counted, which favours the baselines). Guarantees: every
returned point is a legal Gemmini within the area budget and every mapping passes
:func:`~twill.mapping.mapping.verify_mapping` on it (checked); no optimality claim
(heuristics). Same seed, same result. Precondition: torch installed (imported on use).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from twill.errors import InvalidProblemError, VerificationError
from twill.mapping.arch import Arch, gemmini_arch, gemmini_energies
from twill.mapping.area import gemmini_area_mm2
from twill.mapping.cost.analytical import MappingBatch, evaluate_batch, valid_batch
from twill.mapping.mapping import Mapping, verify_mapping
from twill.mapping.search.random import sample_batch
from twill.mapping.workload import DIMS, Dim, Layer, Operand

if TYPE_CHECKING:
    import torch

__all__ = [
    "CodesignSettings",
    "CodesignPoint",
    "is_legal",
    "legal_points",
    "codesign_gradient",
    "codesign_random",
    "codesign_grid",
]

_DATAFLOWS = ("WS", "IS", "OS")
_HW = ("pe_dim", "scratchpad_kb", "accumulator_kb")


@dataclass(frozen=True)
class CodesignSettings:
    """Settings of a co-design run.

    Attributes
    ----------
    pe_range, scratchpad_kb_range, accumulator_kb_range
        Legal values: every integer in these ranges (``pe_dim x pe_dim`` arrays, buffer sizes
        in kB); the relaxation spans them in log space.
    pe_dims, scratchpad_kbs, accumulator_kbs
        The grid's values (powers of two).
    area_budget_mm2
        Largest chip area (:func:`twill.mapping.area.gemmini_area_mm2`); ``None``: the area
        of the default Gemmini (16 x 16, 128 kB, 32 kB), 0.637 mm².
    steps, lr, alpha, tau0, tau_min
        Adam steps and step size; divisor-logit sharpness and Gumbel temperatures
        (:mod:`twill.mapping.fadiff.relax`; the temperature reaches ``tau_min`` at 80 % of
        the steps).
    readout_every
        Steps between exact read-outs.
    hardware_lr_scale
        The hardware logits' Adam step, as a share of ``lr`` (buffers that shrink faster than
        the tiles can follow strand the mappings at DRAM).
    spatial_slack
        Spatial factors are sampled up to this multiple of the relaxed array; the read-outs
        stay within it.
    seed
        Gumbel noise and every random draw.
    """

    # the legal hardware
    pe_range: tuple[int, int] = (4, 128)
    scratchpad_kb_range: tuple[int, int] = (8, 1024)
    accumulator_kb_range: tuple[int, int] = (4, 256)
    area_budget_mm2: float | None = None
    # the grid
    pe_dims: tuple[int, ...] = (4, 8, 16, 32, 64, 128)
    scratchpad_kbs: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512, 1024)
    accumulator_kbs: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256)
    # the descent
    steps: int = 300
    lr: float = 0.08
    alpha: float = 2.0
    tau0: float = 1.0
    tau_min: float = 0.1
    # read-outs, the hardware's pace, the spatial slack, the seed
    readout_every: int = 20
    hardware_lr_scale: float = 0.25
    spatial_slack: float = 1.25
    seed: int = 0

    @property
    def budget_mm2(self) -> float:
        b = self.area_budget_mm2
        return float(gemmini_area_mm2(16, 128, 32)) if b is None else b


@dataclass(frozen=True)
class CodesignPoint:
    """A legal Gemmini with one verified mapping per layer and the network's exact cost.

    ``energy_uj`` and ``cycles`` are network totals (layers weighted by count), ``edp`` their
    product (µJ·cycles); ``evaluations`` the model evaluations the method spent.
    """

    method: str
    pe_dim: int
    scratchpad_kb: int
    accumulator_kb: int
    area_mm2: float
    energy_uj: float
    cycles: float
    evaluations: int
    mappings: tuple[Mapping, ...] = field(repr=False)

    @property
    def edp(self) -> float:
        return self.energy_uj * self.cycles

    @property
    def arch(self) -> Arch:
        return gemmini_arch(self.pe_dim, self.scratchpad_kb, self.accumulator_kb)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "pe_dim": self.pe_dim,
                "scratchpad_kB": self.scratchpad_kb, "accumulator_kB": self.accumulator_kb,
                "area_mm2": self.area_mm2, "energy_uJ": self.energy_uj, "cycles": self.cycles,
                "edp": self.edp, "evaluations": self.evaluations}  # fmt: skip


def is_legal(hw: tuple[int, int, int], settings: CodesignSettings) -> bool:
    """Whether ``(pe_dim, scratchpad_kb, accumulator_kb)`` are integers in their ranges, the
    area is within the budget and the accumulator holds a 32-bit word per array column.

    Examples
    --------
    >>> cfg = CodesignSettings()
    >>> is_legal((16, 128, 32), cfg), is_legal((24, 100, 20), cfg), is_legal((128, 1024, 256), cfg)
    (True, True, False)
    """
    ranges = (settings.pe_range, settings.scratchpad_kb_range, settings.accumulator_kb_range)
    p, s, a = hw
    return (
        all(isinstance(v, int) and lo <= v <= hi for v, (lo, hi) in zip(hw, ranges, strict=True))
        and gemmini_area_mm2(p, s, a) <= settings.budget_mm2 * (1 + 1e-12)
        and a * 256 >= p
    )


def legal_points(settings: CodesignSettings) -> list[tuple[int, int, int]]:
    """The grid: every legal point of the grid's values (``pe_dims`` x ``scratchpad_kbs`` x
    ``accumulator_kbs``).

    Examples
    --------
    >>> pts = legal_points(CodesignSettings())
    >>> (16, 128, 32) in pts, (128, 1024, 256) in pts
    (True, False)
    """
    grid = itertools.product(settings.pe_dims, settings.scratchpad_kbs, settings.accumulator_kbs)
    return [hw for hw in grid if is_legal(hw, settings)]


def _random_points(
    settings: CodesignSettings, rng: np.random.Generator
) -> Iterator[tuple[int, int, int]]:
    """Legal points drawn log-uniformly per parameter (integers; rejection on legality)."""
    ranges = (settings.pe_range, settings.scratchpad_kb_range, settings.accumulator_kb_range)
    lo = np.log([r[0] for r in ranges])
    hi = np.log([r[1] + 1 for r in ranges])
    while True:
        hw = tuple(int(v) for v in np.floor(np.exp(rng.uniform(lo, hi))))
        if is_legal(hw, settings):  # type: ignore[arg-type]
            yield hw  # type: ignore[misc]


# ------------------------------------------------------------------------------ exact side
def _network_cost(
    layers: Sequence[Layer], arch: Arch | None, per_layer: Sequence[tuple[float, float]]
) -> tuple[float, float]:
    """Network energy (µJ) and cycles from per-layer ``(energy_uj, cycles)``, by count."""
    e = sum(ly.count * en for ly, (en, _) in zip(layers, per_layer, strict=True))
    c = sum(ly.count * cy for ly, (_, cy) in zip(layers, per_layer, strict=True))
    return e, c


def _best_valid(
    layer: Layer, arch: Arch, batch: MappingBatch
) -> tuple[Mapping, float, float] | None:
    """The lowest-EDP valid mapping of ``batch`` on ``arch`` (its mapping, energy µJ,
    cycles), ``None`` when none is valid."""
    ok = np.flatnonzero(valid_batch(layer, arch, batch))
    if ok.size == 0:
        return None
    cost = evaluate_batch(layer, arch, batch.take(ok))
    b = int(np.argmin(cost.edp))
    return batch.mapping(int(ok[b])), float(cost.energy_uj[b]), float(cost.cycles[b])


def _point(
    method: str,
    layers: Sequence[Layer],
    hw: tuple[int, int, int],
    chosen: Sequence[tuple[Mapping, float, float]],
    evaluations: int,
) -> CodesignPoint:
    """A verified :class:`CodesignPoint` of the per-layer choices on hardware ``hw``."""
    arch = gemmini_arch(*hw)
    for ly, (m, _, _) in zip(layers, chosen, strict=True):
        bad = verify_mapping(ly, arch, m)
        if bad:
            raise VerificationError(f"co-design {method}: {ly.name} on {arch.name}: {bad[0]}")
    e, c = _network_cost(layers, arch, [(en, cy) for _, en, cy in chosen])
    return CodesignPoint(method, *hw, float(gemmini_area_mm2(*hw)), e, c, evaluations,
                         tuple(m for m, _, _ in chosen))  # fmt: skip


def _valid_draws(layer: Layer, arch: Arch, k: int, rng: np.random.Generator) -> MappingBatch | None:
    """The first ``k`` valid random perfect factorisations of ``layer`` on ``arch`` (fewer
    after :data:`MAX_DRAWS` draws; ``None`` when none is valid)."""
    got: list[MappingBatch] = []
    found = drawn = 0
    while found < k and drawn < MAX_DRAWS:
        batch = sample_batch(layer, arch, 4096, rng=rng)
        drawn += 4096
        ok = np.flatnonzero(valid_batch(layer, arch, batch))[: k - found]
        if ok.size:
            got.append(batch.take(ok))
            found += ok.size
    if not got:
        return None
    return MappingBatch(*(np.concatenate([getattr(b, f) for b in got]) for f in
                          ("temporal", "spatial", "order")))  # fmt: skip


#: Random draws per layer and hardware point before the sampling baselines give up on it.
MAX_DRAWS = 65_536


def _sampled(
    method: str,
    layers: Sequence[Layer],
    points: Iterator[tuple[int, int, int]],
    per_layer: int,
    budget: tuple[int, np.random.Generator],
) -> CodesignPoint | None:
    """Best of ``per_layer`` valid random mappings per layer on each of ``points`` until
    ``budget[0]`` mappings are costed (``budget[1]`` draws them)."""
    evaluations, rng = budget
    best: CodesignPoint | None = None
    spent = 0
    while spent + per_layer <= evaluations:
        hw = next(points)
        arch = gemmini_arch(*hw)
        chosen = []
        for ly in layers:
            if spent + per_layer > evaluations:
                break
            batch = _valid_draws(ly, arch, per_layer, rng)
            if batch is None:
                break  # no valid mapping of this layer: the point is out
            spent += len(batch)
            got = _best_valid(ly, arch, batch)
            if got is not None:
                chosen.append(got)
        if len(chosen) == len(layers):
            p = _point(method, layers, hw, chosen, 0)
            if best is None or p.edp < best.edp:
                best = p
    if best is None:
        return None
    return CodesignPoint(**{**best.__dict__, "evaluations": spent})


def codesign_random(
    layers: Sequence[Layer], evaluations: int, settings: CodesignSettings | None = None
) -> CodesignPoint | None:
    """Random hardware points and random mappings, ``evaluations`` mappings in all.

    The budget is split evenly: points with ``k`` mappings per layer each, as many points as
    the budget pays for, ``k ≈ sqrt(evaluations / layers)``. ``None`` when no point got a
    valid mapping for every layer.
    """
    cfg = settings or CodesignSettings()
    _check(layers)
    rng = np.random.default_rng(cfg.seed)
    k = max(1, round(math.sqrt(evaluations / len(layers))))
    return _sampled("random", layers, _random_points(cfg, rng), k, (evaluations, rng))


def codesign_grid(
    layers: Sequence[Layer], evaluations: int, settings: CodesignSettings | None = None
) -> CodesignPoint | None:
    """Every legal point within the budget, ``evaluations`` random mappings shared out evenly
    (at least one per layer and point)."""
    cfg = settings or CodesignSettings()
    _check(layers)
    pts = legal_points(cfg)
    k = max(1, evaluations // (len(pts) * len(layers)))
    budget = (k * len(pts) * len(layers), np.random.default_rng(cfg.seed))
    return _sampled("grid", layers, itertools.cycle(pts), k, budget)


def _check(layers: Sequence[Layer]) -> None:
    if not layers:
        raise InvalidProblemError("co-design: no layers")


# ---------------------------------------------------------------------------- gradient side
@dataclass
class _Relaxed:
    """The relaxed problem: hardware logits ``z`` (3,), log-factors ``theta``, the tables
    FADiff's model needs (built on the largest legal hardware), the hardware ranges ``lo``,
    ``hi``, the layer counts and the area budget."""

    z: Any
    theta: Any
    space: Any
    tab: Any
    orders: Any
    template: Arch
    lo: Any
    hi: Any
    counts: Any
    budget_mm2: float


def _over(u: torch.Tensor, cap: torch.Tensor) -> torch.Tensor:
    """Square of how far ``u`` exceeds ``cap``, in 5 % of ``cap`` (zero within it: a factor
    or a tile exactly at the limit is legal, and the hardware may shrink onto it)."""
    import torch

    return torch.relu((u - cap) / (0.05 * cap)) ** 2


def _relax(layers: Sequence[Layer], cfg: CodesignSettings) -> _Relaxed:
    import torch

    from twill.mapping.fadiff.model import layer_table
    from twill.mapping.fadiff.relax import factor_space, order_tensor

    f64 = torch.float64
    ranges = (cfg.pe_range, cfg.scratchpad_kb_range, cfg.accumulator_kb_range)
    lo = torch.tensor([float(r[0]) for r in ranges], dtype=f64)
    hi = torch.tensor([float(r[1]) for r in ranges], dtype=f64)
    template = gemmini_arch(int(hi[0]), float(hi[1]), float(hi[2]))
    space = factor_space(list(layers), template)
    start = torch.tensor([16.0, 128.0, 32.0], dtype=f64).clamp(lo, hi)  # the default Gemmini
    frac = (torch.log(start / lo) / torch.log(hi / lo)).clamp(0.05, 0.95)
    z = torch.log(frac / (1 - frac)).requires_grad_(True)
    theta = torch.zeros(len(layers), len(space.slots), 7, dtype=f64)
    for k, (_lvl, kind) in enumerate(space.slots):
        if kind == "s":
            theta[:, k, :] = math.log(16.0)
    theta.requires_grad_(True)
    B = len(layers)
    tab = layer_table(list(layers))
    tab3 = type(tab)(
        *(
            x.repeat(3, *([1] * (x.dim() - 1)))
            for x in (tab.bounds, tab.stride, tab.dilation, tab.macs, tab.o_size, tab.groups)
        )
    )
    orders = torch.cat([order_tensor(B, o, template.n_levels) for o in _DATAFLOWS], 0)
    counts = torch.tensor([float(ly.count) for ly in layers], dtype=f64)
    return _Relaxed(z, theta, space, tab3, orders, template, lo, hi, counts, cfg.budget_mm2)


def _hardware(rx: _Relaxed) -> Any:
    """Continuous ``(pe_dim, scratchpad_kb, accumulator_kb)`` from the logits ``z``."""
    import torch

    return rx.lo * (rx.hi / rx.lo) ** torch.sigmoid(rx.z)


def _space(rx: _Relaxed, slack: float) -> Any:
    """The factor space with every spatial slot's fan-out at ``slack`` times the relaxed
    array (rounded up): the samples explore a little beyond the array, and the penalty
    on those beyond it is what grows the array."""
    from dataclasses import replace

    cap = math.ceil(float(_hardware(rx).detach()[0]) * slack - 1e-9)
    return replace(rx.space, fanout=tuple(min(f, cap) if f else 0 for f in rx.space.fanout))


def _loss(rx: _Relaxed, T: torch.Tensor, Sp: torch.Tensor, w: float) -> torch.Tensor:
    """The relaxed network's log-EDP on the relaxed hardware, plus penalties for spatial
    factors beyond the array, tiles beyond a buffer and an area beyond the budget."""
    import torch

    from twill.mapping.fadiff.model import torch_costs

    B = rx.theta.shape[0]
    pe, sp_kb, acc_kb = _hardware(rx)
    T3, Sp3 = T.repeat(3, 1, 1), Sp.repeat(3, 1, 1)
    tc = torch_costs(rx.tab, rx.template, T3, Sp3, rx.orders)
    e = gemmini_energies(pe, sp_kb, acc_kb)  # tensors in, tensors out
    lv = rx.template.levels
    e_lvl = torch.stack([torch.as_tensor(e[x.name], dtype=T.dtype) for x in lv])
    energy = (tc.level_acc * e_lvl).sum(1) + rx.tab.macs * e["MAC"]
    per_inst = tc.level_acc / tc.used
    names = [x.name for x in lv]
    acc_at, sp_at = names.index("Accumulator"), names.index("Scratchpad")
    terms = [tc.compute]
    for m, x in enumerate(lv):
        if x.bandwidth:  # the scratchpad's scales with the columns (Gemmini: 2 words each)
            b = x.bandwidth * pe / rx.hi[0] if m == sp_at else x.bandwidth
            terms.append((tc.level_acc[:, m] if x.bandwidth_shared else per_inst[:, m]) / b)
    cycles = torch.stack(terms, 1).max(1).values
    edp3 = (energy * cycles).detach().view(3, B)
    pick = torch.argmin(edp3, 0) * B + torch.arange(B)  # each layer's cheapest dataflow
    e_net = (energy[pick] * rx.counts).sum()
    c_net = (cycles[pick] * rx.counts).sum()
    tiles = tc.tiles[:B]  # tiles do not depend on the loop order
    W, I, O = 0, 1, 2  # noqa: N806 (the operands)
    pen = (_over(Sp[:, acc_at, Dim.C.index], pe) + _over(Sp[:, sp_at, Dim.K.index], pe)).sum()
    pen = pen + _over(tiles[:, sp_at, W] + tiles[:, sp_at, I], sp_kb * 1024).sum()
    pen = pen + _over(tiles[:, acc_at, O], acc_kb * 256 / pe).sum()
    area = gemmini_area_mm2(pe, sp_kb, acc_kb)
    pen = pen + _over(area, torch.as_tensor(rx.budget_mm2, dtype=area.dtype))
    return torch.log(e_net) + torch.log(c_net) + w * pen


def _readout(
    rx: _Relaxed, layers: Sequence[Layer], cfg: CodesignSettings
) -> tuple[tuple[int, int, int] | None, list[tuple[Mapping, float, float]] | None, int]:
    """Argmax mappings under the three dataflows on two roundings of the hardware (the
    smallest legal point every mapping fits, and the relaxed point rounded to integers and
    raised until they fit), each layer's best exact dataflow; the better legal point, with
    the evaluations spent. ``(None, None, n)`` when neither point is legal or some layer fits
    under no dataflow."""
    import torch

    from twill.mapping.fadiff.relax import sample_factors

    with torch.no_grad():
        T, Sp, _ = sample_factors(rx.theta, _space(rx, 1.0), alpha=cfg.alpha, tau=1.0,
                                  generator=None, hard_eval=True)  # fmt: skip
        pe, sp_kb, acc_kb = (float(v) for v in _hardware(rx).detach())
    Tn, Sn = T.round().long().numpy(), Sp.round().long().numpy()
    B, L = Tn.shape[0], Tn.shape[1]
    orders = rx.orders.numpy().reshape(3, B, L, 7)
    tiles_sp = tiles_acc = 0.0
    for b, ly in enumerate(layers):
        ext = np.cumprod(Tn[b] * Sn[b], axis=0)  # (L, 7) extents of levels 0..m
        d = {dim: int(ext[2][j]) for j, dim in enumerate(DIMS)}
        tiles_sp = max(tiles_sp, ly.footprint(Operand.W, d) + ly.footprint(Operand.I, d))
        d1 = {dim: int(ext[1][j]) for j, dim in enumerate(DIMS)}
        tiles_acc = max(tiles_acc, ly.footprint(Operand.O, d1))
    spatial = int(max(Sn[:, 1, Dim.C.index].max(), Sn[:, 2, Dim.K.index].max()))
    fits = []  # the smallest hardware the read-out fits, then the relaxed one rounded up to it
    for p0, s0, a0 in ((0, 0, 0), (round(pe), round(sp_kb), round(acc_kb))):
        p = max(p0, spatial, cfg.pe_range[0])
        s = max(s0, math.ceil(tiles_sp / 1024), cfg.scratchpad_kb_range[0])
        a = max(a0, math.ceil(tiles_acc * 4 * p / 1024), cfg.accumulator_kb_range[0])
        if is_legal((p, s, a), cfg) and (p, s, a) not in fits:
            fits.append((p, s, a))
    best: tuple[tuple[int, int, int] | None, list[tuple[Mapping, float, float]] | None] = (
        None, None)  # fmt: skip
    spent = 0
    for hw in fits:
        arch = gemmini_arch(*hw)
        chosen = []
        for b, ly in enumerate(layers):
            batch = MappingBatch(np.repeat(Tn[b : b + 1], 3, 0), np.repeat(Sn[b : b + 1], 3, 0),
                                 orders[:, b].copy())  # fmt: skip
            spent += 3
            got = _best_valid(ly, arch, batch)
            if got is None:
                break
            chosen.append(got)
        if len(chosen) == len(layers):
            e, c = _network_cost(layers, arch, [(en, cy) for _, en, cy in chosen])
            if best[1] is None or e * c < _network_edp(layers, best[1]):
                best = (hw, chosen)
    return best[0], best[1], spent


def _network_edp(layers: Sequence[Layer], chosen: Sequence[tuple[Mapping, float, float]]) -> float:
    e, c = _network_cost(layers, None, [(en, cy) for _, en, cy in chosen])
    return e * c


def codesign_gradient(
    layers: Sequence[Layer], settings: CodesignSettings | None = None
) -> CodesignPoint | None:
    """Descend the hardware and the mappings of ``layers`` jointly (module docstring).

    Parameters
    ----------
    layers
        The network's unique layers (``count`` weights the totals).
    settings
        :class:`CodesignSettings`.

    Returns
    -------
    CodesignPoint or None
        The lowest-EDP verified read-out within the area budget (``None``: no read-out was
        legal), with the model evaluations spent: ``3 x layers`` per step (one relaxed
        mapping per layer and dataflow) plus ``3 x layers`` per read-out.
    """
    import torch

    from twill.mapping.fadiff.relax import sample_factors, temperature

    cfg = settings or CodesignSettings()
    _check(layers)
    rx = _relax(layers, cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = torch.optim.Adam(
        [{"params": [rx.theta]}, {"params": [rx.z], "lr": cfg.lr * cfg.hardware_lr_scale}],
        lr=cfg.lr,
    )
    decay = (cfg.tau_min / cfg.tau0) ** (1 / max(1, int(0.8 * cfg.steps)))
    best: CodesignPoint | None = None
    spent, w = 0, 1.0
    for step in range(cfg.steps + 1):
        if step % cfg.readout_every == 0 or step == cfg.steps:
            hw, chosen, n = _readout(rx, layers, cfg)
            spent += n
            if hw is None or chosen is None:
                w = min(w * 3, 1e3)
            else:
                p = _point("gradient", layers, hw, chosen, 0)
                if best is None or p.edp < best.edp:
                    best = p
        if step == cfg.steps:
            break
        tau = temperature(step, tau0=cfg.tau0, tau_min=cfg.tau_min, decay=decay)
        space = _space(rx, cfg.spatial_slack)
        T, Sp, _ = sample_factors(rx.theta, space, alpha=cfg.alpha, tau=tau, generator=gen)
        loss = _loss(rx, T, Sp, w)
        opt.zero_grad()
        loss.backward()
        opt.step()
        spent += 3 * len(layers)
    if best is None:
        return None
    return CodesignPoint(**{**best.__dict__, "evaluations": spent})
