"""Per-operator windows: the sparse losses equal the dense ones (same windows), A, B and C."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from twill.gaus_solver import GauSSolver, generate_random_dag
from twill.sched.gaus.graph import asap_alap, from_dependence_graph


def _graph(delays: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    g = from_dependence_graph(generate_random_dag(40, 0.1, 4, seed=seed))
    return dataclasses.replace(
        g,
        comm=rng.integers(0, 3, g.num_edges).astype(float),
        delay=rng.integers(0, delays, g.num_edges),
        usage=rng.integers(0, 3, (g.n, 2, 2)).astype(float),
        caps=np.array([4.0, np.inf]),
        live_out=rng.random(g.n) < 0.3,
    )


@pytest.mark.parametrize(
    ("form", "D", "II", "delays", "cut"),
    [
        ("A", 30, None, 3, False),
        ("A", 40, None, 3, True),
        ("B", 30, None, 3, False),
        ("B", 40, None, 4, True),
        ("C", 60, 5, 3, False),
        ("C", 90, 5, 4, True),
    ],
)
def test_sparse_equals_dense(form, D, II, delays, cut) -> None:
    import torch

    from twill.sched.gaus.losses import LossModel, LossSpec
    from twill.sched.gaus.sparse import SparseLossModel

    g = _graph(delays)
    asap, alap = asap_alap(g, D)
    assert np.all(asap <= alap)
    f64 = torch.float64
    sp = SparseLossModel.build(g, LossSpec(form, D, II), bounds=(asap, alap), dtype=f64)
    gen = torch.Generator().manual_seed(1)
    span = torch.as_tensor(alap - asap, dtype=f64)
    mu = torch.as_tensor(asap, dtype=f64) + torch.rand(g.n, generator=gen, dtype=f64) * span
    sig = 0.2 + 0.6 * torch.rand(g.n, generator=gen, dtype=f64)
    if cut:  # windows cut to mu +- 2 sigma + 1 (narrower than ASAP..ALAP)
        sp.set_windows(mu.numpy(), sig.numpy(), 2.0, 1.0)
        assert sp.Wp < int((alap - asap).max()) + 1
    lo, hi = sp.a, sp.a + sp.L - 1
    dense = LossModel.build(g, LossSpec(form, D, II), dtype=f64, clip=(lo, hi))
    mu_d, sig_d = mu.clone().requires_grad_(True), sig.clone().requires_grad_(True)
    f, viol = dense.evaluate(mu_d, sig_d, ratio=3.0)
    lam = torch.rand(viol.shape, generator=gen, dtype=f64)
    loss = 0.4 * f + (lam * viol).sum() + 0.35 * (viol * viol).sum()
    d_mu, d_sig = torch.autograd.grad(loss, (mu_d, sig_d))
    # the dense violation vector is in its sorted edge order; the sparse one in graph order
    f_s, v_s = sp.evaluate(mu, sig, ratio=3.0)
    ne = sp.T["dep_src"].numel()
    assert float(f_s) == pytest.approx(float(f.detach()), abs=1e-6, rel=1e-9)
    assert torch.allclose(
        torch.sort(v_s[:ne]).values, torch.sort(viol[:ne].detach()).values, atol=1e-6
    )
    assert torch.allclose(v_s[ne:], viol[ne:].detach(), atol=1e-6)
    # same multipliers per edge: map the dense order onto graph order through the model
    order = _dense_edge_order(dense, sp)
    lam_s = lam.clone()
    lam_s[:ne] = lam[:ne][order]
    f2, v2, c_mu, c_sig = sp.loss_and_grad(mu, sig, ratio=3.0, f_weight=0.4, lam=lam_s, rho=0.7)
    assert torch.allclose(v2[:ne], viol[:ne].detach()[order], atol=1e-6)
    assert torch.allclose(c_mu, d_mu, atol=1e-6)
    assert torch.allclose(c_sig, d_sig, atol=1e-6)


def _dense_edge_order(dense, sp) -> np.ndarray:
    """Index into the dense (sorted) edge order for each sparse (graph-order) edge."""
    import torch

    d_src = dense.tensors["dep_src"].numpy()
    d_dst = np.concatenate([grp.dst.numpy() for grp in dense.dep_groups])
    d_shift = np.concatenate([np.full(grp.r1 - grp.r0, grp.shift) for grp in dense.dep_groups])
    mixed = [grp for grp in dense.dep_groups if grp.cols is not None]
    if mixed:  # per-edge shifts of the mixed group: read back from its column index
        grp = mixed[0]
        d_shift[grp.r0 : grp.r1] = grp.cols[:, 0].numpy() - int(dense.scales["pad_l"])
    key = {(int(u), int(v), int(s)): [] for u, v, s in zip(d_src, d_dst, d_shift, strict=True)}
    for i, k in enumerate(zip(d_src, d_dst, d_shift, strict=True)):
        key[tuple(int(x) for x in k)].append(i)
    s_src, s_dst = sp.T["dep_src"].numpy(), sp.T["dep_dst"].numpy()
    s_shift = sp.T["dep_shift"].numpy()
    out = [
        key[(int(u), int(v), int(s))].pop() for u, v, s in zip(s_src, s_dst, s_shift, strict=True)
    ]
    return torch.as_tensor(out)


@pytest.mark.parametrize("form", ["A", "B"])
def test_solver_sparse_default_and_dense_setting_both_legal(form) -> None:
    g = generate_random_dag(80, 0.06, 0, seed=5)
    sparse = GauSSolver(g, D=60, max_iters=200).solve(form)
    dense = GauSSolver(g, D=60, max_iters=200, sparse=False).solve(form)
    assert sparse.legal and dense.legal
    assert sparse.settings["loss_model"] == "per-op windows"
    assert dense.settings["loss_model"] == "dense"
    # same problem, different evaluation: the objectives stay close
    assert sparse.objective <= 1.1 * dense.objective
