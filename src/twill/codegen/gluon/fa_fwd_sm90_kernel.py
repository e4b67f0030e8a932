"""The Gluon FlashAttention forward for sm_90a (H100), FA3-style (``attention_sm90`` compiles it).

The kernel computes ``O = softmax(Q Kᵀ · sm_scale) V`` for one ``BLOCK_M``-row block of Q per
program (``program_id(0)``) and one batch·head (``program_id(1)``), non-causal, FP16 in and out,
FP32 accumulation; Q, K, V and O are ``[batch·heads·seq_len, HEAD_DIM]`` row-major tensors (the
layout of the shipped ``fa_fwd`` kernel) and ``seq_len`` is a multiple of ``BLOCK_N`` and of
``BLOCK_M``.

Three roles, each a ``gl.warp_specialize`` function:

* the **producer** (one warp, few registers: ``setmaxnreg`` down) issues TMA loads: each Q half
  once, then every K and V block into its ring of shared-memory buffers, each slot with a *ready*
  mbarrier (TMA transaction bytes) and an *empty* one (both consumers arrive);
* two **consumers** (one warp group each, many registers: ``setmaxnreg`` up), one per 64-row half
  of the Q block (wgmma is 64 rows per warp group): ``S = Q Kᵀ`` by ``wgmma`` from shared memory,
  the online softmax in registers (row max, ``exp2``, row sum, rescale of O), ``O += P V`` by
  ``wgmma`` with P in registers, then ``O / l`` stored through the half's Q buffer by TMA.

Which role runs in which partition, with how many warps and registers, and the depth of each ring
come from the plan (Twill's slots and stage distances); nothing here was run on a GPU yet.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)


@gluon.jit
def _ring_slot(j, DEPTH: gl.constexpr):
    """Buffer index and mbarrier parity of the ``j``-th use of a ring of ``DEPTH`` buffers."""
    return j % DEPTH, (j // DEPTH) & 1


@gluon.jit
def _fa_producer(q_desc, k_desc, v_desc, bufs, bars, seq_len, CFG: gl.constexpr):
    """TMA loads: the two Q halves once, then each K and V block into its ring."""
    K_DEPTH: gl.constexpr = CFG[0]
    V_DEPTH: gl.constexpr = CFG[1]
    q_smem, k_smem, v_smem = bufs
    q_ready, k_ready, k_empty, v_ready, v_empty, _ = bars
    HALF: gl.constexpr = q_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    base = gl.program_id(1) * seq_len
    q_row = base + gl.program_id(0) * (2 * HALF)
    for h in gl.static_range(2):
        mbarrier.expect(q_ready.index(h), q_desc.block_type.nbytes)
        tma.async_load(q_desc, [q_row + h * HALF, 0], q_ready.index(h), q_smem.index(h))
    for j in range(seq_len // BLOCK_N):
        row = base + j * BLOCK_N
        ks, kph = _ring_slot(j, K_DEPTH)
        mbarrier.wait(k_empty.index(ks), kph ^ 1)
        mbarrier.expect(k_ready.index(ks), k_desc.block_type.nbytes)
        tma.async_load(k_desc, [row, 0], k_ready.index(ks), k_smem.index(ks))
        vs, vph = _ring_slot(j, V_DEPTH)
        mbarrier.wait(v_empty.index(vs), vph ^ 1)
        mbarrier.expect(v_ready.index(vs), v_desc.block_type.nbytes)
        tma.async_load(v_desc, [row, 0], v_ready.index(vs), v_smem.index(vs))


@gluon.jit
def _tc_turn_wait(turn, t, H: gl.constexpr, PINGPONG: gl.constexpr):
    """Wait for this warp group's ``t``-th turn at the tensor core: with ``PINGPONG`` the two
    consumers issue their MMAs in alternation (half 0's turn ``t``, half 1's turn ``t``, ...)."""
    if PINGPONG:
        if H == 0:
            mbarrier.wait(turn.index(0), (t + 1) & 1, pred=t > 0)
        else:
            mbarrier.wait(turn.index(1), t & 1)


@gluon.jit
def _tc_turn_pass(turn, H: gl.constexpr, PINGPONG: gl.constexpr):
    """Hand the tensor core to the other consumer (its next turn may start)."""
    if PINGPONG:
        mbarrier.arrive(turn.index(1 - H))


@gluon.jit
def _qk_issue(q, k_smem, k_ready, j, s_layout: gl.constexpr, K_DEPTH: gl.constexpr):
    """Wait for K block ``j`` and issue ``S = Q Kᵀ`` (asynchronous ``wgmma``)."""
    ks, kph = _ring_slot(j, K_DEPTH)
    mbarrier.wait(k_ready.index(ks), kph)
    s0 = gl.zeros([q.type.shape[0], k_smem.type.shape[1]], gl.float32, layout=s_layout)
    return warpgroup_mma(q, k_smem.index(ks).permute((1, 0)), s0, use_acc=False, is_async=True)


@gluon.jit
def _pv_issue(p16, acc, v_smem, v_ready, j, V_DEPTH: gl.constexpr):
    """Wait for V block ``j`` and issue ``O += P V`` (asynchronous ``wgmma``, P in registers)."""
    vs, vph = _ring_slot(j, V_DEPTH)
    mbarrier.wait(v_ready.index(vs), vph)
    return warpgroup_mma(p16, v_smem.index(vs), acc, is_async=True)


@gluon.jit
def _online_softmax(s, m_i, l_i, acc, qk_scale, p_layout: gl.constexpr):
    """One online-softmax step: the new row max, ``P = exp2(S·scale - m)`` as the FP16 operand
    of the next ``wgmma``, the row sum, and O rescaled by ``exp2(m_old - m_new)``."""
    m_new = gl.maximum(m_i, gl.max(s, 1) * qk_scale)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    alpha = gl.exp2(m_i - m_new)
    l_i = l_i * alpha + gl.sum(p, 1)
    acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, acc.type.layout))[:, None]
    p16 = gl.convert_layout(p.to(gl.float16), p_layout)
    return p16, m_new, l_i, acc


@gluon.jit
def _fa_consumer(o_desc, bufs, bars, seq_len, qk_scale, H: gl.constexpr, CFG: gl.constexpr):
    """One warp group on Q half ``H``: per K/V block S = Q Kᵀ, the online softmax and O += P V
    (the P V of block ``j - 1`` issued with the S of block ``j``, in one tensor-core turn), then
    O / l stored through the half's Q buffer."""
    K_DEPTH: gl.constexpr = CFG[0]
    V_DEPTH: gl.constexpr = CFG[1]
    PINGPONG: gl.constexpr = CFG[2]
    q_smem, k_smem, v_smem = bufs
    q_ready, k_ready, k_empty, v_ready, v_empty, turn = bars
    HALF: gl.constexpr = o_desc.block_type.shape[0]
    HEAD_DIM: gl.constexpr = o_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_smem.type.shape[1]
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16]
    )
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_DIM, 16]
    )
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    q = q_smem.index(H)
    m_i = gl.full([HALF], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([HALF], gl.float32, layout=gl.SliceLayout(1, s_layout))
    acc = gl.zeros([HALF, HEAD_DIM], gl.float32, layout=o_layout)
    n = seq_len // BLOCK_N
    mbarrier.wait(q_ready.index(H), 0)
    _tc_turn_wait(turn, 0, H, PINGPONG)
    s = _qk_issue(q, k_smem, k_ready, 0, s_layout, K_DEPTH)
    _tc_turn_pass(turn, H, PINGPONG)
    s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
    mbarrier.arrive(k_empty.index(0))
    p16, m_i, l_i, acc = _online_softmax(s, m_i, l_i, acc, qk_scale, p_layout)
    for j in range(1, n):
        _tc_turn_wait(turn, j, H, PINGPONG)
        acc = _pv_issue(p16, acc, v_smem, v_ready, j - 1, V_DEPTH)
        s = _qk_issue(q, k_smem, k_ready, j, s_layout, K_DEPTH)
        _tc_turn_pass(turn, H, PINGPONG)
        acc, s = warpgroup_mma_wait(num_outstanding=0, deps=(acc, s))
        mbarrier.arrive(v_empty.index((j - 1) % V_DEPTH))
        mbarrier.arrive(k_empty.index(j % K_DEPTH))
        p16, m_i, l_i, acc = _online_softmax(s, m_i, l_i, acc, qk_scale, p_layout)
    _tc_turn_wait(turn, n, H, PINGPONG)
    acc = _pv_issue(p16, acc, v_smem, v_ready, n - 1, V_DEPTH)
    _tc_turn_pass(turn, H, PINGPONG)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    mbarrier.arrive(v_empty.index((n - 1) % V_DEPTH))
    out = acc / gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))[:, None]
    q.store(out.to(o_desc.dtype))
    fence_async_shared()
    o_row = gl.program_id(1) * seq_len + gl.program_id(0) * (2 * HALF) + H * HALF
    tma.async_store(o_desc, [o_row, 0], q)
    tma.store_wait(pendings=0)


@gluon.jit
def _alloc_ring(
    dtype: gl.constexpr, shape: gl.constexpr, layout: gl.constexpr, DEPTH: gl.constexpr
):
    """``DEPTH`` shared-memory buffers of ``shape``, a *ready* mbarrier per buffer (the TMA
    arrives with its bytes) and an *empty* one (both consumers arrive when done reading)."""
    smem = gl.allocate_shared_memory(dtype, [DEPTH] + shape, layout)
    ready = gl.allocate_shared_memory(gl.int64, [DEPTH, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [DEPTH, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(DEPTH):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)
    return smem, ready, empty


@gluon.jit
def fa_fwd_sm90_kernel(
    q_desc,
    k_desc,
    v_desc,
    o_desc,
    seq_len,
    sm_scale,
    CFG: gl.constexpr,
    WORKER_WARPS: gl.constexpr,
    WORKER_REGS: gl.constexpr,
):
    """Allocate the rings and barriers, then fork: the consumer of half ``CFG[3]`` (the default
    partition), that of the other half and the producer. ``CFG`` = (K ring depth, V ring depth,
    whether the consumers take turns at the tensor core, the default partition's half)."""
    HALF: gl.constexpr = q_desc.block_type.shape[0]
    HEAD_DIM: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [2, HALF, HEAD_DIM], q_desc.layout)
    k_smem, k_ready, k_empty = _alloc_ring(dtype, [BLOCK_N, HEAD_DIM], k_desc.layout, CFG[0])
    v_smem, v_ready, v_empty = _alloc_ring(dtype, [BLOCK_N, HEAD_DIM], v_desc.layout, CFG[1])
    q_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for h in gl.static_range(2):
        mbarrier.init(q_ready.index(h), count=1)
        mbarrier.init(turn.index(h), count=1)
    bufs = (q_smem, k_smem, v_smem)
    bars = (q_ready, k_ready, k_empty, v_ready, v_empty, turn)
    qk_scale = sm_scale * 1.4426950408889634
    gl.warp_specialize(
        [
            (_fa_consumer, (o_desc, bufs, bars, seq_len, qk_scale, CFG[3], CFG)),
            (_fa_consumer, (o_desc, bufs, bars, seq_len, qk_scale, 1 - CFG[3], CFG)),
            (_fa_producer, (q_desc, k_desc, v_desc, bufs, bars, seq_len, CFG)),
        ],
        WORKER_WARPS,
        WORKER_REGS,
    )


# Gluon reads the annotations of a jit function's parameters (constexpr): the others stay bare.
# ruff: noqa: ANN001, ANN201, ANN202
