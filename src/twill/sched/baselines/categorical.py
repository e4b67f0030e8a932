"""Categorical Gumbel-softmax scheduler in the manner of GS-Schedule (Liu et al., ICML 2024;
GauS spec §9.4), formulation A only.

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

import numpy as np

from twill.errors import InvalidProblemError
from twill.results import Status
from twill.sched.baselines.common import package
from twill.sched.gaus.bounds import default_D
from twill.sched.gaus.graph import GauSGraph, asap_alap, topological_generations
from twill.sched.gaus.result import ScheduleRunResult
from twill.sched.gaus.verify import objective_a

__all__ = ["gumbel_schedule"]


def gumbel_schedule(
    g: GauSGraph,
    formulation: str = "A",
    *,
    D: int | None = None,
    ratio: float = 100.0,
    epochs: int = 100,
    batch: int = 16,
    tau: float = 50.0,
    lr: float = 1.0,
    entropy_ratio: float = 100.0,
    seed: int = 30,
    time_limit: float | None = None,
) -> ScheduleRunResult:
    """GS-Schedule-style categorical scheduling (formulation A).

    Parameters
    ----------
    epochs, batch, tau, lr, entropy_ratio
        GS-Schedule's README uses 500 epochs, batch 250, tau 50, lr 1, ratio 100 on a GPU; the
        CPU defaults keep tau, lr and ratio and shrink epochs and batch.
    seed
        Seeds the Gumbel noise (GS-Schedule uses 30).
    """
    if formulation != "A":
        raise InvalidProblemError(
            "the categorical (GS-Schedule) baseline supports formulation A only"
        )
    import torch

    start = time.perf_counter()
    D = int(D) if D is not None else default_D(g, "A")
    gens = topological_generations(g)
    asap, alap = asap_alap(g, D, gens)
    common = dict(method="gumbel", formulation="A", D=D, II=None, ratio=ratio, start=start)
    if np.any(asap > alap):
        return package(g, None, message=f"infeasible at D={D}", status=Status.INFEASIBLE,
                       infeasible_cause="D", **common)  # fmt: skip
    gen_t = torch.Generator().manual_seed(seed)
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    n = g.n
    indeg = np.bincount(g.dst[g.forward], minlength=n)
    init = np.zeros((n, D), dtype=np.float32)
    init[:, 0] = np.where(indeg == 0, 10.0, 1.0)
    logits = torch.tensor(np.broadcast_to(init, (batch, n, D)).copy(), requires_grad=True)
    from twill.sched.gaus.alm import _Adam

    adam = _Adam([logits], lr=lr)
    fwd = g.forward
    src = torch.as_tensor(g.src[fwd])
    dst = torch.as_tensor(g.dst[fwd])
    dly = torch.as_tensor(g.delay[fwd])
    w = torch.tensor(g.usage.sum(axis=(1, 2)), dtype=torch.float32)
    cmask = torch.as_tensor(g.comm[fwd] > 0)
    n_comm = max(int(cmask.sum()), 1)
    steps = torch.arange(D)
    alap_t = torch.as_tensor(alap)
    bias = torch.log(torch.arange(D + 1, 1, -1, dtype=torch.float32))
    gen_of = np.empty(n, dtype=np.int64)
    for k, nodes in enumerate(gens):
        gen_of[nodes] = k
    edges_of_gen = [
        torch.as_tensor(np.flatnonzero(gen_of[g.dst[fwd]] == k)) for k in range(len(gens))
    ]
    gens_t = [torch.as_tensor(x) for x in gens]
    best_t, best_obj = None, None
    it = 0
    try:
        for epoch in range(epochs):
            if time_limit is not None and time.perf_counter() - start > time_limit:
                break
            lr_now = 1e-7 + 0.5 * (lr - 1e-7) * (1 + np.cos(np.pi * (epoch % 50) / 50))
            adam.lr = lr_now
            stage = torch.zeros(batch, n, dtype=torch.long)
            onehot = torch.zeros(batch, n, D)
            for k, nodes in enumerate(gens_t):
                lg = logits[:, nodes, :]
                gum = -torch.log(-torch.log(torch.rand(lg.shape, generator=gen_t) + 1e-20) + 1e-20)
                y = torch.softmax((lg + gum) / tau, dim=-1)
                e = edges_of_gen[k]
                late = (steps[None, None, :] <= alap_t[nodes][None, :, None]).float()
                y = torch.softmax(torch.log(y + 1e-20) + torch.log(late + 1e-20), dim=-1)
                if e.numel():
                    earliest = torch.zeros(batch, n, dtype=torch.long)
                    earliest = earliest.scatter_reduce(
                        1, dst[e].expand(batch, -1), stage[:, src[e]] + dly[e], reduce="amax"
                    )[:, nodes]
                    mask = (steps[None, None, :] >= earliest[:, :, None]).float() * late
                    y = torch.softmax(
                        torch.log(y + 1e-20) + bias * mask + torch.log(mask + 1e-20), dim=-1
                    )
                hard = torch.nn.functional.one_hot(y.argmax(-1), D).float()
                st = hard - y.detach() + y
                onehot = onehot.index_copy(1, nodes, st)
                stage[:, nodes] = hard.argmax(-1)
            S = torch.einsum("bnd,n->bd", onehot, w)
            p = S / S.sum(dim=1, keepdim=True).clamp_min(1e-9)
            ent = -(p * torch.log(p + 1e-12)).sum(dim=1)
            pos = (onehot * steps).sum(-1)
            comm = ((pos[:, dst] - pos[:, src]) * cmask).sum(dim=1) / n_comm
            loss = (comm - entropy_ratio * ent).sum()
            grads = torch.autograd.grad(loss, [logits])
            adam.step(grads)
            it += 1
            st_np = stage.numpy()
            objs = [objective_a(g, st_np[b], ratio) for b in range(batch)]
            b = int(np.argmin(objs))
            if best_obj is None or objs[b] < best_obj:
                best_obj, best_t = objs[b], st_np[b].copy()
    finally:
        torch.set_num_threads(old_threads)
    return package(
        g, best_t, message="legal" if best_t is not None else "no sample", iterations=it, **common
    )
