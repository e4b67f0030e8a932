"""Closed-form expected losses of GauS (GauS paper, formulations A/B/C).

Each op ``i`` has a start step ``X_i ~ N(mu_i, sigma_i^2)`` rounded to the nearest integer, with
the tails clipped into the end bins (``docs/gaus.md``, decision 1):

    C_i(s) = Phi((s + 1/2 - mu_i) / sigma_i)  for s <= D-2,   C_i(D-1) = 1,
    P_i(s) = C_i(s) - C_i(s-1).

Every term below is an expectation under independent Gaussians, computed as dense tensor
operations over ``[n, D]`` or ``[E, D]``, with no Python loop over nodes or edges (the only
loops run over reservation-table rows, which are few):

* dependency / recurrence violation per edge ``(u->v, d, delta)`` (Eqs. 8b, 24, exact for any d):
  ``g_e = sum_a P_u(a) C_v(a + d - delta*II - 1)``;
* resource peak: ``sum_k LSE_tau(E[R_k(.)])`` with usage normalised by the balanced level
  ``sum_i w_ik / D`` so that ``tau`` is relative;
* modulo resource: probabilities wrapped onto ``II`` slots, violation
  ``relu(U_k(r) - C_k) / C_k``;
* memory (Eqs. 9c, 10b): ``E[Reg(s)] = sum_i b_i C_i(s) (1 - prod_j C_j(s))`` and its LSE peak; ops
  without successors count only when ``live_out`` (then ``b_i C_i(s)``);
* modulo memory: lifetimes to ``max_j (t_j + delta_ij II)`` folded onto residues;
* communication (as in GS-Schedule): ``sum_e c_e sum_{s<D-1} C_u(s)(1 - C_v(s))``.

Preconditions: ``D >= 1``; for modulo terms ``II >= 1``. torch is imported by the caller's
module load (this module is only imported by the solver, which loads torch lazily).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from twill.sched.gaus.graph import GauSGraph

__all__ = ["ALMWeights", "LossBase", "LossModel", "LossSpec", "step_distribution", "smooth_max"]


def step_distribution(
    mu: torch.Tensor,
    sigma: torch.Tensor,
    D: int,
    clip: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(C, P)``: CDF and probability of every op on every step, both ``[n, D]``.

    The tails outside ``[-1/2, D-1/2]`` are folded into steps 0 and ``D-1`` (clip);
    with ``clip = (lo, hi)`` (steps per op), into ``lo_i`` and ``hi_i`` instead (the reference
    for the per-op windows of :mod:`twill.sched.gaus.sparse`).
    """
    s = torch.arange(D - 1, device=mu.device, dtype=mu.dtype)
    z = (s[None, :] + 0.5 - mu[:, None]) / sigma[:, None]
    cdf = torch.special.ndtr(z)
    C = torch.cat([cdf, torch.ones_like(mu)[:, None]], dim=1)
    if clip is not None:
        steps = torch.arange(D, device=mu.device)[None, :]
        C = torch.where(steps < clip[0][:, None], 0.0, C)
        C = torch.where(steps >= clip[1][:, None], 1.0, C)
    P = torch.diff(C, dim=1, prepend=torch.zeros_like(mu)[:, None])
    return C, P


def smooth_max(x: torch.Tensor, tau: float, scale: torch.Tensor | float) -> torch.Tensor:
    """``scale * tau * logsumexp(x / (scale * tau))`` over the last axis (LogSumExp peak)."""
    return scale * tau * torch.logsumexp(x / (scale * tau), dim=-1)


@dataclass
class _EdgeGroup:
    """A contiguous run of (sorted) edges sharing one column shift."""

    r0: int
    r1: int
    shift: int
    ncomm: int
    comm0: int
    dst: torch.Tensor
    src: torch.Tensor
    #: Mixed group (edges whose shift is rare): per-edge column index ``[E_g, W]`` into the
    #: full-width rows; ``None`` for a plain group of one shift.
    cols: torch.Tensor | None = None

    def rows(self, ext: torch.Tensor, pad_l: int, W: int) -> tuple[torch.Tensor, int]:
        """Destination rows of ``ext`` this group reads, and their first column in ``ext``."""
        if self.cols is not None:
            return ext.index_select(0, self.dst), 0
        lo = min(self.shift, 0)
        return ext[:, pad_l + lo : pad_l + max(self.shift, 0) + W].index_select(0, self.dst), (
            pad_l + lo
        )

    def pick(self, rows: torch.Tensor, base: int, pad_l: int, W: int) -> torch.Tensor:
        """``C_v(a + shift)`` for ``a`` in the window, from :meth:`rows`."""
        if self.cols is not None:
            return rows.gather(1, self.cols)
        off = pad_l + self.shift - base
        return rows[:, off : off + W]

    def put(self, G_rows: torch.Tensor, grad: torch.Tensor, base: int, pad_l: int) -> None:
        """Add ``grad`` (shaped like :meth:`pick`) into ``G_rows``."""
        if self.cols is not None:
            G_rows.scatter_add_(1, self.cols, grad)
        else:
            off = pad_l + self.shift - base
            G_rows[:, off : off + grad.shape[1]] += grad


@dataclass(frozen=True)
class LossSpec:
    """Which expected loss a model evaluates: the formulation (``"A"``, ``"B"`` or ``"C"``),
    the latency bound ``D`` in steps, the initiation interval ``II`` (formulation C) and the
    LogSumExp temperature ``tau`` of the smooth peaks (relative to the balanced level)."""

    formulation: str
    D: int
    II: int | None = None
    tau: float = 0.05


_Grad = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class ALMWeights:
    """The weights of one augmented Lagrangian ``L = f_weight f + lam.g + rho/2 |g|^2``."""

    ratio: float
    f_weight: float
    lam: torch.Tensor | None
    rho: float


@dataclass
class LossBase:
    """What the two loss models (:class:`LossModel`, the sparse one) share: the graph and the
    spec they evaluate, and the ALM loop's :meth:`loss_and_grad` over each one's gradient."""

    graph: GauSGraph
    D: int
    II: int | None
    formulation: str
    tau: float
    device: torch.device

    def loss_and_grad(
        self,
        mu: torch.Tensor,
        sigma: torch.Tensor,
        *,
        ratio: float = 1.0,
        f_weight: float = 1.0,
        lam: torch.Tensor | None = None,
        rho: float = 0.0,
    ) -> _Grad:
        """``(f, g, dL/dmu, dL/dsigma)`` for ``L = f_weight f + lam.g + rho/2 |g|^2``."""
        return self._lagrangian_grad(mu, sigma, ALMWeights(ratio, f_weight, lam, rho))

    def _lagrangian_grad(self, mu: torch.Tensor, sigma: torch.Tensor, w: ALMWeights) -> _Grad:
        raise NotImplementedError


@dataclass
class LossModel(LossBase):
    """Precomputed index tensors for one graph, window ``D`` and (optional) ``II``.

    Build with :meth:`build`; call :meth:`evaluate` with ``(mu, sigma)`` in steps.

    Performance layout: edges are sorted once by their column shift
    (``d - delta*II - 1`` for the violation, ``delta*II`` for lifetimes), so every edge term
    gathers whole *rows* of the ``[n, W]`` CDF with ``index_select`` (backward: ``index_add``)
    and reads its shifted columns as a slice; there is no per-element index tensor. The
    violation vector ``g`` is in this sorted edge order, which does not depend on the window,
    so multipliers stay attached to their edges when the window moves.
    """

    tensors: dict[str, torch.Tensor]
    scales: dict[str, float]
    dep_groups: list[_EdgeGroup]
    mem_groups: list[_EdgeGroup]

    @classmethod
    def build(
        cls,
        g: GauSGraph,
        spec: LossSpec,
        *,
        device: str | torch.device = "cpu",
        window: tuple[int, int] | None = None,
        dtype: torch.dtype = torch.float32,
        clip: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> LossModel:
        """Precompute index tensors for the loss ``spec`` on ``g``.

        ``window = (s0, W)`` evaluates only steps ``s0 .. s0+W-1`` (windowed
        evaluation): the caller keeps every mean at least a few sigma inside it, so the mass
        outside is negligible; ``C = 0`` before and ``1`` after the window. For formulation C
        ``s0`` must be a multiple of ``II`` so residues keep their meaning.
        """
        D, formulation, II, tau = spec.D, spec.formulation, spec.II, spec.tau
        dev = torch.device(device)
        s0, W = (0, D) if window is None else (int(window[0]), int(window[1]))
        full_D = D
        D = W
        f32 = dtype
        T: dict[str, torch.Tensor] = {}
        scales: dict[str, float] = {}
        modulo = formulation == "C"
        ii = int(II) if (modulo and II) else 0
        emask = np.ones(g.num_edges, bool) if modulo else g.forward
        eidx = np.flatnonzero(emask)
        shift = g.delay[eidx] - g.distance[eidx] * ii - 1
        is_comm = (g.comm[eidx] > 0) & (g.distance[eidx] == 0) if formulation == "A" else None
        mixed = _rare(shift)
        # Sort by shift (rare shifts last, as one mixed group), communication edges first
        # inside a group: a window-independent order.
        keys = (~is_comm,) if is_comm is not None else ()
        order = np.lexsort(
            (eidx, np.where(mixed, shift, 0), *keys, np.where(mixed, 0, shift), mixed)
        )
        eidx, shift, mixed = eidx[order], shift[order], mixed[order]
        comm_sorted = is_comm[order] if is_comm is not None else np.zeros(eidx.size, bool)
        pad_l = int(max(0, -shift.min(initial=0)))
        dep_groups = _groups(g, eidx, shift, comm_sorted, mixed, dev, W, pad_l)
        scales["pad_l"] = pad_l
        scales["pad_r"] = int(max(0, shift.max(initial=0)))
        T["dep_src"] = torch.as_tensor(g.src[eidx], device=dev)
        T["usage"] = torch.as_tensor(g.usage, dtype=f32, device=dev)
        if formulation == "A":
            totals = g.usage.sum(axis=(0, 2))
            keep = totals > 0
            T["res_keep"] = torch.as_tensor(np.flatnonzero(keep), device=dev)
            T["res_scale"] = torch.as_tensor(
                np.maximum(totals[keep] / full_D, 1e-9), dtype=f32, device=dev
            )
            T["comm_w"] = torch.as_tensor(g.comm[eidx][comm_sorted], dtype=f32, device=dev)
        if formulation == "C":
            finite = np.isfinite(g.caps) & (g.usage.sum(axis=(0, 2)) > 0)
            T["cap_keep"] = torch.as_tensor(np.flatnonzero(finite), device=dev)
            T["cap"] = torch.as_tensor(np.maximum(g.caps[finite], 1e-9), dtype=f32, device=dev)
        mem_groups: list[_EdgeGroup] = []
        if formulation in ("B", "C"):
            midx = np.flatnonzero(np.ones(g.num_edges, bool) if modulo else g.forward)
            back = g.distance[midx] * ii
            mmixed = _rare(back)
            morder = np.lexsort((midx, back, mmixed))
            midx, back, mmixed = midx[morder], back[morder], mmixed[morder]
            mem_groups = _groups(g, midx, back, np.zeros(midx.size, bool), mmixed, dev, W, 0)
            H = D + int(back.max(initial=0))
            # A successor j reached over distance delta reads C_j(s - delta*II), which is 0 for
            # s < delta*II: the value is surely live there (a constant mask, no gradient).
            alive = np.ones((g.n, H), np.float32)
            for k in np.unique(back[back > 0]):
                alive[np.unique(g.src[midx[back == k]]), :k] = 0.0
            T["mem_alive"] = torch.as_tensor(alive, device=dev)
            has_succ = np.zeros(g.n, bool)
            has_succ[g.src[midx]] = True
            T["has_succ"] = torch.as_tensor(has_succ, dtype=f32, device=dev)
            T["live_out"] = torch.as_tensor(g.live_out & (not modulo), dtype=f32, device=dev)
            T["b"] = torch.as_tensor(g.mem, dtype=f32, device=dev)
            scales["mem_H"] = H
            scales["mem_unit"] = max(float(g.mem.sum()) / max(full_D, 1), 1e-9)
        scales["offset"] = s0
        scales["full_D"] = full_D
        if clip is not None:
            T["clip_lo"] = torch.as_tensor(np.asarray(clip[0]) - s0, device=dev)
            T["clip_hi"] = torch.as_tensor(np.asarray(clip[1]) - s0, device=dev)
        return cls(g, D, II, formulation, tau, dev, T, scales, dep_groups, mem_groups)

    # -- the terms ---------------------------------------------------------------------------

    def edge_terms(self, C: torch.Tensor, P: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(g, comm)``: violation probability of every edge (sorted order) and the
        expected weighted number of crossed stage boundaries (0 outside formulation A).

        One row gather of ``[C | P]`` for the sources and one per shift group for the
        destinations; the communication term reuses the destination rows.
        """
        W = self.D
        n = C.shape[0]
        pad_l, pad_r = int(self.scales["pad_l"]), int(self.scales["pad_r"])
        ext = torch.cat([C.new_zeros(n, pad_l), C, C.new_ones(n, pad_r)], dim=1)
        want_comm = self.formulation == "A"
        src_rows = (torch.cat([C, P], dim=1) if want_comm else P).index_select(
            0, self.tensors["dep_src"]
        )
        Ps = src_rows[:, W:] if want_comm else src_rows
        dep, comm = [], C.new_zeros(())
        for grp in self.dep_groups:
            rows, base = grp.rows(ext, pad_l, W)
            cv = grp.pick(rows, base, pad_l, W)
            dep.append((Ps[grp.r0 : grp.r1] * cv).sum(dim=1))
            if want_comm and grp.ncomm and W > 1:
                cu = src_rows[grp.r0 : grp.r0 + grp.ncomm, : W - 1]
                cvv = rows[: grp.ncomm, pad_l - base : pad_l - base + W - 1]
                w = self.tensors["comm_w"][grp.comm0 : grp.comm0 + grp.ncomm]
                comm = comm + (w * (cu * (1.0 - cvv)).sum(dim=1)).sum()
        g = torch.cat(dep) if dep else C.new_zeros(0)
        return g, comm

    def dependency(self, C: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
        """``g_e`` for every (forward, or in C every) edge: probability the edge is violated."""
        return self.edge_terms(C, P)[0]

    def communication(self, C: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
        """Expected number of stage boundaries crossed, weighted (formulation A)."""
        return self.edge_terms(C, P)[1]

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
        """Expected live indicator ``[n, H]`` of every value.

        ``1 - prod_j C_j(s - delta_ij II)`` is computed as ``exp(sum_j log C_j)``: the log of
        the ``[n, W]`` CDF is taken once per node, its rows gathered per distance group and
        summed onto the producers with ``index_add`` into the group's column range.
        """
        H = int(self.scales["mem_H"])
        W = self.D
        n = C.shape[0]
        logc = torch.log(C.clamp_min(1e-12))
        logs = C.new_zeros(n, H)
        for grp in self.mem_groups:
            if grp.cols is not None:
                rows = logc.index_select(0, grp.dst)
                spread = C.new_zeros(rows.shape[0], H).scatter(1, grp.cols, rows)
                logs = logs + C.new_zeros(n, H).index_add(0, grp.src, spread)
                continue
            part = C.new_zeros(n, W).index_add(0, grp.src, logc.index_select(0, grp.dst))
            k = grp.shift
            if k == 0 and H == W:
                logs = logs + part
            else:
                logs = logs + torch.nn.functional.pad(part, (k, H - W - k))
        ci = torch.cat([C, C.new_ones(n, H - W)], dim=1)
        prod = torch.exp(logs) * self.tensors["mem_alive"]
        live = ci * (1.0 - prod) * self.tensors["has_succ"][:, None]
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
        clip = (
            (self.tensors["clip_lo"], self.tensors["clip_hi"])
            if "clip_lo" in self.tensors
            else None
        )
        C, P = step_distribution(mu - self.scales["offset"], sigma, self.D, clip)
        g, comm = self.edge_terms(C, P)
        if self.formulation == "A":
            f = ratio * self.resource_peak(P) + comm
        elif self.formulation == "B":
            f = self.memory_peak(C)
        else:
            f = self.modulo_memory(C)
            g = torch.cat([g, self.modulo_resource(P)])
        return f, g

    # -- closed-form gradient (the hot path) ---------------------------------------------------

    @torch.no_grad()
    def _lagrangian_grad(self, mu: torch.Tensor, sigma: torch.Tensor, w: ALMWeights) -> _Grad:
        """:meth:`loss_and_grad`: the same quantities as :meth:`evaluate` plus their gradient,
        written out in closed form (chain rule through ``Phi``) instead of recorded by autograd:
        no graph, no slice backward buffers, one ``index_add`` per gather. ``tests/sched/gaus``
        checks it against autograd on :meth:`evaluate`."""
        ratio, f_weight, lam, rho = w.ratio, w.f_weight, w.lam, w.rho
        W = self.D
        s = torch.arange(W - 1, device=mu.device, dtype=mu.dtype)
        z = (s[None, :] + 0.5 - (mu - self.scales["offset"])[:, None]) / sigma[:, None]
        cdf = torch.special.ndtr(z)
        C = torch.cat([cdf, torch.ones_like(mu)[:, None]], dim=1)
        P = torch.diff(C, dim=1, prepend=torch.zeros_like(mu)[:, None])
        GC = torch.zeros_like(C)
        GP = torch.zeros_like(C)
        # objective pieces first (they do not depend on the multipliers)
        if self.formulation == "A":
            f_res = ratio * self._resource_peak_grad(P, GP, f_weight * ratio)
        elif self.formulation == "B":
            f_res = self._memory_grad(C, GC, f_weight, modulo=False)
        else:
            f_res = self._memory_grad(C, GC, f_weight, modulo=True)
        dep, comm = self._edge_terms_grad(C, P, GC, GP, f_weight, lam, rho)
        g = dep
        if self.formulation == "C":
            lam_r = None if lam is None else lam[dep.shape[0] :]
            g = torch.cat([dep, self._modulo_resource_grad(P, GP, lam_r, rho)])
        f = f_res + comm
        # P = diff(C): dL/dC_s += dL/dP_s - dL/dP_{s+1}
        GC += GP
        GC[:, :-1] -= GP[:, 1:]
        # C_s = Phi(z_s) for s < W-1 (the last column is the constant 1)
        # exp() of arguments that underflow takes a slow path (measured 50x on this CPU), so the
        # exponent is clamped at -60: phi(11) ~ 1e-27 instead of a denormal, a negligible change.
        phi = torch.exp((-0.5 * z * z).clamp_min_(-60.0)) * 0.3989422804014327
        gz = GC[:, :-1] * phi
        grad_mu = -(gz.sum(dim=1)) / sigma
        grad_sigma = -((gz * z).sum(dim=1)) / sigma
        return f, g, grad_mu, grad_sigma

    def _resource_peak_grad(self, P: torch.Tensor, GP: torch.Tensor, weight: float) -> torch.Tensor:
        usage = self.tensors["usage"]
        _, K, L = usage.shape
        keep = self.tensors["res_keep"]
        if keep.numel() == 0:
            return P.new_zeros(())
        R = P.new_zeros(K, self.D + L - 1)
        for c in range(L):
            R[:, c : c + self.D] += usage[:, :, c].T @ P
        scale = self.tensors["res_scale"][:, None] * self.tau
        z = R[keep] / scale
        lse = torch.logsumexp(z, dim=1)
        S = P.new_zeros(K, self.D + L - 1)
        S[keep] = torch.softmax(z, dim=1) * weight
        for c in range(L):
            GP += usage[:, :, c] @ S[:, c : c + self.D]
        return (scale[:, 0] * lse).sum()

    def _edge_terms_grad(
        self,
        C: torch.Tensor,
        P: torch.Tensor,
        GC: torch.Tensor,
        GP: torch.Tensor,
        f_weight: float,
        lam: torch.Tensor | None,
        rho: float,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        W = self.D
        n = C.shape[0]
        pad_l, pad_r = int(self.scales["pad_l"]), int(self.scales["pad_r"])
        ext = torch.cat([C.new_zeros(n, pad_l), C, C.new_ones(n, pad_r)], dim=1)
        want_comm = self.formulation == "A"
        src_idx = self.tensors["dep_src"]
        src_rows = (torch.cat([C, P], dim=1) if want_comm else P).index_select(0, src_idx)
        Ps = src_rows[:, W:] if want_comm else src_rows
        G_src = torch.zeros_like(src_rows)
        G_Ps = G_src[:, W:] if want_comm else G_src
        G_ext = torch.zeros_like(ext)
        dep, comm = [], C.new_zeros(())
        cvs = []
        for grp in self.dep_groups:
            rows, base = grp.rows(ext, pad_l, W)
            cv = grp.pick(rows, base, pad_l, W)
            dep.append((Ps[grp.r0 : grp.r1] * cv).sum(dim=1))
            cvs.append((rows, base, cv))
        g = torch.cat(dep) if dep else C.new_zeros(0)
        gam = rho * g if lam is None else lam[: g.shape[0]] + rho * g
        for grp, (rows, base, cv) in zip(self.dep_groups, cvs, strict=True):
            gg = gam[grp.r0 : grp.r1, None]
            G_rows = torch.zeros_like(rows)
            grp.put(G_rows, gg * Ps[grp.r0 : grp.r1], base, pad_l)
            G_Ps[grp.r0 : grp.r1] += gg * cv
            if want_comm and grp.ncomm and W > 1:
                k = grp.ncomm
                c0 = pad_l - base
                cu = src_rows[grp.r0 : grp.r0 + k, : W - 1]
                cvv = rows[:k, c0 : c0 + W - 1]
                w = self.tensors["comm_w"][grp.comm0 : grp.comm0 + k, None]
                comm = comm + (w * cu * (1.0 - cvv)).sum()
                G_src[grp.r0 : grp.r0 + k, : W - 1] += (f_weight * w) * (1.0 - cvv)
                G_rows[:k, c0 : c0 + W - 1] -= (f_weight * w) * cu
            G_ext[:, base : base + rows.shape[1]].index_add_(0, grp.dst, G_rows)
        if want_comm:
            G_CP = torch.zeros(n, 2 * W, dtype=C.dtype, device=C.device).index_add_(
                0, src_idx, G_src
            )
            GC += G_CP[:, :W]
            GP += G_CP[:, W:]
        else:
            GP.index_add_(0, src_idx, G_src)
        GC += G_ext[:, pad_l : pad_l + W]
        return g, comm

    def _modulo_resource_grad(
        self, P: torch.Tensor, GP: torch.Tensor, lam: torch.Tensor | None, rho: float
    ) -> torch.Tensor:
        II = int(self.II or 1)
        keep = self.tensors["cap_keep"]
        if keep.numel() == 0:
            return P.new_zeros(0)
        n, W = P.shape
        pad = (-W) % II
        Q = torch.cat([P, P.new_zeros(n, pad)], dim=1).reshape(n, -1, II).sum(dim=1)
        usage = self.tensors["usage"][:, keep]
        U = P.new_zeros(usage.shape[1], II)
        for c in range(usage.shape[2]):
            U += torch.roll(usage[:, :, c].T @ Q, shifts=c, dims=1)
        cap = self.tensors["cap"][:, None]
        g = (torch.relu(U - cap) / cap).reshape(-1)
        gam = rho * g if lam is None else lam + rho * g
        GU = (gam.reshape(U.shape) * (U > cap)) / cap
        GQ = P.new_zeros(n, II)
        for c in range(usage.shape[2]):
            GQ += usage[:, :, c] @ torch.roll(GU, shifts=-c, dims=1)
        reps = (W + pad) // II
        GP += GQ.repeat(1, reps)[:, :W]
        return g

    def _memory_grad(
        self, C: torch.Tensor, GC: torch.Tensor, weight: float, *, modulo: bool
    ) -> torch.Tensor:
        H = int(self.scales["mem_H"])
        W = self.D
        n = C.shape[0]
        T = self.tensors
        logc = torch.log(C.clamp_min(1e-12))
        logs = C.new_zeros(n, H)
        for grp in self.mem_groups:
            rows = logc.index_select(0, grp.dst)
            if grp.cols is not None:
                spread = C.new_zeros(rows.shape[0], H).scatter_(1, grp.cols, rows)
                logs.index_add_(0, grp.src, spread)
            else:
                logs[:, grp.shift : grp.shift + W].index_add_(0, grp.src, rows)
        ci = torch.cat([C, C.new_ones(n, H - W)], dim=1)
        prod = torch.exp(logs.clamp_min_(-60.0)) * T["mem_alive"]
        hs, lo = T["has_succ"][:, None], T["live_out"][:, None]
        keep = (1.0 - prod) * hs + lo
        reg = T["b"] @ (ci * keep)
        if modulo:
            II = int(self.II or 1)
            pad = (-H) % II
            folded = torch.cat([reg, reg.new_zeros(pad)]).reshape(-1, II).sum(dim=0)
            scale = self.scales["mem_unit"] * max(1, int(self.scales["full_D"]) // II) * self.tau
            f = scale * torch.logsumexp(folded / scale, dim=0)
            d_reg = torch.softmax(folded / scale, dim=0).repeat((H + pad) // II)[:H]
        else:
            scale = self.scales["mem_unit"] * self.tau
            f = scale * torch.logsumexp(reg / scale, dim=0)
            d_reg = torch.softmax(reg / scale, dim=0)
        G_live = (weight * T["b"])[:, None] * d_reg[None, :]
        GC += (G_live * keep)[:, :W]
        G_logs = -(G_live * ci * hs) * prod
        G_logc = torch.zeros_like(logc)
        for grp in self.mem_groups:
            if grp.cols is not None:
                part = G_logs.index_select(0, grp.src).gather(1, grp.cols)
            else:
                part = G_logs[:, grp.shift : grp.shift + W].index_select(0, grp.src)
            G_logc.index_add_(0, grp.dst, part)
        GC += torch.where(C > 1e-12, G_logc / C.clamp_min(1e-12), 0.0)
        return f


def _rare(shift: np.ndarray, max_groups: int = 8) -> np.ndarray:
    """Edges whose shift value is rare: outside the ``max_groups`` most common values or
    shared by fewer than ``max(16, E / 64)`` edges. They form one mixed group (per-edge column
    gather) so graphs with many distinct distances do not pay one kernel launch per value."""
    if shift.size == 0:
        return np.zeros(0, bool)
    vals, counts = np.unique(shift, return_counts=True)
    keep = np.argsort(-counts, kind="stable")[:max_groups]
    keep = keep[counts[keep] >= max(16, shift.size // 64)]
    return ~np.isin(shift, vals[keep])


def _groups(
    g: GauSGraph,
    eidx: np.ndarray,
    shift: np.ndarray,
    comm: np.ndarray,
    mixed: np.ndarray,
    dev: torch.device,
    W: int,
    col0: int,
) -> list[_EdgeGroup]:
    """Split sorted edges ``eidx`` into runs of equal ``shift``, plus one trailing group for
    the ``mixed`` edges (column index ``col0 + shift_e + a``)."""
    out: list[_EdgeGroup] = []
    if eidx.size == 0:
        return out
    m0 = int(np.argmax(mixed)) if mixed.any() else eidx.size
    cuts = np.flatnonzero(np.diff(shift[:m0])) + 1
    bounds = np.concatenate(([0], cuts, [m0])) if m0 > 0 else np.array([0])
    comm0 = 0
    spans = list(zip(bounds[:-1], bounds[1:], strict=True))
    if m0 < eidx.size:
        spans.append((m0, eidx.size))
    for r0, r1 in spans:
        e = eidx[r0:r1]
        ncomm = int(comm[r0:r1].sum())
        cols = None
        if r0 >= m0:
            cols = torch.as_tensor(
                col0 + shift[r0:r1, None] + np.arange(W)[None, :], dtype=torch.int64, device=dev
            )
        out.append(
            _EdgeGroup(
                int(r0),
                int(r1),
                int(shift[r0]),
                ncomm,
                comm0,
                torch.as_tensor(g.dst[e], device=dev),
                torch.as_tensor(g.src[e], device=dev),
                cols,
            )
        )
        comm0 += ncomm
    return out
