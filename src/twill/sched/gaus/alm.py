"""Augmented Lagrangian + Adam over Gaussian means (GauS paper; settings in ``docs/gaus.md``).

Minimises ``f(mu, sigma)/f0 + sum_c lambda_c g_c + (rho/2) sum_c g_c^2`` where ``f`` is the
formulation's smooth objective (normalised to 1 at the start) and ``g_c >= 0`` are the
expected violations (one multiplier per constraint instance, vectorised). After every inner
phase of ``inner_steps`` Adam steps:

* ``lambda <- lambda + rho * g``; ``rho <- gamma * rho`` when the total violation fell by less
  than 25 % (capped at ``rho_max``);
* ``sigma <- max(sigma_decay * sigma, sigma_final)`` (annealing);
* the current means are legalised and the discrete objective evaluated; the best legal
  schedule is kept (any-time curve).

Convergence-based early stopping (``max_iters`` stays an upper bound): the run stops once
(1) a legal schedule exists, (2) every sigma has annealed to at most ``harden_sigma`` (the
distributions are nearly integral, so further steps cannot change the rounding much), and
(3) the best legal objective has not improved for ``patience`` outer iterations; or at
``max_iters`` steps or ``time_limit`` seconds.

Speed (``docs/gaus.md``): each Adam step evaluates the losses *and* their gradient in closed form
(:meth:`~twill.sched.gaus.losses.LossModel.loss_and_grad`, no autograd graph), on a step window
around the means; loss and violation are read back once per inner phase, not per step.
torch runs single-threaded by default (``threads``).

Means are parameterised as ``mu = theta * mu_unit`` (steps by default). Means are
projected into ``[ASAP - 1/2, ALAP + 1/2]`` after every step (the usual box is
``[-1/2, D - 1/2]``; the ASAP/ALAP box is tighter and loses no legal schedule).

Preconditions: the caller validated ``D`` (ASAP <= ALAP) and built the loss model.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from twill.errors import ArgumentTypeError
from twill.options import MethodSettings
from twill.progress import ProgressEvent
from twill.validation import check_bool, check_choice, check_int, check_real, check_time_limit

__all__ = ["GauSSettings", "ALMHooks", "ALMOutcome", "StartingPoint", "optimise", "Adam"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GauSSettings(MethodSettings, slot="gaus"):
    """Every GauS hyperparameter, with the default chosen and why.

    Parameters
    ----------
    lr : float, default 0.01
        Adam learning rate on ``theta = mu / mu_unit`` (Adam moves each mean by about ``lr``
        units per step): the only value the literature reports. Starting from a
        legal schedule the useful moves are local (a few steps), so 0.01 steps per Adam step
        over 2000 steps suffices; use larger values when starting far from the optimum.
    mu_unit : float, default 1.0
        Unit of the mean parameter, in steps.
    max_iters : int, default 2000
        Cap on Adam steps (the seed example's budget).
    inner_steps : int, default 100
        Adam steps per ALM inner phase (100-300 are usual; the low end keeps the
        multipliers and sigma schedule responsive within 2000 steps).
    rho0 : float, default 1.0
        Initial quadratic penalty weight.
    gamma : float, default 2.0
        Penalty growth when violation falls by less than 25 %.
    rho_max : float, default 1e4
        Cap on rho so the loss stays well conditioned in float32.
    kappa : float, default 0.25
        Initial ``sigma_i = kappa * (ALAP_i - ASAP_i)`` (proportional to slack, as in the paper).
    sigma_min : float, default 0.25
        Floor of the initial sigma in steps, so zero-slack ops keep a gradient.
    sigma_decay : float, default 0.8
        Per-outer-iteration annealing factor.
    sigma_final : float, default 0.1
        Annealing floor: ``Phi(0.5/0.1) = Phi(5)`` makes the distribution effectively
        integral.
    tau : float, default 0.05
        LogSumExp temperature relative to the balanced usage level (0.01-0.1 is
        sensible; 0.05 overestimates the peak by at most ``0.05 * log D`` balanced levels).
    patience : int, default 3
        Outer iterations without a better legal schedule before stopping.
    learn_sigma : bool, default False
        Learn sigma with Adam (plus ``sigma_penalty * sum sigma``) instead of the schedule.
    sigma_penalty : float, default 1e-3
        Push-down weight when ``learn_sigma``.
    time_limit : float or None, default None
        Wall-clock cap in seconds for the gradient phase.
    sigma_max : float, default 0.5
        Cap on the initial sigma in steps. Without it a 500-step window starts with sigma near
        100 and most of the budget goes into shrinking it; means move instead (Adam).
    window : bool, default True
        Evaluate the losses only on the steps around the current means (``6 sigma`` plus
        ``window_margin``), rebuilt every outer iteration.
    window_margin : float, default 8.0
        Extra steps on each side of the evaluation window; means stay ``4 sigma`` inside it.
    sparse : bool, default True
        Evaluate every op on its own support window
        (:class:`~twill.sched.gaus.sparse.SparseLossModel`): its feasible range ``[ASAP,
        ALAP]`` cut to ``mu +- (window_k sigma + window_slack)``, rebuilt every outer
        iteration, with the mass outside folded into the window's edge steps. Time and memory
        grow with ``n`` times the longest window instead of ``n * D``. ``False``: the dense
        model over one shared window (``window``, ``window_margin``), which is also used when
        the widest possible window (see ``window_slack``) is not narrower than ``D``.
    window_k : float, default 4.0
        Half-width of an op's window in standard deviations (plus ``window_slack``). The mean
        is kept ``window_k sigma`` inside a cut edge, so at most ``Phi(-4) = 3e-5`` of its mass
        is folded there.
    window_slack : float, default 2.0
        Extra steps on each side of an op's window: how far a mean may move within one inner
        phase (about ``inner_steps * lr`` steps; with the formulation A defaults ``lr = 0.2``
        the box stops it at the window edge until the next rebuild). Windows are padded to the
        longest one (a single bucket): with ``sigma <= sigma_max`` that is at most
        ``2 (window_k sigma_max + window_slack) + 2`` columns.
    lr_floor : float, default 0.05
        The learning rate follows ``lr * sigma / sigma_0`` (steps shrink as the distribution
        hardens), never below ``lr_floor * lr``.
    harden_sigma : float, default 0.15
        Early stopping is allowed only once every sigma is at most this, i.e. the annealing
        has (nearly) reached ``sigma_final``. Stopping earlier (0.5 before) froze formulation A
        runs before the distributions hardened: rand_graph_sparse_1000_1 ended at 1.381e7
        after 700 steps instead of 1.079e7 after 1500.
    threads : int or None, default 1
        CPU threads for torch during the run (restored afterwards). One thread avoids the
        thread-pool hand-offs that dominate the many small kernels of a step (measured 6 ms vs
        15 us for one ``index_add`` on a busy 2-core machine); ``None`` keeps torch's setting.
    polish : bool, default True
        Formulations A and B: run a legality-preserving local search on the best legalised
        schedule (a post-processing step, not part of the paper; the result keeps the GauS
        objective before it in ``gaus_objective``): :mod:`twill.sched.gaus.polish` for A
        (peak resource and communication), :mod:`twill.sched.gaus.polish_memory` for B (peak
        live memory, with moves that push dependent ops along).
    polish_time : float or None, default None
        Wall-clock cap of the final search in seconds (``None``: until a local optimum or
        ``4 n`` moves, but at most ``max(30 s, time elapsed before it)``, so the search at
        most doubles a long run).
    polish_share : float, default 0.15
        Formulation A with ``polish``: the same search also runs on every legalised
        checkpoint that improves GauS's own best (not on the starting point), as long as the
        time spent on it stays within this share of the elapsed wall time (a checkpoint's
        search is cut at the remaining allowance). The best searched schedule is kept as an
        any-time incumbent, so a run that is read (or stopped) early holds a good schedule
        already; GauS's own trajectory and stopping rule do not change. Why: the search
        costs milliseconds on 1,000-node graphs and brings a mid-run checkpoint to within a
        few per cent of the final objective, while GauS proper only reaches that once sigma
        is annealed; capping its share keeps the 10,000-node graphs (about 5 ms per move)
        within a bounded overhead. ``0`` disables it (search only at the end). The first
        searched checkpoint may borrow against the projected run time: its search is cut at
        ``polish_share`` times the run time projected from the steps so far (``max_iters``
        steps, or ``time_limit``) instead of the elapsed time, so it usually reaches its local
        optimum, and later checkpoints are searched again once the elapsed time has caught
        up. The total stays about ``polish_share`` of the run; only its timing moves forward.
    polish_batch : int, default 4
        Moves of ops with usage per pass in the first (borrowing) checkpoint search
        (``batch`` of :func:`twill.sched.gaus.polish.polish_resource`); the later checkpoint
        searches and the final one stay the best-improvement descent (1), so the returned
        objective is never worse than without the checkpoint searches. Measured from GauS's
        step-25 schedule on the sparse 1000-node GS graphs (median of 5, load 3.7): within
        2 % of CP-SAT's best after 0.078/0.044/0.048 s with 4 against 0.093/0.076/0.077 s
        with 1 (8 was slower again: more candidates tried per pass).
    polish_radius : int, default 32
        Steps around its current one at which an op is tried per pass of the search, so a
        pass costs ``O(n * polish_radius)`` (windows of ``D <= 2 polish_radius + 1`` steps,
        such as the GS-Schedule graphs', are searched whole).
    polish_batch_deep : int, default 64
        Moves per pass of every search on deeper windows (``D > 2 polish_radius + 1``, EPFL
        designs): applying one move per ``O(n)`` pass would make the search quadratic on
        50,000-node graphs.
    lns_time : float, default 0.0
        Seconds of large-neighbourhood search after the local searches (formulations A, B
        and C; :func:`twill.sched.gaus.polish_lns.lns_search`, post-processing, not in the
        paper): neighbourhoods of ops are re-optimised exactly with CP-SAT while the other
        ops stay put, and in A the search is raced from GauS's schedule and from capped list
        schedules with lower peaks. ``0`` (default) turns it off. Use it when the run has a
        wall-clock budget to fill, on designs small enough for the exact model (up to a few
        thousand ops): there it escapes the local optima where the move-based searches stop
        (EPFL ``int2float``, A: 3772 -> 3255 in 400 s). Needs OR-Tools.
    early_readouts : tuple of int, default ()
        Extra read-outs after these numbers of Adam steps (counted from the start), besides
        the one after every inner phase: the current means are legalised, the best legal
        schedule is kept and offered to the checkpoint search. The ALM updates, the sigma
        schedule and the stopping rule (an improvement anywhere in a phase counts) are
        unchanged. Formulation A uses ``(25, 50)`` (:data:`FORMULATION_DEFAULTS`): after a
        few dozen steps its means have spread the load over the window, and the local search
        from there reaches its final level about as well as from step 100 (measured on the
        sparse 1000-node GS graphs: 1.20e7 from steps 20-200 alike on sparse_1000_2, but from
        step 1 or 10 it needs 2-3x the moves), so a good schedule is held about 0.1 s after
        the start instead of after the first phase.
    device : str, default "cpu"
        Where the losses are evaluated: ``"cpu"`` or ``"cuda"``.
    init : str, default "legal_midpoint"
        ``"legal_midpoint"``: the ASAP/ALAP midpoint (the paper's start) after legalisation, so the
        optimiser starts from a legal point instead of spending its budget on dependency
        violations the legaliser removes for free; ``"asap_alap"``: the raw midpoint;
        ``"asap"``/``"naive"``: mu = ASAP (reviewers of the paper asked to separate the warm
        start from the optimiser).
    """

    lr: float = 0.01
    mu_unit: float = 1.0
    max_iters: int = 2000
    inner_steps: int = 100
    rho0: float = 1.0
    gamma: float = 2.0
    rho_max: float = 1e4
    kappa: float = 0.25
    sigma_min: float = 0.25
    sigma_decay: float = 0.8
    sigma_final: float = 0.1
    tau: float = 0.05
    patience: int = 3
    learn_sigma: bool = False
    sigma_penalty: float = 1e-3
    time_limit: float | None = None
    init: str = "legal_midpoint"
    sigma_max: float = 0.5
    window: bool = True
    window_margin: float = 8.0
    sparse: bool = True
    window_k: float = 4.0
    window_slack: float = 2.0
    lr_floor: float = 0.05
    harden_sigma: float = 0.15
    threads: int | None = 1
    polish: bool = True
    polish_time: float | None = None
    polish_share: float = 0.15
    polish_batch: int = 4
    polish_radius: int = 32
    polish_batch_deep: int = 64
    lns_time: float = 0.0
    early_readouts: tuple[int, ...] = ()
    device: str = "cpu"

    def __post_init__(self) -> None:
        """Refuse settings that would make the run meaningless (NaN, <= 0, wrong type)."""
        for name in ("lr", "mu_unit", "rho0", "gamma", "rho_max", "kappa", "sigma_min",
                     "sigma_final", "tau", "sigma_max", "lr_floor", "harden_sigma"):  # fmt: skip
            check_real(getattr(self, name), name)
        check_real(self.sigma_decay, "sigma_decay", maximum=1.0)
        check_real(self.sigma_penalty, "sigma_penalty", strict=False)
        check_real(self.window_margin, "window_margin", strict=False)
        check_real(self.polish_share, "polish_share", strict=False, maximum=1.0)
        check_real(self.lns_time, "lns_time", strict=False)
        check_time_limit(self.time_limit)
        check_time_limit(self.polish_time, "polish_time")
        for name in ("max_iters", "inner_steps", "patience", "polish_batch"):
            check_int(getattr(self, name), name)
        check_int(self.threads, "threads", none=True)
        for name in ("polish_radius", "polish_batch_deep"):
            check_int(getattr(self, name), name)
        for name in ("window_k", "window_slack"):
            check_real(getattr(self, name), name, strict=False)
        for name in ("learn_sigma", "window", "sparse", "polish"):
            check_bool(getattr(self, name), name)
        check_choice(self.init, "init", ("legal_midpoint", "asap_alap", "asap", "naive"))
        check_choice(self.device, "device", ("cpu", "cuda"))
        if isinstance(self.early_readouts, str) or not isinstance(
            self.early_readouts, tuple | list
        ):
            raise ArgumentTypeError(f"early_readouts must be a tuple of integers, found "
                                    f"{self.early_readouts!r}")  # fmt: skip
        for k in self.early_readouts:
            check_int(k, "early_readouts[]")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class ALMOutcome:
    """What :func:`optimise` returns (internal)."""

    best_t: np.ndarray | None
    best_obj: float | None
    mu: np.ndarray
    iterations: int
    expected_violation: float
    loss_history: list[float]
    violation_history: list[float]
    objective_history: list[tuple[float, float]]
    message: str


class Adam:
    """Adam (Kingma & Ba 2015) on a few tensors; ``torch.optim`` is avoided because importing
    it loads ``torch._dynamo`` (seconds of start-up on a small machine)."""

    def __init__(
        self, params: list, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
    ) -> None:
        import torch

        self.params = params
        self.lr = lr
        self.b1, self.b2 = betas
        self.eps = eps
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads: tuple) -> None:
        import torch

        self.t += 1
        c1 = 1.0 - self.b1**self.t
        c2 = 1.0 - self.b2**self.t
        with torch.no_grad():
            for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
                m.mul_(self.b1).add_(g, alpha=1.0 - self.b1)
                v.mul_(self.b2).addcmul_(g, g, value=1.0 - self.b2)
                p.addcdiv_(m, (v / c2).sqrt_().add_(self.eps), value=-self.lr / c1)


ProgressFn = Callable[[ProgressEvent], None]
ReadoutFn = Callable[[np.ndarray, float, int], None]


def _window(
    mu: np.ndarray, sig: float, D: int, II: int | None, margin: float
) -> tuple[int, int] | None:
    """Steps ``[s0, s0 + W)`` holding every mean +- ``6 sigma + margin`` (None: whole window)."""
    pad = 6.0 * sig + margin
    lo = max(0, int(np.floor(mu.min() - pad)))
    hi = min(D - 1, int(np.ceil(mu.max() + pad)))
    if II:
        lo = (lo // II) * II
    W = hi - lo + 1
    if W >= 0.8 * D:
        return None
    return lo, W


@dataclass(frozen=True)
class StartingPoint:
    """Where the ALM loop starts: the initial means ``mu0`` and standard deviations
    ``sigma0`` (steps), and the projection box ``[lo, hi]`` of the means."""

    mu0: np.ndarray
    sigma0: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass(frozen=True)
class ALMHooks:
    """What the caller gives the ALM loop besides the model: its clock and its callbacks.

    Parameters
    ----------
    legalise
        Maps means to ``(legal schedule or None, discrete objective or None)``.
    on_progress
        Called after every Adam step with a :class:`~twill.progress.ProgressEvent`
        (``method="gaus"``, ``phase="alm"``, ``step``, ``total=max_iters``, ``incumbent``: the
        best legal objective so far, ``message``: the loss and the expected violation).
    start_time
        ``time.perf_counter()`` of the caller's start (the any-time curve counts from it;
        ``None``: the loop's own start).
    on_readout
        Called after every read-out that found a legal schedule, except the one of the
        starting point, with ``(schedule, objective, Adam steps so far)`` (the checkpoint
        search of formulation A); its time is not part of the read-out's timestamp.
    deadline
        ``time.perf_counter()`` value by which the loop ends, checked after every Adam
        step: the steps stop when only the last read-out (as long as the longest one so far)
        still fits (the caller's whole-call time limit; ``settings.time_limit`` bounds this
        loop alone and is checked after every inner phase).
    """

    legalise: Callable[[np.ndarray], tuple[np.ndarray | None, float | None]]
    on_progress: ProgressFn | None = None
    start_time: float | None = None
    on_readout: ReadoutFn | None = None
    deadline: float | None = None


def optimise(
    make_model: Callable[[tuple[int, int] | None], object],
    start: StartingPoint,
    settings: GauSSettings,
    hooks: ALMHooks,
    *,
    ratio: float = 1.0,
    seed: int = 0,
) -> ALMOutcome:
    """Run the ALM loop (see module docstring).

    Parameters
    ----------
    make_model
        Builds a :class:`twill.sched.gaus.losses.LossModel` for a step window
        ``(s0, W)`` (``None``: all ``D`` steps); rebuilt every outer iteration around the
        current means (windowed evaluation).
    start
        The initial Gaussians and the projection box of the means.
    settings
        Hyperparameters.
    hooks
        The legaliser, the progress and read-out callbacks, the start time and the deadline.
    ratio
        Resource weight of formulation A.
    seed
        Seeds torch.
    """
    import torch

    torch.manual_seed(seed)
    old_threads = torch.get_num_threads()
    if settings.threads is not None:
        torch.set_num_threads(settings.threads)
    try:
        run = _ALMRun(torch, make_model, start, settings, hooks, ratio)
        run.deadline = hooks.deadline
        return run.run()
    finally:
        torch.set_num_threads(old_threads)


class _ALMRun:
    """The state of one run of the ALM loop: the parameters (scaled means ``theta`` and, with
    ``learn_sigma``, the softplus-parametrised widths), the multipliers ``lam`` and penalty
    ``rho``, the best legal schedule and the histories. The steps of the loop are methods:
    :meth:`prepare_phase` (windows and projection box), :meth:`inner_phase` (Adam steps),
    :meth:`update_multipliers` (ALM update) and :meth:`read_out` (legalisation)."""

    def __init__(
        self,
        torch: Any,
        make_model: Callable[[tuple[int, int] | None], object],
        start: StartingPoint,
        settings: GauSSettings,
        hooks: ALMHooks,
        ratio: float,
    ) -> None:
        mu0, sigma0, legalise = start.mu0, start.sigma0, hooks.legalise
        self.torch = torch
        self.make_model = make_model
        self.lo, self.hi = start.lo, start.hi
        self.settings = settings
        self.legalise = legalise
        self.ratio = ratio
        self.on_progress = hooks.on_progress
        self.on_readout = hooks.on_readout
        self.start = time.perf_counter() if hooks.start_time is None else hooks.start_time
        model = make_model(None)
        self.model: Any = model
        self.dev = model.device  # type: ignore[attr-defined]
        self.D = model.D  # type: ignore[attr-defined]
        self.II = model.II  # type: ignore[attr-defined]
        self.scale = float(settings.mu_unit)
        self.f32 = torch.float32
        self.theta = torch.tensor(mu0 / self.scale, dtype=self.f32, device=self.dev)
        self.sigma = torch.tensor(sigma0, dtype=self.f32, device=self.dev)
        self.per_op = hasattr(model, "set_windows")
        if self.per_op:
            model.set_windows(mu0, sigma0, settings.window_k, settings.window_slack)  # type: ignore[attr-defined]
        params = [self.theta]
        self.rho_param = None
        if settings.learn_sigma:
            self.rho_param = torch.log(
                torch.expm1(torch.clamp(self.sigma - settings.sigma_final, min=1e-3))
            )
            params.append(self.rho_param)
        self.opt = Adam(params, lr=settings.lr)
        self._init_multipliers()
        began = time.perf_counter()
        self.best_t, self.best_obj = legalise(mu0)
        self.readout_seconds = time.perf_counter() - began  # the reserve of the last read-out
        self.step_seconds = 0.0  # the last Adam step's
        self.obj_hist: list[tuple[float, float]] = []
        if self.best_obj is not None:
            self.obj_hist.append((time.perf_counter() - self.start, self.best_obj))
        self.early = {int(k) for k in settings.early_readouts}
        self.loss_hist: list[float] = []
        self.viol_hist: list[float] = []
        self.it = 0
        self.v_now = self.prev_v
        self.sig0 = float(sigma0.max(initial=settings.sigma_min))
        self.deadline: float | None = None

    def past_deadline(self, reserve: float = 0.0) -> bool:
        """True once the caller's deadline has passed, or less than ``reserve`` seconds are
        left before it."""
        return self.deadline is not None and time.perf_counter() > self.deadline - reserve

    def time_to_stop(self) -> bool:
        """True when only one more Adam step and the last read-out still fit before the
        deadline: the steps stop then, so that the best schedule of the latest means is
        legalised by the deadline, not a step and a legalisation after it (1.4 s past at
        load 6 on the EPFL ``arbiter``, issue 51)."""
        return self.past_deadline(self.readout_seconds + self.step_seconds)

    def _init_multipliers(self) -> None:
        """Objective scale ``f0``, zero multipliers and ``rho0`` from the loss at the start."""
        torch = self.torch
        with torch.no_grad():
            f_init, g_init = self.model.evaluate(
                self.theta * self.scale, self.current_sigma(), ratio=self.ratio
            )
        self.f0 = float(abs(f_init)) if float(abs(f_init)) > 1e-9 else 1.0
        self.lam = torch.zeros_like(g_init)
        self.rho = self.settings.rho0
        self.prev_v = float(g_init.sum())

    def current_sigma(self) -> Any:
        """The widths now: fixed (decayed per phase) or ``sigma_final + softplus(rho)``."""
        if self.rho_param is None:
            return self.sigma
        return self.settings.sigma_final + self.torch.nn.functional.softplus(self.rho_param)

    def box(self, win: tuple[int, int] | None, sig: float) -> tuple[Any, Any]:
        """Projection box of the scaled means, narrowed to keep ``4 sigma`` inside ``win``."""
        blo, bhi = self.lo.copy(), self.hi.copy()
        if win is not None:
            s0, W = win
            if s0 > 0:
                blo = np.maximum(blo, s0 + 4.0 * sig)
            if s0 + W < self.D:
                bhi = np.minimum(bhi, s0 + W - 1 - 4.0 * sig)
            bhi = np.maximum(bhi, blo)
        return self._scaled(blo), self._scaled(bhi)

    def _scaled(self, x: np.ndarray) -> Any:
        """``x / mu_unit`` as a float32 tensor on the model's device."""
        return self.torch.tensor(x / self.scale, dtype=self.f32, device=self.dev)

    def read_out(self, steps: int) -> bool:
        """Legalise the current means, keep the best, record it; True when it improved."""
        began = time.perf_counter()
        mu_np = (self.theta.detach() * self.scale).cpu().numpy().astype(np.float64)
        t, obj = self.legalise(mu_np)
        self.readout_seconds = max(self.readout_seconds, time.perf_counter() - began)
        improved = obj is not None and (self.best_obj is None or obj < self.best_obj - 1e-9)
        if improved:
            self.best_t, self.best_obj = t, obj
        if self.best_obj is not None:
            self.obj_hist.append((time.perf_counter() - self.start, self.best_obj))
        if self.on_readout is not None and t is not None and obj is not None:
            self.on_readout(t, obj, steps)
        return improved

    def prepare_phase(self, sig_now: float) -> tuple[tuple[int, int] | None, Any, Any]:
        """Windows around the current means (per-op, or one step window with a rebuilt model)
        and the projection box; projects the means into it. Returns ``(win, lo_t, hi_t)``."""
        settings, torch = self.settings, self.torch
        mu_cur = (self.theta.detach() * self.scale).cpu().numpy()
        if self.per_op:
            win = None
            blo, bhi = self.model.set_windows(
                mu_cur,
                self.current_sigma().cpu().numpy(),
                settings.window_k,
                settings.window_slack,
            )
            lo_t = self._scaled(np.maximum(self.lo, blo))
            hi_t = self._scaled(np.minimum(self.hi, bhi))
        else:
            II = self.II if self.model.formulation == "C" else None
            win = _window(mu_cur, sig_now, self.D, II, float(settings.window_margin))
            if settings.window and win is not None:
                self.model = self.make_model(win)
            elif self.model.D != self.D:
                self.model = self.make_model(None)
            lo_t, hi_t = self.box(win if settings.window else None, sig_now)
        with torch.no_grad():
            self.theta.copy_(torch.minimum(torch.maximum(self.theta, lo_t), hi_t))
        return win, lo_t, hi_t

    def inner_phase(self, steps: int, lo_t: Any, hi_t: Any) -> bool:
        """``steps`` projected Adam steps on the augmented Lagrangian (closed-form gradient,
        no autograd graph), with the early read-outs; True when one of those improved."""
        settings, torch, scale = self.settings, self.torch, self.scale
        phase_loss, phase_viol = [], []
        phase_improved = False
        for _ in range(steps):
            if self.time_to_stop():
                break
            began = time.perf_counter()
            with torch.no_grad():
                sig_t = self.current_sigma()
                f, g, g_mu, g_sig = self.model.loss_and_grad(
                    self.theta * scale,
                    sig_t,
                    ratio=self.ratio,
                    f_weight=1.0 / self.f0,
                    lam=self.lam,
                    rho=self.rho,
                )
                gsum = g.sum()
                loss = f / self.f0 + (self.lam * g).sum() + 0.5 * self.rho * (g * g).sum()
                grads: tuple = (g_mu * scale,)
                if self.rho_param is not None:
                    loss = loss + settings.sigma_penalty * sig_t.sum()
                    grads += ((g_sig + settings.sigma_penalty) * torch.sigmoid(self.rho_param),)
                self.opt.step(grads)
                self.theta.copy_(torch.minimum(torch.maximum(self.theta, lo_t), hi_t))
            self.it += 1
            self.step_seconds = time.perf_counter() - began
            it = self.it
            if it in self.early and it % settings.inner_steps and it < settings.max_iters:
                phase_improved |= self.read_out(it)
            phase_loss.append(loss)
            phase_viol.append(gsum)
            if self.on_progress is not None:
                self.v_now = float(gsum)
                self.on_progress(self.event(float(loss)))
        if phase_loss:
            # one conversion per phase instead of two scalar reads per step
            self.loss_hist.extend(torch.stack(phase_loss).tolist())
            self.viol_hist.extend(torch.stack(phase_viol).tolist())
            self.v_now = self.viol_hist[-1]
        return phase_improved

    def event(self, loss: float) -> ProgressEvent:
        """The progress event after the current Adam step."""
        return ProgressEvent(
            "alm",
            seconds=time.perf_counter() - self.start,
            incumbent=self.best_obj,
            method="gaus",
            step=self.it,
            total=self.settings.max_iters,
            message=f"loss {loss:.4g}, violation {self.v_now:.3g}",
        )

    def update_multipliers(self) -> None:
        """ALM update after a phase: ``lam += rho g``; ``rho`` grows by ``gamma`` when the
        violation fell by less than a quarter; fixed widths decay by ``sigma_decay``."""
        settings, torch = self.settings, self.torch
        with torch.no_grad():
            _, g = self.model.evaluate(
                self.theta * self.scale, self.current_sigma(), ratio=self.ratio
            )
            self.lam = self.lam + self.rho * g
            self.v_now = float(g.sum())
            if self.v_now > 0.75 * self.prev_v:
                self.rho = min(self.rho * settings.gamma, settings.rho_max)
            self.prev_v = self.v_now
            if self.rho_param is None:
                self.sigma = torch.clamp(
                    self.sigma * settings.sigma_decay, min=settings.sigma_final
                )

    def run(self) -> ALMOutcome:
        """Outer iterations until the step cap, the patience (once the widths are hard) or
        the time limit; returns the best legal schedule and the histories."""
        settings = self.settings
        stale = 0
        message = "iteration cap reached"
        while self.it < settings.max_iters:
            if self.time_to_stop():
                message = "deadline reached"
                break
            steps = min(settings.inner_steps, settings.max_iters - self.it)
            sig_now = float(self.current_sigma().max())
            win, lo_t, hi_t = self.prepare_phase(sig_now)
            self.opt.lr = settings.lr * max(sig_now / self.sig0, settings.lr_floor)
            phase_improved = self.inner_phase(steps, lo_t, hi_t)
            if self.time_to_stop():  # the last read-out, if it still fits; no ALM update
                if not self.past_deadline():
                    self.read_out(self.it)
                message = "deadline reached"
                break
            self.update_multipliers()
            if self.read_out(self.it) or phase_improved:
                stale = 0
            else:
                stale += 1
            log.info(
                "GauS step %d (window %s): loss %.4g, violation %.4g, rho %.3g, best %s",
                self.it,
                win,
                self.loss_hist[-1] if self.loss_hist else float("nan"),
                self.v_now,
                self.rho,
                self.best_obj,
            )
            hardened = float(self.current_sigma().max()) <= settings.harden_sigma
            if self.best_t is not None and stale >= settings.patience and hardened:
                message = f"no improvement for {settings.patience} outer iterations"
                break
            elapsed = time.perf_counter() - self.start
            if settings.time_limit is not None and elapsed > settings.time_limit:
                message = "time limit reached"
                break
            if self.past_deadline():
                message = "deadline reached"
                break
        return ALMOutcome(
            best_t=self.best_t,
            best_obj=self.best_obj,
            mu=(self.theta.detach() * self.scale).cpu().numpy().astype(np.float64),
            iterations=self.it,
            expected_violation=self.v_now,
            loss_history=self.loss_hist,
            violation_history=self.viol_hist,
            objective_history=self.obj_hist,
            message=message,
        )
