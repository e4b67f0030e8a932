"""Closed-form expected losses of GauS (GauS spec ``gaus.md`` §2–§3, formulations A/B/C in §4).

Each op ``i`` has a start step ``X_i ~ N(mu_i, sigma_i^2)`` rounded to the nearest integer, with
the tails clipped into the end bins (spec §2, choice (a)):

    C_i(s) = Phi((s + 1/2 - mu_i) / sigma_i)  for s <= D-2,   C_i(D-1) = 1,
    P_i(s) = C_i(s) - C_i(s-1).

Every term below is an expectation under independent Gaussians, computed as dense tensor
operations over ``[n, D]`` or ``[E, D]``, with no Python loop over nodes or edges (the only
loops run over reservation-table rows, which are few):

* dependency / recurrence violation per edge ``(u->v, d, delta)`` (§3.1, exact for any d):
  ``g_e = sum_a P_u(a) C_v(a + d - delta*II - 1)``;
* resource peak (§3.2): ``sum_k LSE_tau(E[R_k(.)])`` with usage normalised by the balanced level
  ``sum_i w_ik / D`` so that ``tau`` is relative;
* modulo resource (§3.3): probabilities wrapped onto ``II`` slots, violation
  ``relu(U_k(r) - C_k) / C_k``;
* memory (§3.4): ``E[Reg(s)] = sum_i b_i C_i(s) (1 - prod_j C_j(s))`` and its LSE peak; ops
  without successors count only when ``live_out`` (then ``b_i C_i(s)``);
* modulo memory (§3.5): lifetimes to ``max_j (t_j + delta_ij II)`` folded onto residues;
* communication (§3.6): ``sum_e c_e sum_{s<D-1} C_u(s)(1 - C_v(s))``.

Preconditions: ``D >= 1``; for modulo terms ``II >= 1``. torch is imported by the caller's
module load (this module is only imported by the solver, which loads torch lazily).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from twill.sched.gaus.graph import GauSGraph

__all__ = ["LossModel", "step_distribution", "smooth_max"]


def step_distribution(
    mu: torch.Tensor, sigma: torch.Tensor, D: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(C, P)``: CDF and probability of every op on every step, both ``[n, D]``.

    The tails outside ``[-1/2, D-1/2]`` are folded into steps 0 and ``D-1`` (clip, spec §2 (a)).
    """
    s = torch.arange(D - 1, device=mu.device, dtype=mu.dtype)
    z = (s[None, :] + 0.5 - mu[:, None]) / sigma[:, None]
    cdf = torch.special.ndtr(z)
    C = torch.cat([cdf, torch.ones_like(mu)[:, None]], dim=1)
    P = torch.diff(C, dim=1, prepend=torch.zeros_like(mu)[:, None])
    return C, P


def smooth_max(x: torch.Tensor, tau: float, scale: torch.Tensor | float) -> torch.Tensor:
    """``scale * tau * logsumexp(x / (scale * tau))`` over the last axis (LogSumExp peak)."""
    return scale * tau * torch.logsumexp(x / (scale * tau), dim=-1)


@dataclass
class LossModel:
    """Precomputed index tensors for one graph, window ``D`` and (optional) ``II``.

    Build with :meth:`build`; call :meth:`evaluate` with ``(mu, sigma)`` in steps.
    """

    graph: GauSGraph
    D: int
    II: int | None
    formulation: str
    tau: float
    device: torch.device
    tensors: dict[str, torch.Tensor]
    scales: dict[str, float]

    @classmethod
    def build(
        cls,
        g: GauSGraph,
        *,
        D: int,
        formulation: str,
        II: int | None = None,
        tau: float = 0.05,
        device: str | torch.device = "cpu",
        window: tuple[int, int] | None = None,
    ) -> LossModel:
        """Precompute index tensors.

        ``window = (s0, W)`` evaluates only steps ``s0 .. s0+W-1`` (spec §13 windowed
        evaluation): the caller keeps every mean at least a few sigma inside it, so the mass
        outside is negligible; ``C = 0`` before and ``1`` after the window. For formulation C
        ``s0`` must be a multiple of ``II`` so residues keep their meaning.
        """
        dev = torch.device(device)
        s0, W = (0, D) if window is None else (int(window[0]), int(window[1]))
        full_D = D
        D = W
        f32 = torch.float32
        T: dict[str, torch.Tensor] = {}
        scales: dict[str, float] = {}
        modulo = formulation == "C"
        edge_mask = np.ones(g.num_edges, bool) if modulo else g.forward
        src, dst = g.src[edge_mask], g.dst[edge_mask]
        shift = g.delay[edge_mask] - g.distance[edge_mask] * (II if modulo else 0) - 1
        # Dependency gather: C_ext[dst, a + shift + padL], C_ext = [0]*padL ++ C ++ [1]*padR.
        pad_l = int(max(0, -shift.min(initial=0)))
        pad_r = int(max(0, shift.max(initial=0)))
        width = pad_l + D + pad_r
        a = np.arange(D)
        flat = dst[:, None] * width + (a[None, :] + shift[:, None] + pad_l)
        T["dep_src"] = torch.as_tensor(src, device=dev)
        T["dep_idx"] = torch.as_tensor(flat.reshape(-1), device=dev)
        scales["dep_pad"] = (pad_l, pad_r)  # type: ignore[assignment]
        T["usage"] = torch.as_tensor(g.usage, dtype=f32, device=dev)
        if formulation == "A":
            totals = g.usage.sum(axis=(0, 2))
            keep = totals > 0
            T["res_keep"] = torch.as_tensor(np.flatnonzero(keep), device=dev)
            T["res_scale"] = torch.as_tensor(
                np.maximum(totals[keep] / full_D, 1e-9), dtype=f32, device=dev
            )
            cm = g.forward & (g.comm > 0)
            T["comm_src"] = torch.as_tensor(g.src[cm], device=dev)
            T["comm_dst"] = torch.as_tensor(g.dst[cm], device=dev)
            T["comm_w"] = torch.as_tensor(g.comm[cm], dtype=f32, device=dev)
        if formulation == "C":
            finite = np.isfinite(g.caps) & (g.usage.sum(axis=(0, 2)) > 0)
            T["cap_keep"] = torch.as_tensor(np.flatnonzero(finite), device=dev)
            T["cap"] = torch.as_tensor(np.maximum(g.caps[finite], 1e-9), dtype=f32, device=dev)
        if formulation in ("B", "C"):
            fwd = np.ones(g.num_edges, bool) if modulo else g.forward
            msrc, mdst = g.src[fwd], g.dst[fwd]
            back = (g.distance[fwd] * II) if modulo else np.zeros(fwd.sum(), np.int64)
            H = D + int(back.max(initial=0))
            # gather C_j(s - delta*II) for s in [0, H): C_ext2 = [0]*padl2 ++ C ++ [1]*(H-D)
            pad_l2 = int(back.max(initial=0))
            width2 = pad_l2 + H
            s = np.arange(H)
            idx2 = mdst[:, None] * width2 + (s[None, :] - back[:, None] + pad_l2)
            T["mem_src"] = torch.as_tensor(msrc, device=dev)
            T["mem_idx"] = torch.as_tensor(idx2.reshape(-1), device=dev)
            has_succ = np.zeros(g.n, bool)
            has_succ[msrc] = True
            T["has_succ"] = torch.as_tensor(has_succ, dtype=f32, device=dev)
            T["live_out"] = torch.as_tensor(g.live_out & (not modulo), dtype=f32, device=dev)
            T["b"] = torch.as_tensor(g.mem, dtype=f32, device=dev)
            scales["mem_H"] = H
            scales["mem_pad"] = pad_l2
            scales["mem_unit"] = max(float(g.mem.sum()) / max(full_D, 1), 1e-9)
        scales["offset"] = s0
        scales["full_D"] = full_D
        return cls(g, D, II, formulation, tau, dev, T, scales)

    # -- the terms ---------------------------------------------------------------------------

    def dependency(self, C: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
        """``g_e`` for every (forward, or in C every) edge: probability the edge is violated."""
        pad_l, pad_r = self.scales["dep_pad"]  # type: ignore[misc]
        n = C.shape[0]
        ext = torch.cat([C.new_zeros(n, pad_l), C, C.new_ones(n, pad_r)], dim=1).reshape(-1)
        cv = torch.take(ext, self.tensors["dep_idx"]).reshape(-1, self.D)
        return (P[self.tensors["dep_src"]] * cv).sum(dim=1)

    def resource_peak(self, P: torch.Tensor) -> torch.Tensor:
        """``sum_k LSE_tau(E[R_k(.)])`` in usage units (formulation A)."""
        usage = self.tensors["usage"]
        n, K, L = usage.shape
        R = P.new_zeros(K, self.D + L - 1)
        for c in range(L):
            R[:, c : c + self.D] = R[:, c : c + self.D] + usage[:, :, c].T @ P
        keep = self.tensors["res_keep"]
        if keep.numel() == 0:
            return P.new_zeros(())
        scale = self.tensors["res_scale"]
        z = R[keep] / (scale[:, None] * self.tau)
        return (scale * self.tau * torch.logsumexp(z, dim=1)).sum()

    def communication(self, C: torch.Tensor) -> torch.Tensor:
        """Expected number of stage boundaries crossed, weighted (formulation A)."""
        cu = C[self.tensors["comm_src"], : self.D - 1]
        cv = C[self.tensors["comm_dst"], : self.D - 1]
        return (self.tensors["comm_w"] * (cu * (1.0 - cv)).sum(dim=1)).sum()

    def modulo_resource(self, P: torch.Tensor) -> torch.Tensor:
        """Violation ``relu(U_k(r) - C_k) / C_k`` per limited resource and slot (flattened)."""
        II = int(self.II or 1)
        keep = self.tensors["cap_keep"]
        if keep.numel() == 0:
            return P.new_zeros(0)
        n = P.shape[0]
        pad = (-self.D) % II
        Q = torch.cat([P, P.new_zeros(n, pad)], dim=1).reshape(n, -1, II).sum(dim=1)
        usage = self.tensors["usage"][:, keep]
        U = P.new_zeros(usage.shape[1], II)
        for c in range(usage.shape[2]):
            U = U + torch.roll(usage[:, :, c].T @ Q, shifts=c, dims=1)
        cap = self.tensors["cap"][:, None]
        return (torch.relu(U - cap) / cap).reshape(-1)

    def _live(self, C: torch.Tensor) -> torch.Tensor:
        """Expected live indicator ``[n, H]`` of every value."""
        H = int(self.scales["mem_H"])
        pad_l2 = int(self.scales["mem_pad"])
        n = C.shape[0]
        ext = torch.cat([C.new_zeros(n, pad_l2), C, C.new_ones(n, H - self.D)], dim=1)
        cj = torch.take(ext.reshape(-1), self.tensors["mem_idx"]).reshape(-1, H)
        logs = torch.zeros(n, H, dtype=C.dtype, device=C.device).index_add(
            0, self.tensors["mem_src"], torch.log(cj.clamp_min(1e-12))
        )
        ci = ext[:, pad_l2:]
        live = ci * (1.0 - torch.exp(logs)) * self.tensors["has_succ"][:, None]
        return live + ci * self.tensors["live_out"][:, None]

    def memory_peak(self, C: torch.Tensor) -> torch.Tensor:
        """Smooth peak of the expected live memory (formulation B)."""
        reg = self.tensors["b"] @ self._live(C)
        return smooth_max(reg, self.tau, self.scales["mem_unit"])

    def modulo_memory(self, C: torch.Tensor) -> torch.Tensor:
        """Smooth modulo MaxLive: live memory folded onto the ``II`` residues (formulation C)."""
        II = int(self.II or 1)
        reg = self.tensors["b"] @ self._live(C)
        pad = (-reg.shape[0]) % II
        folded = torch.cat([reg, reg.new_zeros(pad)]).reshape(-1, II).sum(dim=0)
        unit = self.scales["mem_unit"] * max(1, int(self.scales["full_D"]) // II)
        return smooth_max(folded, self.tau, unit)

    def evaluate(
        self, mu: torch.Tensor, sigma: torch.Tensor, *, ratio: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(f, g)``: the formulation's smooth objective and its violation vector (``g >= 0``)."""
        C, P = step_distribution(mu - self.scales["offset"], sigma, self.D)
        g = self.dependency(C, P)
        if self.formulation == "A":
            f = ratio * self.resource_peak(P) + self.communication(C)
        elif self.formulation == "B":
            f = self.memory_peak(C)
        else:
            f = self.modulo_memory(C)
            g = torch.cat([g, self.modulo_resource(P)])
        return f, g
