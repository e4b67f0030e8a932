"""GauS losses on per-operator support windows (GauS paper; ``docs/gaus.md``, "Large graphs").

:class:`~twill.sched.gaus.losses.LossModel` evaluates every op on one shared window of steps, so
its tensors are ``[n, W]`` with ``W`` up to ``D``: on a deep graph (EPFL ``div``: 57k ops,
``D = 4373``) that is ``n * D`` floats per tensor. Here each op ``i`` has its own window of
steps ``[a_i, a_i + L_i)``:

* its feasible range ``[ASAP_i, ALAP_i]`` (under the modulo bounds in formulation C), cut to
  ``mu_i +- (k sigma_i + slack)`` (settings ``window_k``, ``window_slack``), recomputed each
  outer iteration by :meth:`SparseLossModel.set_windows`;
* the probability mass outside the window is folded into its edge steps (clipped, per op):
  ``C_i(s) = 0`` for ``s < a_i``, ``Phi((s + 1/2 - mu_i)/sigma_i)`` inside, ``1`` from
  ``a_i + L_i - 1`` on.

Windows are padded to the longest one (``Wp`` columns, one bucket): ``C`` and ``P`` are
``[n, Wp]`` and every edge term ``[E, Wp]``; padding columns hold ``C = 1``, ``P = 0``. Sums over
steps (resource usage, live memory) are ``index_add`` segment sums into 1-D step vectors; a
value's lifetime between the end of its own window and the start of its consumers' windows is a
constant 1 and goes in through a difference array, so long lifetimes cost nothing per step.

Exactness: with the same windows, every loss equals the dense model's (``LossModel`` built
with ``clip=(a, a + L - 1)``); ``tests/sched/gaus`` checks losses and gradients to 1e-6 in
float64. Gradients are taken by autograd through these ``[n, Wp]`` tensors (they are small, so
the graph costs little memory).

Terms (same formulas as ``losses.py``):

* violation of ``(u->v, d, delta)``: ``sum_s P_u(s) C_v(s + d - delta II - 1)``;
* communication: ``sum_s C_u(s)(1 - C_v(s))`` = u's window + v's window (minus the overlap) +
  the gap ``max(0, a_v - a_u - Wp)`` where both factors are 1;
* live value ``i``: ``C_i(s)(1 - M_i(s))`` with ``M_i(s) = prod_j C_j(s - delta_ij II)``, whose
  varying part lies in one window ``[m_i, m_i + Wp)``, ``m_i = max_j (a_j + delta_ij II)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from twill.sched.gaus.graph import GauSGraph
from twill.sched.gaus.losses import ALMWeights, LossBase, LossSpec

__all__ = ["SparseLossModel"]


@dataclass
class SparseLossModel(LossBase):
    """Loss model on per-op windows; build with :meth:`build`, then :meth:`set_windows`."""

    dtype: torch.dtype
    asap: np.ndarray
    alap: np.ndarray
    T: dict[str, torch.Tensor]
    scales: dict[str, float]
    a: np.ndarray = field(default=None)  # type: ignore[assignment]
    L: np.ndarray = field(default=None)  # type: ignore[assignment]
    win: dict[str, torch.Tensor] = field(default_factory=dict)
    Wp: int = 1

    @classmethod
    def build(
        cls,
        g: GauSGraph,
        spec: LossSpec,
        *,
        bounds: tuple[np.ndarray, np.ndarray],
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> SparseLossModel:
        """Static index tensors of the loss ``spec`` on ``g``; ``bounds = (ASAP, ALAP)`` are
        the feasible ranges (steps)."""
        D, formulation, II, tau = spec.D, spec.formulation, spec.II, spec.tau
        dev = torch.device(device)
        T: dict[str, torch.Tensor] = {}
        sc: dict[str, float] = {}
        modulo = formulation == "C"
        ii = int(II) if (modulo and II) else 0

        def ten(x: np.ndarray, dt: torch.dtype | None = None) -> torch.Tensor:
            return torch.as_tensor(np.ascontiguousarray(x), dtype=dt, device=dev)

        eidx = np.flatnonzero(np.ones(g.num_edges, bool) if modulo else g.forward)
        T["dep_src"] = ten(g.src[eidx], torch.int64)
        T["dep_dst"] = ten(g.dst[eidx], torch.int64)
        T["dep_shift"] = ten(g.delay[eidx] - g.distance[eidx] * ii - 1, torch.int64)
        T["usage"] = ten(g.usage, dtype)
        if formulation == "A":
            ce = eidx[(g.comm[eidx] > 0) & (g.distance[eidx] == 0)]
            T["comm_src"] = ten(g.src[ce], torch.int64)
            T["comm_dst"] = ten(g.dst[ce], torch.int64)
            T["comm_w"] = ten(g.comm[ce], dtype)
            totals = g.usage.sum(axis=(0, 2))
            keep = totals > 0
            T["res_keep"] = ten(np.flatnonzero(keep), torch.int64)
            T["res_scale"] = ten(np.maximum(totals[keep] / D, 1e-9), dtype)
        if modulo:
            finite = np.isfinite(g.caps) & (g.usage.sum(axis=(0, 2)) > 0)
            T["cap_keep"] = ten(np.flatnonzero(finite), torch.int64)
            T["cap"] = ten(np.maximum(g.caps[finite], 1e-9), dtype)
        if formulation in ("B", "C"):
            back = g.distance[eidx] * ii
            T["mem_src"] = T["dep_src"]
            T["mem_dst"] = T["dep_dst"]
            T["mem_back"] = ten(back, torch.int64)
            has_succ = np.zeros(g.n, bool)
            has_succ[g.src[eidx]] = True
            T["has_succ"] = ten(has_succ, dtype)
            T["live_out"] = ten(g.live_out & (not modulo), dtype)
            T["b"] = ten(g.mem, dtype)
            sc["mem_H"] = D + int(back.max(initial=0))
            sc["mem_unit"] = max(float(g.mem.sum()) / max(D, 1), 1e-9)
        asap, alap = (np.asarray(x, np.int64) for x in bounds)
        m = cls(g, D, II, formulation, tau, dev, dtype, asap, alap, T, sc)
        m.set_window_bounds(asap, alap)
        return m

    # -- windows -------------------------------------------------------------------------------

    def set_window_bounds(self, lo: np.ndarray, hi: np.ndarray) -> None:
        """Use windows ``[lo_i, hi_i]`` (inclusive steps, inside ``[0, D-1]``)."""
        lo = np.asarray(lo, np.int64)
        hi = np.maximum(np.asarray(hi, np.int64), lo)
        self.a, self.L = lo, hi - lo + 1
        self.Wp = int(self.L.max(initial=1))
        dev = self.device
        w = {
            "a": torch.as_tensor(lo, device=dev),
            "last": torch.as_tensor(self.L - 1, device=dev),
            "cols": torch.arange(self.Wp, device=dev),
        }
        if self.formulation in ("B", "C"):
            T = self.T
            ms, md = T["mem_src"].cpu().numpy(), T["mem_dst"].cpu().numpy()
            start = lo[md] + T["mem_back"].cpu().numpy()
            m = np.zeros(self.graph.n, np.int64)
            np.maximum.at(m, ms, start)
            w["m"] = torch.as_tensor(m, device=dev)
        self.win = w

    def set_windows(
        self, mu: np.ndarray, sigma: np.ndarray, k: float, slack: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Windows ``[ASAP, ALAP] ∩ [mu - k sigma - slack, mu + k sigma + slack]``.

        Returns the box ``(lo, hi)`` for the means: ``k sigma`` inside a cut edge, so at most
        ``Phi(-k)`` of an op's mass is folded there (no limit at ASAP/ALAP, where the fold is
        the model itself).
        """
        reach = k * sigma + slack
        lo = np.clip(np.floor(mu - reach).astype(np.int64), self.asap, self.alap)
        hi = np.clip(np.ceil(mu + reach).astype(np.int64), lo, self.alap)
        self.set_window_bounds(lo, hi)
        blo = np.where(lo > self.asap, lo + k * sigma, self.asap - 0.5)
        bhi = np.where(hi < self.alap, hi - k * sigma, self.alap + 0.5)
        return blo, np.maximum(bhi, blo)

    # -- distributions and gathers -------------------------------------------------------------

    def distribution(self, mu: torch.Tensor, sigma: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``(C, P)`` on every op's window, ``[n, Wp]`` (column ``j`` is step ``a_i + j``)."""
        w = self.win
        steps = (w["a"][:, None] + w["cols"][None, :]).to(mu.dtype)
        z = (steps + 0.5 - mu[:, None]) / sigma[:, None]
        C = torch.where(w["cols"][None, :] >= w["last"][:, None], 1.0, torch.special.ndtr(z))
        P = torch.diff(C, dim=1, prepend=torch.zeros_like(C[:, :1]))
        return C, P

    def _at(
        self, X: torch.Tensor, start: torch.Tensor, node: torch.Tensor, step: torch.Tensor
    ) -> torch.Tensor:
        """``X`` of ``node`` (``[E]``) at absolute ``step`` (``[E, Wp]``) for a window-shaped
        ``X`` starting at ``start``: 0 before the window, the last column after it."""
        local = step - start[node][:, None]
        idx = node[:, None] * self.Wp + local.clamp(0, self.Wp - 1)
        val = X.reshape(-1)[idx]
        return torch.where(local < 0, 0.0, val)

    def _steps(self, start: torch.Tensor, shift: torch.Tensor | int = 0) -> torch.Tensor:
        if isinstance(shift, torch.Tensor):
            shift = shift[:, None]
        return start[:, None] + self.win["cols"][None, :] + shift

    # -- terms ---------------------------------------------------------------------------------

    def dependency(self, C: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
        """Violation probability of every (forward, or in C every) edge, graph edge order."""
        T, a = self.T, self.win["a"]
        u, v = T["dep_src"], T["dep_dst"]
        cv = self._at(C, a, v, self._steps(a[u], T["dep_shift"]))
        return (P[u] * cv).sum(dim=1)

    def _pair_sum(
        self,
        F: torch.Tensor,
        fa: torch.Tensor,
        G: torch.Tensor,
        ga: torch.Tensor,
        x: torch.Tensor,
        y: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Pieces of ``F_x(s) (1 - G_y(s))`` over all steps, where ``F_x`` rises from 0 to 1
        in ``x``'s window (start ``fa``) and ``G_y`` in ``y``'s (start ``ga``).

        Returns ``(vx, vy, gap0, gap1)``: values on ``x``'s window columns, on ``y``'s columns
        (zero where they overlap ``x``'s), and the gap ``[gap0, gap1)`` where both factors are
        1 (empty when ``gap1 <= gap0``).
        """
        sx, sy = self._steps(fa[x]), self._steps(ga[y])
        vx = F[x] * (1.0 - self._at(G, ga, y, sx))
        outside = (sy < fa[x][:, None]) | (sy >= fa[x][:, None] + self.Wp)
        vy = torch.where(outside, self._at(F, fa, x, sy) * (1.0 - G[y]), 0.0)
        return vx, vy, fa[x] + self.Wp, ga[y]

    def communication(self, C: torch.Tensor) -> torch.Tensor:
        """Expected weighted number of crossed stage boundaries (formulation A)."""
        T, a = self.T, self.win["a"]
        vx, vy, g0, g1 = self._pair_sum(C, a, C, a, T["comm_src"], T["comm_dst"])
        gap = (g1 - g0).clamp_min(0).to(C.dtype)
        return (T["comm_w"] * (vx.sum(dim=1) + vy.sum(dim=1) + gap)).sum()

    def resource_peak(self, P: torch.Tensor) -> torch.Tensor:
        """``sum_k LSE_tau(E[R_k(.)])`` in usage units (formulation A)."""
        T = self.T
        keep = T["res_keep"]
        if keep.numel() == 0:
            return P.new_zeros(())
        usage = T["usage"][:, keep]
        Lr = usage.shape[2]
        steps = self._steps(self.win["a"]).reshape(-1)
        R = P.new_zeros(keep.numel(), self.D + self.Wp + Lr)
        for c in range(Lr):
            R = R.index_add(
                1,
                steps + c,
                (P[:, None, :] * usage[:, :, c, None]).permute(1, 0, 2).reshape(keep.numel(), -1),
            )
        R = R[:, : self.D + Lr - 1]
        scale = T["res_scale"]
        z = R / (scale[:, None] * self.tau)
        return (scale * self.tau * torch.logsumexp(z, dim=1)).sum()

    def modulo_resource(self, P: torch.Tensor) -> torch.Tensor:
        """``relu(U_k(r) - C_k) / C_k`` per limited resource and residue (formulation C)."""
        T = self.T
        keep = T["cap_keep"]
        if keep.numel() == 0:
            return P.new_zeros(0)
        II = int(self.II or 1)
        usage = T["usage"][:, keep]
        steps = self._steps(self.win["a"]).reshape(-1)
        U = P.new_zeros(keep.numel(), II)
        for c in range(usage.shape[2]):
            vals = (P[:, None, :] * usage[:, :, c, None]).permute(1, 0, 2).reshape(keep.numel(), -1)
            U = U.index_add(1, (steps + c) % II, vals)
        cap = T["cap"][:, None]
        return (torch.relu(U - cap) / cap).reshape(-1)

    def live_memory(self, C: torch.Tensor) -> torch.Tensor:
        """Expected live memory ``Reg(s)`` for ``s < H`` (formulations B, C)."""
        T, w = self.T, self.win
        a, m = w["a"], w["m"]
        n, Wp = C.shape
        H = int(self.scales["mem_H"])
        src, dst = T["mem_src"], T["mem_dst"]
        # M_i on its window [m_i, m_i + Wp): product of the consumers' CDFs
        cj = self._at(C, a, dst, self._steps(m[src]) - T["mem_back"][:, None])
        logM = C.new_zeros(n, Wp).index_add(0, src, torch.log(cj.clamp_min(1e-12)))
        M = torch.exp(logM)
        nodes = torch.arange(n, device=C.device)
        vx, vy, g0, g1 = self._pair_sum(C, a, M, m, nodes, nodes)
        hs, lo, b = T["has_succ"], T["live_out"], T["b"]
        size = H + 2 * Wp
        reg = C.new_zeros(size)
        reg = reg.index_add(
            0,
            self._steps(a).reshape(-1),
            ((hs * b)[:, None] * vx + (lo * b)[:, None] * C).reshape(-1),
        )
        reg = reg.index_add(0, self._steps(m).reshape(-1), ((hs * b)[:, None] * vy).reshape(-1))
        # constant-1 stretches: the gap (alive) and, for live-out values, after the window
        diff = C.new_zeros(size + 1)
        gap = g1 > g0
        diff = diff.index_add(0, g0[gap], (hs * b)[gap]).index_add(0, g1[gap], -(hs * b)[gap])
        end = (a + Wp).clamp_max(size)
        diff = diff.index_add(0, end, lo * b)
        return (reg + torch.cumsum(diff, 0)[:size])[:H]

    def evaluate(
        self, mu: torch.Tensor, sigma: torch.Tensor, *, ratio: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(f, g)``: smooth objective and violation vector, as ``LossModel.evaluate``."""
        C, P = self.distribution(mu, sigma)
        g = self.dependency(C, P)
        if self.formulation == "A":
            return ratio * self.resource_peak(P) + self.communication(C), g
        reg = self.live_memory(C)
        if self.formulation == "B":
            unit = self.scales["mem_unit"]
            return unit * self.tau * torch.logsumexp(reg / (unit * self.tau), dim=0), g
        II = int(self.II or 1)
        pad = (-reg.shape[0]) % II
        folded = torch.cat([reg, reg.new_zeros(pad)]).reshape(-1, II).sum(dim=0)
        unit = self.scales["mem_unit"] * max(1, self.D // II) * self.tau
        f = unit * torch.logsumexp(folded / unit, dim=0)
        return f, torch.cat([g, self.modulo_resource(P)])

    def _lagrangian_grad(
        self, mu: torch.Tensor, sigma: torch.Tensor, w: ALMWeights
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`loss_and_grad` by autograd through :meth:`evaluate`."""
        with torch.enable_grad():
            mu_ = mu.detach().requires_grad_(True)
            sig_ = sigma.detach().requires_grad_(True)
            f, g = self.evaluate(mu_, sig_, ratio=w.ratio)
            loss = w.f_weight * f + 0.5 * w.rho * (g * g).sum()
            if w.lam is not None:
                loss = loss + (w.lam * g).sum()
            d_mu, d_sig = torch.autograd.grad(loss, (mu_, sig_))
        return f.detach(), g.detach(), d_mu, d_sig
