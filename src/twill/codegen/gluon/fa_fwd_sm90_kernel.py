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
def _fa_producer(
    q_desc, k_desc, v_desc, bufs, bars, seq_len, K_DEPTH: gl.constexpr, V_DEPTH: gl.constexpr
):
    """TMA loads: the two Q halves once, then each K and V block into its ring."""
    q_smem, k_smem, v_smem = bufs
    q_ready, k_ready, k_empty, v_ready, v_empty = bars
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
def _fa_consumer(
    o_desc,
    bufs,
    bars,
    seq_len,
    qk_scale,
    H: gl.constexpr,
    K_DEPTH: gl.constexpr,
    V_DEPTH: gl.constexpr,
):
    """One warp group on Q half ``H``: S = Q Kᵀ, online softmax, O += P V, then O / l stored."""
    q_smem, k_smem, v_smem = bufs
    q_ready, k_ready, k_empty, v_ready, v_empty = bars
    HALF: gl.constexpr = o_desc.block_type.shape[0]
    HEAD_DIM: gl.constexpr = o_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_smem.type.shape[1]
    dtype: gl.constexpr = o_desc.dtype
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16]
    )
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_DIM, 16]
    )
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
    q = q_smem.index(H)
    m_i = gl.full([HALF], float("-inf"), gl.float32, layout=row_layout)
    l_i = gl.zeros([HALF], gl.float32, layout=row_layout)
    acc = gl.zeros([HALF, HEAD_DIM], gl.float32, layout=o_layout)
    s_zero = gl.zeros([HALF, BLOCK_N], gl.float32, layout=s_layout)
    mbarrier.wait(q_ready.index(H), 0)
    for j in range(seq_len // BLOCK_N):
        ks, kph = _ring_slot(j, K_DEPTH)
        mbarrier.wait(k_ready.index(ks), kph)
        k = k_smem.index(ks)
        s = warpgroup_mma(q, k.permute((1, 0)), s_zero, use_acc=False, is_async=True)
        s, _, _ = warpgroup_mma_wait(num_outstanding=0, deps=(s, q, k))
        mbarrier.arrive(k_empty.index(ks))
        m_new = gl.maximum(m_i, gl.max(s, 1) * qk_scale)
        p = gl.exp2(s * qk_scale - m_new[:, None])
        alpha = gl.exp2(m_i - m_new)
        l_i = l_i * alpha + gl.sum(p, 1)
        m_i = m_new
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
        vs, vph = _ring_slot(j, V_DEPTH)
        mbarrier.wait(v_ready.index(vs), vph)
        v = v_smem.index(vs)
        p16 = gl.convert_layout(p.to(dtype), p_layout)
        acc = warpgroup_mma(p16, v, acc, is_async=True)
        acc, _ = warpgroup_mma_wait(num_outstanding=0, deps=(acc, v))
        mbarrier.arrive(v_empty.index(vs))
    out = acc / gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))[:, None]
    q.store(out.to(dtype))
    fence_async_shared()
    o_row = gl.program_id(1) * seq_len + gl.program_id(0) * (2 * HALF) + H * HALF
    tma.async_store(o_desc, [o_row, 0], q)
    tma.store_wait(pendings=0)


@gluon.jit
def fa_fwd_sm90_kernel(
    q_desc,
    k_desc,
    v_desc,
    o_desc,
    seq_len,
    sm_scale,
    K_DEPTH: gl.constexpr,
    V_DEPTH: gl.constexpr,
    WORKER_WARPS: gl.constexpr,
    WORKER_REGS: gl.constexpr,
):
    """Allocate the rings and barriers, then fork: the consumers of halves 0 and 1, the producer."""
    HALF: gl.constexpr = q_desc.block_type.shape[0]
    HEAD_DIM: gl.constexpr = q_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [2, HALF, HEAD_DIM], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [K_DEPTH, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [V_DEPTH, BLOCK_N, HEAD_DIM], v_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [K_DEPTH, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [K_DEPTH, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [V_DEPTH, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [V_DEPTH, 1], mbarrier.MBarrierLayout())
    for h in gl.static_range(2):
        mbarrier.init(q_ready.index(h), count=1)
    for i in gl.static_range(K_DEPTH):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)
    for i in gl.static_range(V_DEPTH):
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(v_empty.index(i), count=2)
    bufs = (q_smem, k_smem, v_smem)
    bars = (q_ready, k_ready, k_empty, v_ready, v_empty)
    qk_scale = sm_scale * 1.4426950408889634
    gl.warp_specialize(
        [
            (_fa_consumer, (o_desc, bufs, bars, seq_len, qk_scale, 0, K_DEPTH, V_DEPTH)),
            (_fa_consumer, (o_desc, bufs, bars, seq_len, qk_scale, 1, K_DEPTH, V_DEPTH)),
            (_fa_producer, (q_desc, k_desc, v_desc, bufs, bars, seq_len, K_DEPTH, V_DEPTH)),
        ],
        WORKER_WARPS,
        WORKER_REGS,
    )


# Gluon reads the annotations of a jit function's parameters (constexpr): the others stay bare.
# ruff: noqa: ANN001, ANN201, ANN202
