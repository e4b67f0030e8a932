"""The FlashAttention forward on B200 (sm_100a) as a Gluon kernel whose partitions are Twill's
warp slots (:class:`~twill.codegen.gluon.plan.AttentionPlan`).

Tiles as FlashAttention-4 takes them: two Q sub-tiles of ``BLOCK_M = 128`` rows per program,
``BLOCK_N = 128`` keys per block, ``HEAD_DIM = 128``, fp16 in, fp32 accumulation. Tensor
memory: S0, S1 (128 columns each, fp32; P written over S as packed fp16) and O0, O1 (128
each): 512 columns. Shared memory: Q0, Q1 and a ring of ``kv_stages`` K and V blocks (the
plan's depth), reused for the output tile.

Every partition runs the same function, :func:`_partition`, with the set of roles the plan
gives its slot (``ROLES``, a bit per :data:`~twill.codegen.gluon.plan.ROLE_ORDER` entry);
per K/V block it runs its roles in that order, so partitions only wait on work ordered
earlier and no two wait on each other. Roles hand work over through mbarriers (per sub-tile
``t``): ``s_ready`` (QK^T done), ``p_ready`` (P in tensor memory), ``alpha_ready`` /
``alpha_free`` (the rescale factor in shared memory), ``o_ready`` (O rescaled), ``pv_done``
(PV done: S/P and O free again), ``l_ready`` (the row sum, for the epilogue); per ring slot
``k_ready``/``v_ready`` (TMA) and ``k_free``/``v_free`` (both sub-tiles' MMAs done). The
correction role of a sub-tile writes its output tile (O / l) after the loop.
"""

from __future__ import annotations

# ruff: noqa: ANN001, ANN202  (Gluon @jit functions take Gluon values, untyped)
from typing import Any

from twill.codegen.gluon.common import (
    GluonKernel,
    check_attention_rows,
    compile_gluon,
    fp16_descriptor,
)
from twill.codegen.gluon.plan import ROLE_ORDER, AttentionPlan
from twill.errors import InvalidProblemError

__all__ = ["attention_forward_sm100", "gluon_kernel", "launch_sm100", "role_mask"]

try:  # the kernel is defined only with Triton installed (the ``triton`` extra)
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.blackwell import (
        TensorMemoryLayout,
        allocate_tensor_memory,
        fence_async_shared,
        mbarrier,
        tcgen05_mma,
        tma,
    )
except ImportError:  # pragma: no cover - the route then reports Triton missing
    gluon = None

# Role bits (ROLE_ORDER's order) and barrier rows per sub-tile, as Gluon constants.
if gluon is not None:
    LOAD_K = gl.constexpr(1 << ROLE_ORDER.index("load_k"))
    LOAD_V = gl.constexpr(1 << ROLE_ORDER.index("load_v"))
    QK = gl.constexpr(1 << ROLE_ORDER.index("qk0"))  # << t for sub-tile t
    SOFTMAX = gl.constexpr(1 << ROLE_ORDER.index("softmax0"))
    CORRECTION = gl.constexpr(1 << ROLE_ORDER.index("correction0"))
    PV = gl.constexpr(1 << ROLE_ORDER.index("pv0"))
    S_READY = gl.constexpr(0)
    P_READY = gl.constexpr(2)
    ALPHA_READY = gl.constexpr(4)
    ALPHA_FREE = gl.constexpr(6)
    O_READY = gl.constexpr(8)
    PV_DONE = gl.constexpr(10)
    L_READY = gl.constexpr(12)
    TILE_BARRIERS = gl.constexpr(14)

#: The tile sizes this template is written for.
BLOCK_M, BLOCK_N, HEAD_DIM = 128, 128, 128
#: Shared memory the template's fixed buffers take beside the ring: Q0, Q1 (fp16 tiles), the
#: row statistics and the barriers (bytes; the compiled kernel's own figure is reported).
SMEM_FIXED = 2 * BLOCK_M * HEAD_DIM * 2 + 4 * BLOCK_M * 4 + 1024


if gluon is not None:

    @gluon.jit
    def _wait(bars, row, t, phase, pred=True):
        mbarrier.wait(bars.index(row + t), phase, pred=pred)

    @gluon.jit
    def _load_role(desc, bufs, kv, READY: gl.constexpr, row, j, STAGES: gl.constexpr):
        """TMA of block ``j`` into ring slot ``j % STAGES`` once both sub-tiles' MMAs freed it
        (barrier rows ``READY + s`` and ``READY + 2 STAGES + s``)."""
        s = j % STAGES
        mbarrier.wait(kv.index(READY + 2 * STAGES + s), ((j // STAGES) & 1) ^ 1)
        mbarrier.expect(kv.index(READY + s), desc.block_type.nbytes)
        tma.async_load(desc, [row, 0], kv.index(READY + s), bufs.index(s))

    @gluon.jit
    def _qk_role(q_t, k_bufs, s_t, kv, tb, t: gl.constexpr, j, STAGES: gl.constexpr):
        """S_t = Q_t K_j^T once K_j is in and PV_t(j-1) released S_t (P_t lives there)."""
        s = j % STAGES
        mbarrier.wait(kv.index(s), (j // STAGES) & 1)
        _wait(tb, PV_DONE, t, (j - 1) & 1, pred=j > 0)
        tcgen05_mma(q_t, k_bufs.index(s).permute((1, 0)), s_t, use_acc=False,
                    mbarriers=[tb.index(S_READY + t), kv.index(2 * STAGES + s)])  # fmt: skip

    @gluon.jit
    def _pv_role(s_t, v_bufs, o_t, kv, tb, t: gl.constexpr, j, STAGES: gl.constexpr):
        """O_t += P_t V_j once V_j is in, P_t written and O_t rescaled."""
        s = j % STAGES
        mbarrier.wait(kv.index(STAGES + s), (j // STAGES) & 1)
        _wait(tb, P_READY, t, j & 1)
        _wait(tb, O_READY, t, j & 1)
        p_layout: gl.constexpr = TensorMemoryLayout((s_t.shape[0], s_t.shape[1]), col_stride=1)
        p_t = s_t.reinterpret(gl.float16, s_t.shape, p_layout)
        tcgen05_mma(p_t, v_bufs.index(s), o_t, use_acc=j > 0,
                    mbarriers=[tb.index(PV_DONE + t), kv.index(3 * STAGES + s)])  # fmt: skip

    @gluon.jit
    def _softmax_role(s_t, stats, tb, t: gl.constexpr, j, m_i, l_i, qk_scale):
        """Online softmax of S_t, in two column halves: the row max over both, then P (fp16,
        written over S_t's first half of columns) and the row sum; alpha_t to the
        correction."""
        H: gl.constexpr = s_t.shape[1] // 2
        layout: gl.constexpr = s_t.slice(0, H).get_reg_layout()
        _wait(tb, S_READY, t, j & 1)
        m_new = gl.maximum(m_i, gl.max(s_t.slice(0, H).load(layout) * qk_scale, 1))
        m_new = gl.maximum(m_new, gl.max(s_t.slice(H, H).load(layout) * qk_scale, 1))
        p_layout: gl.constexpr = TensorMemoryLayout((s_t.shape[0], s_t.shape[1]), col_stride=1)
        p_t = s_t.reinterpret(gl.float16, s_t.shape, p_layout)
        alpha = gl.exp2(m_i - m_new)
        l_i = l_i * alpha
        for h in gl.static_range(2):
            p = gl.exp2(s_t.slice(h * H, H).load(layout) * qk_scale - m_new[:, None])
            l_i = l_i + gl.sum(p, 1)
            p_h = p_t.slice(h * H, H)
            p_h.store(gl.convert_layout(p.to(gl.float16), p_h.get_reg_layout()))
        gl.barrier()
        mbarrier.arrive(tb.index(P_READY + t))
        _wait(tb, ALPHA_FREE, t, (j & 1) ^ 1)
        stats.index(t).store(alpha)
        gl.barrier()
        mbarrier.arrive(tb.index(ALPHA_READY + t))
        return m_new, l_i

    @gluon.jit
    def _correction_role(o_t, stats, tb, t: gl.constexpr, j):
        """O_t *= alpha_t once PV_t(j-1) is done (nothing to rescale before the first)."""
        H: gl.constexpr = o_t.shape[1] // 2
        layout: gl.constexpr = o_t.slice(0, H).get_reg_layout()
        _wait(tb, ALPHA_READY, t, j & 1)
        alpha = stats.index(t).load(gl.SliceLayout(1, layout))
        gl.barrier()
        mbarrier.arrive(tb.index(ALPHA_FREE + t))
        if j > 0:
            _wait(tb, PV_DONE, t, (j - 1) & 1)
            for h in gl.static_range(2):
                o_h = o_t.slice(h * H, H)
                o_h.store(o_h.load(layout) * alpha[:, None])
        gl.barrier()
        mbarrier.arrive(tb.index(O_READY + t))

    @gluon.jit
    def _epilogue(o_t, stats, tb, t: gl.constexpr, out_smem, o_desc, row, n):
        """O_t / l_t, fp16, through shared memory (Q_t's buffer) to global memory by TMA."""
        H: gl.constexpr = o_t.shape[1] // 2
        layout: gl.constexpr = o_t.slice(0, H).get_reg_layout()
        _wait(tb, PV_DONE, t, (n - 1) & 1)
        _wait(tb, L_READY, t, 0)
        l_i = stats.index(2 + t).load(gl.SliceLayout(1, layout))
        for h in gl.static_range(2):
            o = o_t.slice(h * H, H).load(layout) / l_i[:, None]
            out_smem.slice(h * H, H, dim=1).store(o.to(gl.float16))
        fence_async_shared()
        tma.async_store(o_desc, [row, 0], out_smem)
        tma.store_wait(0)

    @gluon.jit
    def _partition(bufs, descs, rows, n, qk_scale, ROLES: gl.constexpr, STAGES: gl.constexpr):
        """One Twill slot: the roles in ``ROLES``, block after block, in ROLE_ORDER."""
        q_smem, k_bufs, v_bufs, s_tm = bufs[0], bufs[1], bufs[2], bufs[3]
        o_tm, stats, kv, tb = bufs[4], bufs[5], bufs[6], bufs[7]
        k_desc, v_desc, o_desc = descs[0], descs[1], descs[2]
        q_row, kv_row = rows
        BN: gl.constexpr = k_bufs.shape[1]
        if ROLES & SOFTMAX:
            m0, l0 = _row_stats(s_tm.index(0))
        if ROLES & (SOFTMAX << 1):
            m1, l1 = _row_stats(s_tm.index(1))
        if ROLES & LOAD_K:
            _load_q(descs[3], q_smem, kv.index(4 * STAGES), q_row)
        if ROLES & (QK | (QK << 1)):
            mbarrier.wait(kv.index(4 * STAGES), 0)  # Q0, Q1 in
        for j in range(n):
            if ROLES & LOAD_K:
                _load_role(k_desc, k_bufs, kv, 0, kv_row + j * BN, j, STAGES)
            if ROLES & LOAD_V:
                _load_role(v_desc, v_bufs, kv, STAGES, kv_row + j * BN, j, STAGES)
            if ROLES & QK:
                _qk_role(q_smem.index(0), k_bufs, s_tm.index(0), kv, tb, 0, j, STAGES)
            if ROLES & (QK << 1):
                _qk_role(q_smem.index(1), k_bufs, s_tm.index(1), kv, tb, 1, j, STAGES)
            if ROLES & SOFTMAX:
                m0, l0 = _softmax_role(s_tm.index(0), stats, tb, 0, j, m0, l0, qk_scale)
            if ROLES & (SOFTMAX << 1):
                m1, l1 = _softmax_role(s_tm.index(1), stats, tb, 1, j, m1, l1, qk_scale)
            if ROLES & CORRECTION:
                _correction_role(o_tm.index(0), stats, tb, 0, j)
            if ROLES & (CORRECTION << 1):
                _correction_role(o_tm.index(1), stats, tb, 1, j)
            if ROLES & PV:
                _pv_role(s_tm.index(0), v_bufs, o_tm.index(0), kv, tb, 0, j, STAGES)
            if ROLES & (PV << 1):
                _pv_role(s_tm.index(1), v_bufs, o_tm.index(1), kv, tb, 1, j, STAGES)
        if ROLES & SOFTMAX:
            _publish_l(stats, tb, 0, l0)
        if ROLES & (SOFTMAX << 1):
            _publish_l(stats, tb, 1, l1)
        _finish(q_smem, o_tm, stats, tb, o_desc, q_row, n, ROLES)

    @gluon.jit
    def _row_stats(s_t):
        """The running row max (-inf) and row sum (0) of one sub-tile, in S's row layout."""
        H: gl.constexpr = s_t.shape[1] // 2  # the softmax works in column halves
        layout: gl.constexpr = gl.SliceLayout(1, s_t.slice(0, H).get_reg_layout())
        m = gl.full([s_t.shape[0]], float("-inf"), gl.float32, layout)
        return m, gl.full([s_t.shape[0]], 0.0, gl.float32, layout)

    @gluon.jit
    def _load_q(q_desc, q_smem, bar, q_row):
        """Both Q sub-tiles, once, on one barrier."""
        mbarrier.expect(bar, 2 * q_desc.block_type.nbytes)
        tma.async_load(q_desc, [q_row, 0], bar, q_smem.index(0))
        tma.async_load(q_desc, [q_row + q_smem.shape[1], 0], bar, q_smem.index(1))

    @gluon.jit
    def _publish_l(stats, tb, t: gl.constexpr, l_i):
        stats.index(2 + t).store(l_i)
        gl.barrier()
        mbarrier.arrive(tb.index(L_READY + t))

    @gluon.jit
    def _finish(q_smem, o_tm, stats, tb, o_desc, q_row, n, ROLES: gl.constexpr):
        """After the loop: the correction roles write O / l."""
        BM: gl.constexpr = q_smem.shape[1]
        if ROLES & CORRECTION:
            _epilogue(o_tm.index(0), stats, tb, 0, q_smem.index(0), o_desc, q_row, n)
        if ROLES & (CORRECTION << 1):
            _epilogue(o_tm.index(1), stats, tb, 1, q_smem.index(1), o_desc, q_row + BM, n)

    @gluon.jit
    def fa_fwd_sm100(q_desc, k_desc, v_desc, o_desc, seq_len, sm_scale,
                     STAGES: gl.constexpr, R: gl.constexpr, W: gl.constexpr,
                     G: gl.constexpr, WORKERS: gl.constexpr):  # fmt: skip
        """One program: Q rows ``[pid 2 BM, (pid + 1) 2 BM)`` of head ``program_id(1)``.
        ``R``: the roles of the default partition, then of each worker; ``W``, ``G``: each
        worker's warps and registers; ``WORKERS``: how many (1 to 3)."""
        BM: gl.constexpr = q_desc.block_type.shape[0]
        BN: gl.constexpr = k_desc.block_type.shape[0]
        D: gl.constexpr = q_desc.block_type.shape[1]
        q_smem = gl.allocate_shared_memory(gl.float16, [2, BM, D], q_desc.layout)
        k_bufs = gl.allocate_shared_memory(gl.float16, [STAGES, BN, D], k_desc.layout)
        v_bufs = gl.allocate_shared_memory(gl.float16, [STAGES, BN, D], v_desc.layout)
        stats = gl.allocate_shared_memory(gl.float32, [4, BM],
                                          gl.SwizzledSharedLayout(1, 1, 1, [0]))  # fmt: skip
        kv = gl.allocate_shared_memory(gl.int64, [4 * STAGES + 1, 1], mbarrier.MBarrierLayout())
        tb = gl.allocate_shared_memory(gl.int64, [TILE_BARRIERS, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(4 * STAGES + 1):  # ready: one arrival (TMA); free: two MMAs
            mbarrier.init(kv.index(i), count=1 if (i < 2 * STAGES or i == 4 * STAGES) else 2)
        for i in gl.static_range(TILE_BARRIERS):
            mbarrier.init(tb.index(i), count=1)
        tm_layout: gl.constexpr = TensorMemoryLayout((BM, BN), col_stride=1)
        s_tm = allocate_tensor_memory(gl.float32, [2, BM, BN], tm_layout)
        o_layout: gl.constexpr = TensorMemoryLayout((BM, D), col_stride=1)
        o_tm = allocate_tensor_memory(gl.float32, [2, BM, D], o_layout)
        bh = gl.program_id(1)
        rows = (bh * seq_len + gl.program_id(0) * 2 * BM, bh * seq_len)
        descs = (k_desc, v_desc, o_desc, q_desc)
        bufs = (q_smem, k_bufs, v_bufs, s_tm, o_tm, stats, kv, tb)
        n = seq_len // BN
        qk_scale = sm_scale * 1.44269504
        R0: gl.constexpr = R[0]
        R1: gl.constexpr = R[1]
        R2: gl.constexpr = R[2]
        R3: gl.constexpr = R[3]
        if WORKERS == 3:
            gl.warp_specialize([
                (_partition, (bufs, descs, rows, n, qk_scale, R0, STAGES)),
                (_partition, (bufs, descs, rows, n, qk_scale, R1, STAGES)),
                (_partition, (bufs, descs, rows, n, qk_scale, R2, STAGES)),
                (_partition, (bufs, descs, rows, n, qk_scale, R3, STAGES)),
            ], [W[0], W[1], W[2]], [G[0], G[1], G[2]])  # fmt: skip
        elif WORKERS == 2:
            gl.warp_specialize([
                (_partition, (bufs, descs, rows, n, qk_scale, R0, STAGES)),
                (_partition, (bufs, descs, rows, n, qk_scale, R1, STAGES)),
                (_partition, (bufs, descs, rows, n, qk_scale, R2, STAGES)),
            ], [W[0], W[1]], [G[0], G[1]])  # fmt: skip
        else:
            gl.warp_specialize([
                (_partition, (bufs, descs, rows, n, qk_scale, R0, STAGES)),
                (_partition, (bufs, descs, rows, n, qk_scale, R1, STAGES)),
            ], [W[0]], [G[0]])  # fmt: skip


def role_mask(roles: tuple[str, ...]) -> int:
    """The ``ROLES`` bits of a partition running ``roles``."""
    return sum(1 << ROLE_ORDER.index(r) for r in roles)


def _descriptor_type() -> str:
    """Triton's signature string of a fp16 128 x 128 TMA descriptor (NVMMA shared layout)."""
    layout = gl.NVMMASharedLayout.get_default_for([BLOCK_M, HEAD_DIM], gl.float16)
    return f"tensordesc<fp16[{BLOCK_M}, {HEAD_DIM}],{layout!r}>"


def gluon_kernel() -> Any:  # noqa: ANN401 (a GluonJITFunction)
    """The Gluon kernel of this template (``None`` without Triton)."""
    return fa_fwd_sm100 if gluon is not None else None


def _checked_constexprs(plan: AttentionPlan) -> dict[str, Any]:
    """The kernel's constexprs for ``plan`` (roles, warps and registers per partition, ring
    depth), after checking that the plan fits the template."""
    from twill.codegen.gluon.common import SMEM_LIMIT

    if gluon is None:
        raise InvalidProblemError("the Gluon route needs Triton 3.9 (the triton extra)")
    if (plan.block_m, plan.block_n, plan.head_dim) != (BLOCK_M, BLOCK_N, HEAD_DIM):
        raise InvalidProblemError("the sm_100a Gluon template is written for 128 x 128 x 128 tiles")
    parts = plan.partitions
    if not 2 <= len(parts) <= 4 or not parts[0].default:
        raise InvalidProblemError(f"the template runs 2 to 4 partitions, the plan has {len(parts)}")
    ring = 2 * plan.kv_stages * BLOCK_N * HEAD_DIM * 2
    if SMEM_FIXED + ring > SMEM_LIMIT:
        raise InvalidProblemError(
            f"a K/V ring of {plan.kv_stages} blocks needs {SMEM_FIXED + ring:,} bytes of shared "
            f"memory, more than {SMEM_LIMIT:,}"
        )
    workers = parts[1:]
    pad = (0,) * (3 - len(workers))
    return {
        "STAGES": plan.kv_stages,
        "R": tuple(role_mask(p.roles) for p in parts) + pad,
        "W": tuple(p.warps for p in workers) + pad,
        "G": tuple(p.regs for p in workers) + pad,
        "WORKERS": len(workers),
    }


def attention_forward_sm100(plan: AttentionPlan) -> GluonKernel:
    """Compile the B200 FlashAttention forward with ``plan``'s partitions and ring depth
    (sm_100a, no GPU needed). Raises :class:`InvalidProblemError` when the plan does not fit
    the template (more than four partitions, tile sizes other than 128, a ring that
    overflows shared memory) or Triton cannot compile it."""
    consts = _checked_constexprs(plan)
    desc = _descriptor_type()
    sig = {"q_desc": desc, "k_desc": desc, "v_desc": desc, "o_desc": desc, "seq_len": "i32",
           "sm_scale": "fp32"}  # fmt: skip
    kernel = compile_gluon(fa_fwd_sm100, "sm_100a", sig, consts, num_warps=plan.partitions[0].warps)
    kernel.partitions = [p.to_dict() for p in plan.partitions]
    return kernel


def launch_sm100(
    plan: AttentionPlan,
    q: Any,  # noqa: ANN401 (torch tensors: [batch*heads*seq_len, 128] fp16 on a B200)
    k: Any,  # noqa: ANN401
    v: Any,  # noqa: ANN401
    seq_len: int,
    sm_scale: float,
) -> Any:  # noqa: ANN401
    """Run ``plan``'s kernel on the GPU (the shipped ``fa_fwd``'s layout: each batch*head's
    rows one after another, ``seq_len`` a multiple of 256); returns O. Not yet run on a GPU:
    ``benchmarks/triton_device.py`` checks it against torch when one is lent."""
    import torch

    rows = 2 * BLOCK_M
    check_attention_rows(q, seq_len, rows, HEAD_DIM)
    o = torch.empty_like(q)

    def desc(t: Any) -> Any:  # noqa: ANN401
        return fp16_descriptor(t, BLOCK_M, HEAD_DIM)

    grid = (seq_len // rows, q.shape[0] // seq_len)
    fa_fwd_sm100[grid](desc(q), desc(k), desc(v), desc(o), seq_len, sm_scale,
                       **_checked_constexprs(plan), num_warps=plan.partitions[0].warps)  # fmt: skip
    return o
