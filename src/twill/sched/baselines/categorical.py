"""Categorical Gumbel-softmax scheduler in the manner of GS-Schedule (Liu et al., ICML 2024),
formulation A only.

Parameters: one logit per (node, step), ``D * |V|`` values (plus a batch of restarts).
Sampling, per topological generation (vectorised over the generation and the batch): a Gumbel
softmax at temperature ``tau``, a stage bias ``log(D + 1 - d)`` and a mask that removes the
steps before the sampled earliest start allowed by the predecessors; a hard argmax with a
straight-through gradient. Samples are therefore always legal (non-strict precedence with
``d = 0`` as on GS-Schedule data; general ``d`` is honoured by the mask). Loss per sample:
``comm / #nonzero edges + ratio_h * (-H(p))`` with ``p_s = S_s / sum w`` the per-step usage
distribution (entropy as a balancing proxy for the peak). Optimiser: Adam with GS-Schedule's
cosine learning rate (period 50 epochs; AdamW's weight decay is left out). Roots start at
``10 * onehot(0)``, other nodes at ``onehot(0)``.

Objective evaluated and reported: the exact formulation-A objective of the best legal sample.
Guarantee: heuristic; every returned schedule is verified. This is a restatement of the
published algorithm, not its code; differences: float32 on CPU, a smaller default batch and
epoch count, and the legality check time is included in ``seconds``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from twill.errors import InvalidProblemError
from twill.options import MethodSettings, SolverOptions
from twill.progress import ProgressEvent, emit
from twill.registry import register_solver
from twill.results import SolveResult, Status
from twill.sched.baselines.common import RunSpec, keyword_problem, package, reported
from twill.sched.gaus.graph import GauSGraph, asap_alap, topological_generations
from twill.sched.gaus.problem import GauSProblem
from twill.sched.gaus.verify import objective_a
from twill.sched.ir import DependenceGraph
from twill.validation import check_instance, check_int, check_real

if TYPE_CHECKING:
    import torch

__all__ = ["GumbelSettings", "gumbel_schedule", "solve"]


@dataclass(frozen=True)
class GumbelSettings(MethodSettings, slot="gumbel"):
    """The Gumbel-softmax baseline's own knobs (``SolverOptions.gumbel``).

    GS-Schedule's README uses 500 epochs, batch 250, tau 50, lr 1, ratio 100 on a GPU; the CPU
    defaults keep tau, lr and ratio and shrink epochs and batch.
    """

    epochs: int = 100
    batch: int = 16
    tau: float = 50.0
    lr: float = 1.0
    entropy_ratio: float = 100.0

    def to_dict(self) -> dict[str, float]:
        """JSON-ready fields."""
        return asdict(self)

    def __post_init__(self) -> None:
        check_int(self.epochs, "epochs", minimum=0)
        check_int(self.batch, "batch")
        for name in ("tau", "lr"):
            check_real(getattr(self, name), name)
        check_real(self.entropy_ratio, "entropy_ratio", strict=False)


@register_solver("gumbel", problems=(GauSProblem,), settings=GumbelSettings)
def solve(problem: GauSProblem, options: SolverOptions | None = None) -> SolveResult:
    """GS-Schedule-style categorical scheduling of ``problem`` (formulation A only).

    ``options``: ``seed`` seeds the Gumbel noise, ``threads`` are torch's threads during the
    run, ``time_limit`` is checked before every epoch (the best legal sample so far is
    returned), ``on_progress`` gets one event per epoch, ``gumbel`` holds the
    :class:`GumbelSettings`.
    """
    check_instance(problem, "problem", GauSProblem)
    if problem.formulation != "A":
        raise InvalidProblemError(
            "the categorical (GS-Schedule) baseline supports formulation A only"
        )
    options = SolverOptions.of(options).start()  # the deadline counts from the call
    settings = options.gumbel or GumbelSettings()
    if not isinstance(settings, GumbelSettings):
        raise InvalidProblemError(
            f"options.gumbel must be a GumbelSettings, found {type(settings).__name__}"
        )
    start = time.perf_counter()
    problem.check()
    g, D, ratio = problem.arrays, problem.steps, problem.ratio
    gens = topological_generations(g)
    asap, alap = asap_alap(g, D, gens)
    spec = RunSpec("gumbel", "A", D, None, ratio, start)
    if np.any(asap > alap):
        return reported(package(g, None, spec, f"infeasible at D={D}", status=Status.INFEASIBLE,
                                infeasible_cause="D"), options)  # fmt: skip
    best_t, it = _epochs(g, D, alap, gens, ratio, settings, options, start)
    message = "legal" if best_t is not None else "no sample"
    return reported(package(g, best_t, spec, message, iterations=it), options)


def gumbel_schedule(
    g: DependenceGraph,
    formulation: str = "A",
    *,
    D: int | None = None,
    ratio: float = 100.0,
    settings: GumbelSettings | None = None,
    seed: int = 30,
    time_limit: float | None = None,
) -> SolveResult:
    """:func:`solve` on the problem, settings (``None``: :class:`GumbelSettings`' defaults)
    and options these keywords describe (GS-Schedule's seed 30 by default)."""
    settings = GumbelSettings() if settings is None else settings
    options = SolverOptions(time_limit=time_limit, seed=seed, gumbel=settings)
    return solve(keyword_problem(g, formulation, D, None, ratio), options)


def _epochs(
    g: GauSGraph,
    D: int,
    alap: np.ndarray,
    gens: list[np.ndarray],
    ratio: float,
    settings: GumbelSettings,
    options: SolverOptions,
    start: float,
) -> tuple[np.ndarray | None, int]:
    """The training loop: ``(best legal sample or None, epochs run)``; stops at the time
    limit (checked before every epoch) and reports every epoch to ``options.on_progress``."""
    import torch

    from twill.sched.gaus.alm import Adam

    old_threads = torch.get_num_threads()
    torch.set_num_threads(options.threads)
    lr, batch = settings.lr, settings.batch
    logits = _initial_logits(g, D, batch)
    adam = Adam([logits], lr=lr)
    sampler = _Sampler.build(g, D, alap, gens, batch, settings.tau, options.seed)
    best_t, best_obj = None, None
    it = 0
    try:
        for epoch in range(settings.epochs):
            if options.clock.passed():
                break
            adam.lr = 1e-7 + 0.5 * (lr - 1e-7) * (1 + np.cos(np.pi * (epoch % 50) / 50))
            onehot, stage = sampler.sample(logits)
            adam.step(torch.autograd.grad(sampler.loss(onehot, settings.entropy_ratio), [logits]))
            it += 1
            st_np = stage.numpy()
            objs = [objective_a(g, st_np[b], ratio) for b in range(batch)]
            b = int(np.argmin(objs))
            if best_obj is None or objs[b] < best_obj:
                best_obj, best_t = objs[b], st_np[b].copy()
            emit(options.on_progress, ProgressEvent(
                "epoch", seconds=time.perf_counter() - start, incumbent=best_obj,
                method="gumbel", step=it, total=settings.epochs))  # fmt: skip
    finally:
        torch.set_num_threads(old_threads)
    return best_t, it


def _initial_logits(g: GauSGraph, D: int, batch: int) -> torch.Tensor:
    """GS-Schedule's start: logits ``10 * onehot(0)`` for roots, ``onehot(0)`` for the other
    nodes, repeated over the batch (a leaf tensor that Adam updates)."""
    import torch

    indeg = np.bincount(g.dst[g.forward], minlength=g.n)
    init = np.zeros((g.n, D), dtype=np.float32)
    init[:, 0] = np.where(indeg == 0, 10.0, 1.0)
    return torch.tensor(np.broadcast_to(init, (batch, g.n, D)).copy(), requires_grad=True)


@dataclass
class _Sampler:
    """The fixed tensors of one run: edges, per-generation node and edge lists, the stage
    bias and the Gumbel noise generator (built once, used by every epoch)."""

    n: int
    D: int
    batch: int
    tau: float
    gen_t: torch.Generator
    src: torch.Tensor
    dst: torch.Tensor
    dly: torch.Tensor
    w: torch.Tensor
    cmask: torch.Tensor
    n_comm: int
    steps: torch.Tensor
    alap_t: torch.Tensor
    bias: torch.Tensor
    gens_t: list[torch.Tensor]
    edges_of_gen: list[torch.Tensor]

    @classmethod
    def build(
        cls,
        g: GauSGraph,
        D: int,
        alap: np.ndarray,
        gens: list[np.ndarray],
        batch: int,
        tau: float,
        seed: int,
    ) -> _Sampler:
        """Tensors for ``g`` at latency bound ``D``; the noise is seeded with ``seed``."""
        import torch

        gen_t = torch.Generator().manual_seed(seed)
        fwd = g.forward
        cmask = torch.as_tensor(g.comm[fwd] > 0)
        gen_of = np.empty(g.n, dtype=np.int64)
        for k, nodes in enumerate(gens):
            gen_of[nodes] = k
        return cls(
            n=g.n,
            D=D,
            batch=batch,
            tau=tau,
            gen_t=gen_t,
            src=torch.as_tensor(g.src[fwd]),
            dst=torch.as_tensor(g.dst[fwd]),
            dly=torch.as_tensor(g.delay[fwd]),
            w=torch.tensor(g.usage.sum(axis=(1, 2)), dtype=torch.float32),
            cmask=cmask,
            n_comm=max(int(cmask.sum()), 1),
            steps=torch.arange(D),
            alap_t=torch.as_tensor(alap),
            bias=torch.log(torch.arange(D + 1, 1, -1, dtype=torch.float32)),
            gens_t=[torch.as_tensor(x) for x in gens],
            edges_of_gen=[
                torch.as_tensor(np.flatnonzero(gen_of[g.dst[fwd]] == k)) for k in range(len(gens))
            ],
        )

    def sample(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One legal sample per batch row, generation by generation: Gumbel softmax, the
        ALAP mask, the mask of steps before the predecessors allow and the stage bias, then a
        hard argmax with a straight-through gradient. Returns ``(onehot [batch, n, D],
        stage [batch, n])``."""
        import torch

        batch, n, D, steps = self.batch, self.n, self.D, self.steps
        stage = torch.zeros(batch, n, dtype=torch.long)
        onehot = torch.zeros(batch, n, D)
        for k, nodes in enumerate(self.gens_t):
            lg = logits[:, nodes, :]
            gum = -torch.log(-torch.log(torch.rand(lg.shape, generator=self.gen_t) + 1e-20) + 1e-20)
            y = torch.softmax((lg + gum) / self.tau, dim=-1)
            e = self.edges_of_gen[k]
            late = (steps[None, None, :] <= self.alap_t[nodes][None, :, None]).float()
            y = torch.softmax(torch.log(y + 1e-20) + torch.log(late + 1e-20), dim=-1)
            if e.numel():
                earliest = torch.zeros(batch, n, dtype=torch.long)
                earliest = earliest.scatter_reduce(
                    1,
                    self.dst[e].expand(batch, -1),
                    stage[:, self.src[e]] + self.dly[e],
                    reduce="amax",
                )[:, nodes]
                mask = (steps[None, None, :] >= earliest[:, :, None]).float() * late
                y = torch.softmax(
                    torch.log(y + 1e-20) + self.bias * mask + torch.log(mask + 1e-20), dim=-1
                )
            hard = torch.nn.functional.one_hot(y.argmax(-1), D).float()
            st = hard - y.detach() + y
            onehot = onehot.index_copy(1, nodes, st)
            stage[:, nodes] = hard.argmax(-1)
        return onehot, stage

    def loss(self, onehot: torch.Tensor, entropy_ratio: float) -> torch.Tensor:
        """Summed over the batch: communication per nonzero edge minus ``entropy_ratio`` times
        the entropy of the per-step usage distribution (GS-Schedule's balancing proxy)."""
        import torch

        S = torch.einsum("bnd,n->bd", onehot, self.w)
        p = S / S.sum(dim=1, keepdim=True).clamp_min(1e-9)
        ent = -(p * torch.log(p + 1e-12)).sum(dim=1)
        pos = (onehot * self.steps).sum(-1)
        comm = ((pos[:, self.dst] - pos[:, self.src]) * self.cmask).sum(dim=1) / self.n_comm
        return (comm - entropy_ratio * ent).sum()
