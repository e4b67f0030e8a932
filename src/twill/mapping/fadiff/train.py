"""FADiff optimiser: joint per-layer mapping and layer fusion by gradient descent
(``docs/fadiff.md``; DOSA-style one-loop search with a fusion variable per boundary).

Loss: ``log(Σ cycles) + log(Σ energy)`` of the relaxed network (hard straight-through
factors, soft fusion values) plus penalties: per-layer capacity (scratchpad, accumulator) and
fused working sets as ``softplus((U - 0.95 Cap) / (0.05 Cap))²``; partial-sum and block
mismatch penalties for boundaries being fused. Adam on the log-factors and fusion logits.

The answer is always discrete and exact: every ``eval_every`` steps the argmax mapping is
read out, each layer gets the best of the three DRAM dataflows under the NumPy model, the
fusion plan is thresholded at 0.5, repaired until :func:`~twill.mapping.fadiff.fusion.verify_plan`
accepts it; the plan is re-evaluated by the exact NumPy cost model. The best verified plan
seen is compared with every plan passed in ``candidates`` (and their greedy fusion), then the
depth-first group search (:mod:`twill.mapping.fadiff.groups`) runs on the best mappings; the
best verified plan overall is returned (the "never worse than layer-wise" guarantee holds for
every plan passed in ``candidates``).

Guarantees: the returned plan verifies (checked before return); the objective is heuristic,
with no optimality claim. Failure: an invalid network or architecture raises
:class:`~twill.errors.InvalidProblemError`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from twill.deadline import NO_DEADLINE, Deadline
from twill.errors import InvalidProblemError, VerificationError
from twill.mapping.arch import Arch, MemoryLevel
from twill.mapping.cost.analytical import MappingBatch, evaluate_batch
from twill.mapping.fadiff.fusion import (
    FusionPlan,
    PlanReport,
    check_gemmini,
    evaluate_plan,
    verify_plan,
)
from twill.mapping.fadiff.heuristics import greedy_fusion, repair_plan
from twill.mapping.fadiff.plan import NetworkPlan
from twill.mapping.mapping import Mapping
from twill.mapping.network import Network
from twill.mapping.problems import NetworkMappingProblem
from twill.mapping.result import Controls, finished, method_settings
from twill.mapping.workload import DIMS, OPERANDS, Layer
from twill.options import MethodSettings, SolverOptions
from twill.registry import register_solver
from twill.results import SolveResult, Status, Timings
from twill.validation import check_instance

if TYPE_CHECKING:  # torch is imported lazily: `import twill.mapping.fadiff` must stay cheap
    import torch

    from twill.mapping.fadiff.model import LayerTable

__all__ = [
    "FADiffSettings",
    "solve",
    "all_dram_mapping",
    "discrete_only",
]

log = logging.getLogger(__name__)
_ORDERS = ("WS", "IS", "OS")
#: relative EDP improvement below which a read-out counts as "no progress" (plateau stop)
_PLATEAU_TOL = 1e-3
#: share of the time to a deadline that the gradient loop may use (the discrete phase the rest)
_GRADIENT_SHARE = 0.4


def _finite(value: object) -> object:
    """``value`` with a non-finite float replaced by ``None`` (strict JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def all_dram_mapping(layer: Layer, arch: Arch) -> Mapping:
    """The trivially valid mapping: every loop at DRAM (tiles of one element)."""
    L = arch.n_levels
    temporal = [{} for _ in range(L - 1)] + [{d: layer.dim(d) for d in DIMS}]
    return Mapping.from_levels(temporal)


@dataclass(frozen=True)
class FADiffSettings(MethodSettings, slot="fadiff"):
    """The settings of one :func:`solve` run (defaults: the values the benchmarks use).

    Attributes
    ----------
    fusion
        Optimise fusion variables (FADiff); ``False`` is the DOSA-like layer-wise method.
    steps
        Adam steps. 400 reaches a stable EDP on the four DOSA networks in well under a minute
        on 2 CPU cores; DOSA's 7 × 1490 is far beyond our time budget.
    lr
        Adam step on log-factors. Divisors are ~0.3-0.7 apart in log space, so 0.08 moves a
        factor by one divisor in a handful of steps (the prototype's 0.01 is tuned for 2 300+
        steps; DOSA's 1e-5 acts on raw factors).
    alpha
        Sharpness of the divisor logits ``-α (θ - log d)²``. 2 keeps the two nearest divisors
        both likely at τ = 1, so the Gumbel samples explore neighbours.
    tau0, tau_min
        Temperature schedule (1.0 → floor 0.1, as the author's prototype). The decay is set
        so the floor is reached at 80 % of the steps (the prototype's 0.999 per step assumes
        ~2 300 steps).
    fusion_init
        Initial fusion logit: σ(0.7) ≈ 0.67, the prototype's start.
    w_cap, w_fuse
        Initial penalty weights (start at 1 and multiply ``w_cap`` by 10, up to
        1e3, whenever the read-out mapping breaks a capacity).
    eval_every
        Steps between exact read-outs (NumPy evaluation, repair, greedy completion).
    warmup_fraction
        Share of the steps run with fusion frozen at 0 (fusion off) before the fusion values
        are trained: mappings first become good layer-wise, then fusion reshapes them.
    seed
        Seeds the Gumbel noise (one torch generator); same seed, same result.
    device
        ``"cpu"`` (default) or ``"cuda"`` (only when available).
    group_len
        Longest depth-first group of the discrete group search
        (:func:`twill.mapping.fadiff.groups.group_search`) run after the gradient phase on the
        best mappings found (fusion only; ``<= 1`` disables it). 8 covers two ResNet
        bottlenecks; longer runs never fit the 128 KB scratchpad and cost search time.
    group_seeds
        How many of the polished layer-wise mapping sets (each distinct candidate's and the
        gradient's best, lowest unfused EDP first) seed the group search. With three, every
        start of the gradient-off ablation (:func:`discrete_only`) on the same candidates is
        among them, so FADiff is never worse than that ablation.
    polish
        Discrete read-out polish (:mod:`twill.mapping.fadiff.polish`): the best unfused
        mappings found (read-outs and ``candidates``) are improved by a local search on the
        exact model before they are returned (``fusion=False``) or seed the group search.
        Rounded gradient mappings keep e.g. CoSA's partial-sum splits; the polish removes
        them in about a second per network. ``False`` gives the pure gradient read-out.
    joint_rounding
        Round fused neighbours jointly at every read-out
        (:func:`twill.mapping.fadiff.groups.align_blocks`): each fused group of the read-out
        gets one shared block count and the group search's block re-mapping, so the
        gradient's fusion decisions survive the verifier. ``False`` rounds every layer on its
        own (neighbours then almost never agree on block counts and the repair unfuses them).
    patience
        Plateau stop: end the gradient phase once ``patience`` read-outs in a row (after the
        fusion warm-up) improved the best verified EDP by less than 0.1 %. From a CoSA start
        the best read-out on the four networks is the first one (the descent only moves
        away from it), so the remaining steps cost time for nothing. ``None`` runs all
        ``steps``.

    method
        Name stored in the plan (default ``"fadiff"`` or ``"layerwise-gradient"``).
    """

    fusion: bool = True
    steps: int = 400
    lr: float = 0.08
    alpha: float = 2.0
    tau0: float = 1.0
    tau_min: float = 0.1
    fusion_init: float = 0.7
    w_cap: float = 1.0
    w_fuse: float = 1.0
    eval_every: int = 20
    warmup_fraction: float = 0.4
    seed: int = 0
    device: str = "cpu"
    group_len: int = 8
    group_seeds: int = 3
    polish: bool = True
    joint_rounding: bool = True
    patience: int | None = 5
    method: str | None = None

    def check(self) -> list[str]:
        """Every defect of these settings (empty = usable)."""
        bad = []
        if (
            self.steps < 1
            or self.lr <= 0
            or self.tau_min <= 0
            or self.tau0 < self.tau_min
            or self.eval_every < 1
        ):
            bad.append("settings: need steps >= 1, lr > 0, 0 < tau_min <= tau0, eval_every >= 1")
        if self.patience is not None and self.patience < 1:
            bad.append("settings: patience must be >= 1 or None")
        dev = str(self.device)
        if dev not in ("cpu", "cuda") and not dev.startswith("cuda:"):
            bad.append(f"device: expected 'cpu' or 'cuda', got {self.device!r}")
        return bad


@register_solver("fadiff", problems=(NetworkMappingProblem,), settings=FADiffSettings, default=True)
def solve(problem: NetworkMappingProblem, options: SolverOptions | None = None) -> SolveResult:
    """FADiff on ``problem``: every layer's mapping and (with ``problem.fusion``) which
    boundaries to fuse, by gradient descent, then the discrete phase (module docstring).

    Parameters
    ----------
    problem
        The network, the (Gemmini-like) accelerator, fusion on or off (off: the DOSA-like
        layer-wise method), a start plan and the candidates the answer must not be worse than.
    options
        ``time_limit`` bounds the whole call (a deadline: the gradient loop ends at 40 % of
        it and the discrete phase starts no polish or group search after it; the best verified plan
        so far is returned); ``seed`` seeds the Gumbel noise, ``threads`` sets torch's
        intra-op threads; ``fadiff`` holds a :class:`FADiffSettings` (its ``fusion`` and
        ``seed`` are the problem's and the options'); ``on_progress`` receives a
        ``"gradient"`` :class:`~twill.progress.ProgressEvent` per step and a last ``"done"``.

    Returns
    -------
    SolveResult
        FEASIBLE with a :class:`~twill.mapping.fadiff.plan.NetworkPlan` (heuristic, never
        OPTIMAL); the objective is the plan's exact EDP (µJ·cycles).

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> from twill.mapping.network import chain_network
    >>> net = chain_network([Layer("a", {"P": 8, "C": 16, "K": 16}),
    ...                      Layer("b", {"P": 8, "C": 16, "K": 16})])
    >>> p = NetworkMappingProblem(net, gemmini_arch())
    >>> r = solve(p, SolverOptions(fadiff=FADiffSettings(steps=10, eval_every=5)))
    >>> r.status.value, p.verify(r.solution).ok
    ('feasible', True)
    """
    check_instance(problem, "problem", NetworkMappingProblem)
    options = SolverOptions.of(options)
    cfg = method_settings(options, "fadiff", FADiffSettings)
    cfg = replace(cfg, fusion=problem.fusion, seed=options.seed)
    method = cfg.method or ("fadiff" if problem.fusion else "layerwise-gradient")
    controls = Controls.of(options, method)
    problem.check()
    with _torch_threads(options.threads):
        res = _fadiff(problem.network, problem.arch, cfg, problem.init, problem.candidates,
                      _gradient_events(controls, cfg.steps), controls.deadline)  # fmt: skip
    return finished(controls, res)


@contextmanager
def _torch_threads(threads: int) -> Iterator[None]:
    """Torch's intra-op threads set to ``threads`` for the block, restored after it. The
    tensors are tiny (a few hundred rows): more threads only add synchronisation, which on a
    loaded 2-core machine costs milliseconds per kernel, so the default is one."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _gradient_events(
    controls: Controls, steps: int
) -> Callable[[int, dict[str, float]], None] | None:
    """A ``"gradient"`` :class:`~twill.progress.ProgressEvent` per step (the best verified
    EDP so far as incumbent), through ``controls``; ``None`` without a callback."""
    if controls.on_progress is None:
        return None

    def on_step(step: int, record: dict[str, float]) -> None:
        best = _finite(record["best_edp"])
        controls.emit("gradient", step=step + 1, total=steps, incumbent=best,
                      message=f"loss {record['loss']:.6g}")  # fmt: skip

    return on_step


def _fadiff(
    net: Network,
    arch: Arch,
    cfg: FADiffSettings,
    init: FusionPlan | None,
    candidates: Sequence[FusionPlan],
    on_step: Callable[[int, dict[str, float]], None] | None,
    deadline: Deadline = NO_DEADLINE,
) -> SolveResult:
    """The run behind :func:`solve`; the gradient loop ends at its share of ``deadline`` and
    the discrete phase starts nothing after the deadline."""
    import torch

    from twill.mapping.fadiff.relax import factor_space, sample_factors, temperature

    t0 = time.perf_counter()
    _check_inputs(net, arch, cfg)
    method = cfg.method or ("fadiff" if cfg.fusion else "layerwise-gradient")
    w_cap, w_fuse = cfg.w_cap, cfg.w_fuse  # w_cap grows when read-outs break a capacity
    gen = torch.Generator(device=cfg.device)
    gen.manual_seed(int(cfg.seed))
    layers = list(net.layers)
    B = len(layers)
    space = factor_space(layers, arch, cfg.device)
    theta0 = _initial_theta(init, arch, space.slots, B)
    theta = theta0.clone().to(cfg.device).requires_grad_(True)
    rx, phi = _relaxation(net, arch, cfg)
    E = len(rx.cands)
    params = [theta] + ([phi] if E else [])
    opt = torch.optim.Adam(params, lr=cfg.lr)
    decay = (cfg.tau_min / cfg.tau0) ** (1.0 / max(1.0, 0.8 * cfg.steps))
    warm = int(round(cfg.warmup_fraction * cfg.steps)) if cfg.fusion else cfg.steps
    fallback = FusionPlan(
        net.name,
        tuple(init.mappings if init else (all_dram_mapping(ly, arch) for ly in layers)),
        (),
        method,
    )
    # the gradient's share of the time; the discrete phase (most fusion gains) keeps the rest
    best = _ReadOuts(net, arch, stop=deadline.child(fraction=_GRADIENT_SHARE).perf_stop())
    history: list[dict[str, float]] = []
    ref = None
    plateau_from = warm if E > 0 else 0  # fusion runs get their fusion phase first
    n_iter = cfg.steps
    for step in range(cfg.steps):
        tau = temperature(step, tau0=cfg.tau0, tau_min=cfg.tau_min, decay=decay)
        T, Sp, _ = sample_factors(theta, space, alpha=cfg.alpha, tau=tau, generator=gen)
        fuse_on = E > 0 and step >= warm
        s = (
            torch.sigmoid(phi)
            if fuse_on
            else torch.zeros(E, dtype=torch.float64, device=cfg.device)
        )
        out = _relaxed_network(rx, T, Sp, s, ref, fuse_on)
        loss = out["log_edp"] + w_cap * out["pen_cap"] + w_fuse * out["pen_fuse"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        ref = (out["energy"].detach(), out["cycles"].detach())
        rec = {"loss": float(loss.detach()), "edp": float(out["edp"].detach()), "tau": tau}
        if step % cfg.eval_every == 0 or step == cfg.steps - 1:
            with torch.no_grad():
                Th, Sph, _ = sample_factors(
                    theta, space, alpha=cfg.alpha, tau=tau, generator=None, hard_eval=True
                )
            s_now = torch.sigmoid(phi).detach().cpu().numpy() if fuse_on else np.zeros(E)
            plan, cap_broken = _read_out(rx, Th, Sph, s_now, fallback, cfg.joint_rounding)
            best.record(step, plan)
            if cap_broken:
                w_cap = min(w_cap * 10.0, 1e3)
        rec["best_edp"] = best.rep.edp if best.rep is not None else math.nan
        history.append(rec)
        if on_step is not None:
            on_step(step, rec)
        if best.should_stop(step, cfg, plateau_from):
            n_iter = step + 1
            break
    best.stop = deadline.perf_stop()
    best_plan, best_rep, source = _discrete_phase(net, arch, cfg, method, candidates, best)
    if best_plan is None or best_rep is None:  # pragma: no cover - fallback is always valid
        best_plan = fallback
        best_rep = evaluate_plan(net, arch, best_plan)
    run = _RunRecord(tuple(history), tuple(best.evals), n_iter, w_cap, t0)
    return _fadiff_result(net, arch, cfg, method, (best_plan, best_rep, source), run)


def _three_order_table(layers: list[Layer], L: int, device: str) -> tuple[LayerTable, torch.Tensor]:
    """The layer table stacked three times and the matching loop orders: every layer is
    costed under each order of :data:`_ORDERS` in one batch, and the cheapest is kept."""
    import torch

    from twill.mapping.fadiff.model import layer_table
    from twill.mapping.fadiff.relax import order_tensor

    B = len(layers)
    tab = layer_table(layers, device)
    tab3 = type(tab)(
        *(
            x.repeat(3, *([1] * (x.dim() - 1)))
            for x in (tab.bounds, tab.stride, tab.dilation, tab.macs, tab.o_size, tab.groups)
        )
    )
    orders = torch.cat([order_tensor(B, o, L, device) for o in _ORDERS], 0)
    return tab3, orders


def _fusion_variables(
    net: Network, cfg: FADiffSettings
) -> tuple[list[int], torch.Tensor, torch.Tensor, torch.Tensor]:
    """The candidate edges (none without ``cfg.fusion``), their fusion logits ``phi`` (one
    trainable value per edge) and their producer and consumer layer indices."""
    import torch

    cands = list(net.candidates) if cfg.fusion else []
    phi = torch.full((len(cands),), float(cfg.fusion_init), dtype=torch.float64,
                     device=cfg.device, requires_grad=True)  # fmt: skip
    src = torch.tensor([net.edges[i].src for i in cands], dtype=torch.long, device=cfg.device)
    dst = torch.tensor([net.edges[i].dst for i in cands], dtype=torch.long, device=cfg.device)
    return cands, phi, src, dst


@dataclass(frozen=True)
class _RelaxedNet:
    """What the relaxed loss of one run holds fixed: the network and the hardware, every
    layer's constants stacked once per order of :data:`_ORDERS` (``tab3``) with those loop
    ``orders``, the candidate edges (``cands``, none without fusion) with their producer and
    consumer layers (``src``, ``dst``), the candidates sharing a layer with each
    (``neighbours``), which candidates are data edges and which layers have only candidate
    out-edges (``edge_meta``, :func:`_edge_meta`) and every level's capacity in words
    (``caps``, ``inf`` when unbounded)."""

    net: Network
    arch: Arch
    tab3: LayerTable
    orders: torch.Tensor
    cands: list[int]
    src: torch.Tensor
    dst: torch.Tensor
    neighbours: list[list[int]]
    edge_meta: tuple[torch.Tensor, torch.Tensor]
    caps: list[float]

    @property
    def n_layers(self) -> int:
        """Layers of the network (rows of one order's block of ``tab3``)."""
        return len(self.net.layers)


def _relaxation(net: Network, arch: Arch, cfg: FADiffSettings) -> tuple[_RelaxedNet, torch.Tensor]:
    """The fixed part of ``net``'s relaxed loss and its trainable fusion logits."""
    cands, phi, src, dst = _fusion_variables(net, cfg)
    tab3, orders = _three_order_table(list(net.layers), arch.n_levels, cfg.device)
    caps = [float(lv.entries) if lv.entries is not None else math.inf for lv in arch.levels]
    neighbours = _adjacent_candidates(net, cands)
    meta = _edge_meta(net, cands, cfg.device)
    return _RelaxedNet(net, arch, tab3, orders, cands, src, dst, neighbours, meta, caps), phi


def _check_inputs(net: Network, arch: Arch, cfg: FADiffSettings) -> None:
    """Refuse a broken network, a non-Gemmini architecture, bad settings or missing CUDA."""
    import torch

    bad = net.check() + check_gemmini(arch)
    bad += cfg.check()
    if bad:
        raise InvalidProblemError(bad, source=net.name)
    if str(cfg.device).startswith("cuda") and not torch.cuda.is_available():
        raise InvalidProblemError(
            "device 'cuda' requested but CUDA is not available", source=net.name
        )


def _initial_theta(
    init: FusionPlan | None, arch: Arch, slots: Sequence[tuple[int, str]], B: int
) -> torch.Tensor:
    """Starting log-factors: ``init``'s mappings, else every factor 1 except the spatial
    slots, which start at the full fan-out."""
    import torch

    if init is not None:
        return _theta_from_plan(init, arch)
    theta0 = torch.zeros(B, len(slots), 7, dtype=torch.float64)
    for k, (lvl, kind) in enumerate(slots):
        if kind == "s":
            theta0[:, k, :] = math.log(arch.fanout(lvl))
    return theta0


@dataclass
class _ReadOuts:
    """The best plans seen at the hard read-outs of one gradient run.

    ``plan``/``rep``: the lowest-EDP valid plan; ``unfused``: the lowest-EDP mapping set
    with every fusion dropped (a seed for the discrete phase); ``last_gain``: the step of the
    last improvement by more than the plateau tolerance; ``evals``: one row per read-out.
    """

    net: Network
    arch: Arch
    plan: FusionPlan | None = None
    rep: PlanReport | None = None
    unfused: tuple[float, FusionPlan] | None = None
    last_gain: int = 0
    evals: list[dict[str, float]] = field(default_factory=list)
    stop: float = math.inf

    def should_stop(self, step: int, cfg: FADiffSettings, plateau_from: int) -> bool:
        """Whether the gradient loop ends after ``step``: the deadline ``stop`` has passed,
        or ``cfg.patience`` read-outs have passed since the last gain (counted from
        ``plateau_from`` at the earliest)."""
        if time.perf_counter() >= self.stop:
            return True
        span = (cfg.patience or 0) * cfg.eval_every
        return bool(
            cfg.patience
            and step % cfg.eval_every == 0
            and step - max(self.last_gain, plateau_from) >= span
        )

    def record(self, step: int, plan: FusionPlan) -> None:
        """Evaluate the read-out ``plan`` of ``step`` and keep what improves."""
        rep = evaluate_plan(self.net, self.arch, plan)
        if rep.valid and (self.rep is None or rep.edp < self.rep.edp):
            if self.rep is None or rep.edp < (1 - _PLATEAU_TOL) * self.rep.edp:
                self.last_gain = step
            self.plan, self.rep = plan, rep
        bare = plan.with_fused(())
        e_bare = rep.edp if not plan.fused else evaluate_plan(self.net, self.arch, bare).edp
        if self.unfused is None or e_bare < self.unfused[0]:
            self.unfused = (e_bare, bare)
        self.evals.append(
            {
                "step": step,
                "edp": rep.edp,
                "best_edp": self.rep.edp if self.rep else math.nan,
                "fused": len(plan.fused),
            }
        )


@dataclass(frozen=True)
class _RunRecord:
    """What the gradient loop leaves for the result: its history and read-outs, the steps
    run, the final capacity weight and the start time."""

    history: tuple[dict[str, float], ...]
    evals: tuple[dict[str, float], ...]
    n_iter: int
    w_cap: float
    t0: float


def _fadiff_result(
    net: Network,
    arch: Arch,
    cfg: FADiffSettings,
    method: str,
    best: tuple[FusionPlan, PlanReport, str],
    run: _RunRecord,
) -> SolveResult:
    """Verify the winning plan once (``best``: the plan, its report and where it came from)
    and package it with the run's settings and history: FEASIBLE (heuristic) with a
    :class:`~twill.mapping.fadiff.plan.NetworkPlan`, its exact EDP (µJ·cycles) as objective;
    ``stats`` holds ``n_iter`` (gradient steps run), ``n_evaluations`` (layer-mapping
    evaluations of the model, the budget the random baseline gets), the ``history`` (one entry
    per step: ``loss``, relaxed ``edp``, ``tau``, ``best_edp``) and the exact read-outs
    ``evals`` (a non-finite number written as ``None``)."""
    best_plan, best_rep, source = best
    viol = verify_plan(net, arch, best_plan)
    if viol:  # pragma: no cover - read-out only keeps verified plans
        raise VerificationError(viol, what=f"{method} plan for {net.name}")
    seconds = time.perf_counter() - run.t0
    settings = {k: v for k, v in asdict(cfg).items() if k != "method"}
    settings.update(w_cap=run.w_cap, device=str(cfg.device), n_iter=run.n_iter)
    plan = FusionPlan(
        net.name, best_plan.mappings, best_plan.fused, method, {"source": source, **settings}
    )
    log.info(
        "%s on %s: EDP %.4g (source %s, %d fused, %.1f s)",
        method,
        net.name,
        best_rep.edp,
        source,
        len(plan.fused),
        seconds,
    )
    stats = {"n_iter": run.n_iter, "n_evaluations": run.n_iter * len(net.layers) * 3,
             "source": source, "fused": len(plan.fused), **best_rep.summary(),
             "history": [{k: _finite(v) for k, v in h.items()} for h in run.history],
             "evals": [{k: _finite(v) for k, v in e.items()} for e in run.evals]}  # fmt: skip
    return SolveResult(Status.FEASIBLE, NetworkPlan(plan, best_rep, source), best_rep.edp,
                       "EDP (µJ·cycles)", timings=Timings(solve=seconds), stats=stats,
                       settings={"method": method, **settings}, seed=cfg.seed)  # fmt: skip


# ----------------------------------------------------------------------------- internals
def discrete_only(
    net: Network,
    arch: Arch,
    candidates: Sequence[FusionPlan],
    settings: FADiffSettings | None = None,
) -> tuple[FusionPlan, PlanReport, str]:
    """FADiff with the gradient phase switched off: greedy fusion, the read-out polish and the
    group search of :func:`solve`'s discrete phase, run on ``candidates`` alone.

    The ablation baseline for the gradient (same discrete steps, same settings); returns the
    best verified plan, its report and which step produced it.
    """
    cfg = settings or FADiffSettings()
    if not candidates:
        raise InvalidProblemError(
            "discrete_only needs at least one candidate plan", source=net.name
        )
    none_yet = _ReadOuts(net, arch)
    plan, rep, source = _discrete_phase(net, arch, cfg, "no-gradient", candidates, none_yet)
    assert plan is not None and rep is not None  # candidates are verified plans
    viol = verify_plan(net, arch, plan)
    if viol:  # pragma: no cover - every step keeps verified plans only
        raise VerificationError(viol, what=f"no-gradient plan for {net.name}")
    return plan, rep, source


def _discrete_phase(
    net: Network,
    arch: Arch,
    cfg: FADiffSettings,
    method: str,
    candidates: Sequence[FusionPlan],
    read_outs: _ReadOuts,
) -> tuple[FusionPlan | None, PlanReport | None, str]:
    """After the gradient phase (its best ``read_outs``): compare with the ``candidates``
    (and their greedy fusion), polish the best unfused mapping set, and run the depth-first
    group search from the best unfused sets; past ``read_outs.stop`` no polish or group
    search starts. Returns the best verified plan, its report and where it came from."""
    best_plan, best_rep, best_unfused = read_outs.plan, read_outs.rep, read_outs.unfused
    stop = read_outs.stop
    source = "gradient"
    for cand in candidates:
        rep = evaluate_plan(net, arch, cand)
        if rep.valid and (best_rep is None or rep.edp < best_rep.edp):
            best_plan, best_rep, source = cand, rep, cand.method or "candidate"
            if cfg.fusion:
                g = greedy_fusion(net, arch, cand)
                grep = evaluate_plan(net, arch, g)
                if grep.valid and grep.edp < best_rep.edp:
                    best_plan, best_rep = g, grep
    # unfused mapping sets, best first: the read-outs' best and every candidate's
    by_edp = sorted((c.with_fused(()) for c in candidates),
                    key=lambda c: evaluate_plan(net, arch, c).edp)  # fmt: skip
    # the starts that are polished and seed the group search: every distinct candidate
    # mapping set (so the gradient-off ablation's start is among them) and the gradient's best
    starts: list[FusionPlan] = []
    for start in by_edp + ([best_unfused[1]] if best_unfused is not None else []):
        if all(start.mappings != seen.mappings for seen in starts):
            starts.append(start)
    seeds: list[FusionPlan] = []
    for start in starts:
        if not cfg.polish or time.perf_counter() >= stop:
            seeds.append(start)
            continue
        from twill.mapping.fadiff.polish import polish_mappings

        label = f"polish({start.method or 'gradient'})"
        pol = FusionPlan(
            net.name,
            tuple(polish_mappings(list(net.layers), arch, start.mappings, stop=stop)),
            (),
            label,
        )
        seeds.append(pol)
        for p in (pol, greedy_fusion(net, arch, pol)) if cfg.fusion else (pol,):
            prep = evaluate_plan(net, arch, p)
            if prep.valid and (best_rep is None or prep.edp < best_rep.edp):
                best_plan, best_rep, source = p, prep, label
    if cfg.fusion and cfg.group_len > 1 and best_plan is not None:
        from twill.mapping.fadiff.groups import group_search

        # depth-first groups seeded by the polished starts, best unfused EDP first
        seeds.sort(key=lambda c: evaluate_plan(net, arch, c).edp)
        for sd in seeds[: cfg.group_seeds]:
            if time.perf_counter() >= stop:
                break
            g = group_search(net, arch, sd.with_fused(()), max_len=cfg.group_len, stop=stop)
            g = replace(g, method=method)
            grep = evaluate_plan(net, arch, g)
            if grep.valid and grep.edp < best_rep.edp:
                best_plan, best_rep, source = g, grep, f"group-search({sd.method or source})"
    return best_plan, best_rep, source


def _adjacent_candidates(net: Network, cands: list[int]) -> list[list[int]]:
    """For each candidate (by position), the positions of candidates sharing a layer."""
    out = []
    for i in cands:
        ei = net.edges[i]
        out.append(
            [
                b
                for b, j in enumerate(cands)
                if j != i and {net.edges[j].src, net.edges[j].dst} & {ei.src, ei.dst}
            ]
        )
    return out


def _edge_meta(
    net: Network, cands: list[int], device: str | torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Which candidates are data edges, and which layers have only candidate out-edges."""
    import torch

    from twill.mapping.network import EPILOGUE_KINDS

    data = torch.tensor(
        [net.edges[i].kind not in EPILOGUE_KINDS for i in cands], dtype=torch.bool, device=device
    )
    cset = set(cands)
    all_cand = torch.zeros(len(net.layers), dtype=torch.float64, device=device)
    for p in range(len(net.layers)):
        outs = [i for i, e in enumerate(net.edges) if e.src == p]
        all_cand[p] = float(bool(outs) and all(i in cset for i in outs))
    return data, all_cand


def _pen(u: torch.Tensor, cap: float) -> torch.Tensor:
    import torch

    return torch.nn.functional.softplus((u - 0.95 * cap) / (0.05 * cap)) ** 2


def _fusion_penalty(
    rx: _RelaxedNet,
    T: torch.Tensor,
    tiles: torch.Tensor,
    reads: torch.Tensor,
    used: torch.Tensor,
    s: torch.Tensor,
    s_in: torch.Tensor,
) -> torch.Tensor:
    """The fusion terms of the relaxed loss, weighted by each edge's fusion share ``s``
    (``T`` the layers' temporal factors; ``tiles``, ``reads``, ``used`` their costs under the
    chosen orders; ``s_in`` the fusion value of each layer's data input).

    Three terms: the scratchpad overflow of a fused edge (the producer's output block, the
    consumer's input window, the neighbours' fused buffers and the streamed tiles), the
    producer's output read back from DRAM, and the mismatch of the two layers' DRAM-level
    P/Q/N block counts, which a fused edge needs equal.
    """
    import torch

    B, src, dst, tab3 = rx.n_layers, rx.src, rx.dst, rx.tab3
    top = rx.arch.n_levels - 1
    sp = top - 1
    Tt = T[:, top, :]
    o_size = tab3.o_size[:B]
    bounds = tab3.bounds[:B]
    blocks_p = Tt[src][:, [2, 3, 6]]
    blocks_c = Tt[dst][:, [2, 3, 6]]
    out_block = o_size[src] / blocks_p.prod(1)
    bc = bounds[dst]
    st, dl = tab3.stride[:B][dst], tab3.dilation[:B][dst]
    pb, qb, nb = bc[:, 2] / blocks_c[:, 0], bc[:, 3] / blocks_c[:, 1], bc[:, 6] / blocks_c[:, 2]
    width = (pb - 1) * st[:, 0] + (bc[:, 0] - 1) * dl[:, 0] + 1
    height = (qb - 1) * st[:, 1] + (bc[:, 1] - 1) * dl[:, 1] + 1
    in_win = bc[:, 4] * nb * width * height
    buf = out_block + in_win
    stream_p = tiles[src, sp, 0] + tiles[src, sp, 1] * (1 - s_in[src])
    stream_c = tiles[dst, sp, 0] + tiles[dst, sp, 1] * (1 - s)
    stream = torch.maximum(stream_p, stream_c)
    zero = torch.zeros((), dtype=T.dtype, device=T.device)
    extra = torch.stack([sum((s[j] * buf[j] for j in nb_), zero) for nb_ in rx.neighbours])
    U = s * buf + extra + stream
    pen_fuse = (s * _pen(U, rx.caps[sp])).sum()
    o_read_top = reads[:, top, 2] * used[:, top]
    pen_fuse = pen_fuse + (s * o_read_top[src] / o_size[src]).sum()
    pen_fuse = pen_fuse + (s * ((torch.log(blocks_p) - torch.log(blocks_c)) ** 2).sum(1)).sum()
    return pen_fuse


def _relaxed_network(
    rx: _RelaxedNet,
    T: torch.Tensor,
    Sp: torch.Tensor,
    s: torch.Tensor,
    ref: tuple[torch.Tensor, torch.Tensor] | None,
    fuse_on: bool,
) -> dict[str, torch.Tensor]:
    """One forward pass at factors ``T``, ``Sp`` and fusion values ``s``: costs under 3
    orders, per-layer order choice (against the last pass's energy and cycles ``ref``),
    fusion (its penalty only with ``fuse_on``), penalties."""
    import torch

    from twill.mapping.fadiff.fusion import energy_and_cycles, fused_level_accesses
    from twill.mapping.fadiff.model import torch_costs

    arch, tab3, src, dst, caps = rx.arch, rx.tab3, rx.src, rx.dst, rx.caps
    B = rx.n_layers
    L = arch.n_levels
    top, sp = L - 1, L - 2
    c = torch_costs(tab3, arch, T.repeat(3, 1, 1), Sp.repeat(3, 1, 1), rx.orders)
    e3 = c.energy_pj.view(3, B).detach()
    y3 = c.cycles.view(3, B).detach()
    if ref is None:
        score = torch.log(e3) + torch.log(y3)
    else:
        score = e3 / ref[0].sum() + y3 / ref[1].sum()
    choice = score.argmin(dim=0)
    dev = T.device
    E = s.shape[0]
    s_in = torch.zeros(B, dtype=T.dtype, device=dev)
    s_out = torch.zeros(B, dtype=T.dtype, device=dev)
    s_buf = s_out
    if E:
        # tensor semantics (fusion.py): input removed through a fused data edge; the output
        # leaves DRAM only when every reader is fused (product), the scratchpad gets it when
        # any reader is fused (1 - product of 1 - s)
        data, all_cand = rx.edge_meta
        s_in = s_in.index_add(0, dst[data], s[data])
        tiny = 1e-12
        log_all = torch.zeros(B, dtype=T.dtype, device=dev).index_add(
            0, src, torch.log(s.clamp(min=tiny))
        )
        log_none = torch.zeros(B, dtype=T.dtype, device=dev).index_add(
            0, src, torch.log((1 - s).clamp(min=tiny))
        )
        s_out = torch.exp(log_all) * all_cand
        s_buf = 1 - torch.exp(log_none)
        if fuse_on:
            hot = torch.zeros(B, dtype=torch.bool, device=dev)
            big = s.detach() >= 0.5
            hot[src[big]] = True
            hot[dst[big]] = True
            choice = torch.where(hot, torch.full_like(choice, _ORDERS.index("OS")), choice)
    rows = choice * B + torch.arange(B, device=dev)

    def g(x: torch.Tensor) -> torch.Tensor:
        return x[rows]

    acc, used, compute = g(c.level_acc), g(c.used), g(c.compute)
    reads, fills, updates, tiles = g(c.reads), g(c.fills), g(c.updates), g(c.tiles)
    o_dram = (updates[:, top, 2] + reads[:, top, 2]) * used[:, top]
    i_dram = reads[:, top, 1] * used[:, top]
    i_fill = fills[:, sp, 1] * used[:, sp]
    acc2 = fused_level_accesses(acc, o_dram, i_dram, i_fill, s_in, s_out, s_buf)
    macs = tab3.macs[:B]
    energy, cycles = energy_and_cycles(acc2, used, compute, macs, arch)
    E_net, C_net = energy.sum(), cycles.sum()
    log_edp = torch.log(E_net * 1e-6) + torch.log(C_net)
    # per-layer capacities (every kept tile at every bounded level)
    pen_cap = torch.zeros((), dtype=T.dtype, device=dev)
    keeps = [[v in lv.keeps for v in range(3)] for lv in _keeps_idx(arch)]
    for m in range(L):
        if math.isinf(caps[m]):
            continue
        use = sum(tiles[:, m, v] for v in range(3) if keeps[m][v])
        pen_cap = pen_cap + _pen(use, caps[m]).sum()
    pen_fuse = torch.zeros((), dtype=T.dtype, device=dev)
    if E and fuse_on:
        pen_fuse = _fusion_penalty(rx, T, tiles, reads, used, s, s_in)
    return {
        "log_edp": log_edp,
        "pen_cap": pen_cap,
        "pen_fuse": pen_fuse,
        "energy": energy,
        "cycles": cycles,
        "edp": E_net * 1e-6 * C_net,
    }


class _LevelKeeps:
    """A level's kept operands as indices into ``OPERANDS`` (W, I, O = 0, 1, 2)."""

    def __init__(self, lv: MemoryLevel) -> None:
        self.keeps = {i for i, v in enumerate(OPERANDS) if v in lv.keeps}


def _keeps_idx(arch: Arch) -> list[_LevelKeeps]:
    return [_LevelKeeps(lv) for lv in arch.levels]


def _mapping_from_arrays(T: np.ndarray, Sp: np.ndarray, order: np.ndarray) -> Mapping:
    t = tuple(tuple(int(round(x)) for x in row) for row in T)
    s = tuple(tuple(int(round(x)) for x in row) for row in Sp)
    o = tuple(tuple(DIMS[int(i)] for i in row) for row in order)
    return Mapping(t, s, o, None)


def _read_out(
    rx: _RelaxedNet,
    Th: torch.Tensor,
    Sph: torch.Tensor,
    s_now: np.ndarray,
    fallback: FusionPlan,
    joint: bool = True,
) -> tuple[FusionPlan, bool]:
    """Discrete plan from argmax factors ``Th``, ``Sph`` and fusion values ``s_now``: best
    dataflow per layer, threshold, joint rounding of the fused groups' block counts
    (``joint``), repair. A layer whose read-out is invalid keeps ``fallback``'s mapping;
    the plan is named as ``fallback``. Also says whether some read-out broke a capacity."""
    from twill.mapping.fadiff.relax import order_tensor

    net, arch, cands, method = rx.net, rx.arch, rx.cands, fallback.method

    T = Th.detach().cpu().numpy()
    Sp = Sph.detach().cpu().numpy()
    L = arch.n_levels
    fused = [cands[k] for k in range(len(cands)) if s_now[k] >= 0.5]
    hot = {net.edges[i].src for i in fused} | {net.edges[i].dst for i in fused}
    orders = [order_tensor(1, o, L).numpy()[0] for o in _ORDERS]
    mappings = []
    cap_broken = False
    for b, ly in enumerate(net.layers):
        Tb = np.rint(T[b]).astype(np.int64)
        Sb = np.rint(Sp[b]).astype(np.int64)
        batch = MappingBatch(np.stack([Tb] * 3), np.stack([Sb] * 3), np.stack(orders))
        cost = evaluate_batch(ly, arch, batch)
        if b in hot:
            k = _ORDERS.index("OS")
        else:
            k = int(np.argmin(cost.energy_pj * cost.cycles))
        m = _mapping_from_arrays(Tb, Sb, orders[k])
        if not cost.valid[k]:  # the batch model checks factors, capacities and fan-outs
            cap_broken = True
            m = fallback.mappings[b]
        mappings.append(m)
    plan = FusionPlan(net.name, tuple(mappings), tuple(sorted(fused)), method)
    if joint:
        from twill.mapping.fadiff.groups import align_blocks

        plan = align_blocks(net, arch, plan)
    plan = repair_plan(net, arch, plan)
    # (no greedy completion here: with ResNet-50's 66 candidates it cost seconds per read-out;
    # the group search and the final greedy pass over the candidates cover it)
    return plan, cap_broken


def _theta_from_plan(plan: FusionPlan, arch: Arch) -> torch.Tensor:
    """Log-factors reproducing ``plan``'s on-chip factors in the slot layout of ``relax``."""
    import torch

    from twill.mapping.fadiff.relax import slots_for

    slots = slots_for(arch)
    th = torch.zeros(len(plan.mappings), len(slots), 7, dtype=torch.float64)
    for b, m in enumerate(plan.mappings):
        for k, (lvl, kind) in enumerate(slots):
            vals = m.spatial[lvl] if kind == "s" else m.temporal[lvl]
            for j in range(7):
                th[b, k, j] = math.log(max(1, vals[j]))
    return th


_ = (InvalidProblemError, Sequence)
