"""Triton kernels for ``twill import-triton``: a GEMM and FlashAttention forward/backward.

Each kernel has one innermost ``for`` loop over the reduction (K) or key/value (N) dimension;
that loop body is what Twill schedules. Compile only with the ``triton`` extra installed;
signatures and constexprs are in ``kernels.yaml`` beside this file.
"""

import triton
import triton.language as tl


@triton.jit
def gemm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C[BM, BN] tile = A[BM, K] @ B[K, BN], one K block per loop iteration."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a_blk = a_desc.load([pid_m * BM, k])
        b_blk = b_desc.load([k, pid_n * BN])
        acc = tl.dot(a_blk, b_blk, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


@triton.jit
def _fa_fwd_step(q, k_blk, v_blk, acc, m_i, l_i, qk_scale):
    """One online-softmax step of a Q (sub-)tile against one K/V block."""
    s = tl.dot(q, tl.trans(k_blk)) * qk_scale
    m_new = tl.maximum(m_i, tl.max(s, 1))
    p = tl.math.exp2(s - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_new = l_i * alpha + tl.sum(p, 1)
    acc = tl.dot(p.to(tl.float16), v_blk, acc * alpha[:, None])
    return acc, m_new, l_new


@triton.jit
def fa_fwd(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    sm_scale,
    BM: tl.constexpr,
    BN: tl.constexpr,
    D: tl.constexpr,
    SUBTILES: tl.constexpr,
):
    """FlashAttention forward for one (batch*head, Q block); SUBTILES = 1 or 2 Q sub-tiles."""
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    rows = seq_len * tl.num_programs(1)
    q_desc = tl.make_tensor_descriptor(q_ptr, [rows, D], [D, 1], [BM // SUBTILES, D])
    k_desc = tl.make_tensor_descriptor(k_ptr, [rows, D], [D, 1], [BN, D])
    v_desc = tl.make_tensor_descriptor(v_ptr, [rows, D], [D, 1], [BN, D])
    o_desc = tl.make_tensor_descriptor(o_ptr, [rows, D], [D, 1], [BM // SUBTILES, D])
    base = bh * seq_len
    q_row = base + pid * BM
    qk_scale = sm_scale * 1.44269504
    BS: tl.constexpr = BM // SUBTILES
    q0 = q_desc.load([q_row, 0])
    acc0 = tl.zeros((BS, D), dtype=tl.float32)
    m0 = tl.full((BS,), float("-inf"), tl.float32)
    l0 = tl.zeros((BS,), dtype=tl.float32)
    if SUBTILES == 2:
        q1 = q_desc.load([q_row + BS, 0])
        acc1 = tl.zeros((BS, D), dtype=tl.float32)
        m1 = tl.full((BS,), float("-inf"), tl.float32)
        l1 = tl.zeros((BS,), dtype=tl.float32)
        for n in range(0, seq_len, BN):
            k_blk = k_desc.load([base + n, 0])
            v_blk = v_desc.load([base + n, 0])
            acc0, m0, l0 = _fa_fwd_step(q0, k_blk, v_blk, acc0, m0, l0, qk_scale)
            acc1, m1, l1 = _fa_fwd_step(q1, k_blk, v_blk, acc1, m1, l1, qk_scale)
        o_desc.store([q_row + BS, 0], (acc1 / l1[:, None]).to(tl.float16))
    else:
        for n in range(0, seq_len, BN):
            k_blk = k_desc.load([base + n, 0])
            v_blk = v_desc.load([base + n, 0])
            acc0, m0, l0 = _fa_fwd_step(q0, k_blk, v_blk, acc0, m0, l0, qk_scale)
    o_desc.store([q_row, 0], (acc0 / l0[:, None]).to(tl.float16))


@triton.jit
def fa_bwd(
    q_ptr,
    k_ptr,
    v_ptr,
    do_ptr,
    lse_ptr,
    delta_ptr,
    dq_ptr,
    dk_ptr,
    dv_ptr,
    seq_len,
    sm_scale,
    BM: tl.constexpr,
    BN: tl.constexpr,
    D: tl.constexpr,
):
    """FlashAttention backward (FA3 single pass): one K/V block, loop over Q blocks.

    Five GEMMs per iteration (S, dP, dV, dK, dQ), one exp2, and an atomic add of dQ.
    """
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    rows = seq_len * tl.num_programs(1)
    base = bh * seq_len
    kv_row = base + pid * BN
    q_desc = tl.make_tensor_descriptor(q_ptr, [rows, D], [D, 1], [BM, D])
    do_desc = tl.make_tensor_descriptor(do_ptr, [rows, D], [D, 1], [BM, D])
    k_desc = tl.make_tensor_descriptor(k_ptr, [rows, D], [D, 1], [BN, D])
    v_desc = tl.make_tensor_descriptor(v_ptr, [rows, D], [D, 1], [BN, D])
    k_blk = k_desc.load([kv_row, 0])
    v_blk = v_desc.load([kv_row, 0])
    dk = tl.zeros((BN, D), dtype=tl.float32)
    dv = tl.zeros((BN, D), dtype=tl.float32)
    offs_d = tl.arange(0, D)
    for m in range(0, seq_len, BM):
        offs_m = base + m + tl.arange(0, BM)
        q_blk = q_desc.load([base + m, 0])
        do_blk = do_desc.load([base + m, 0])
        lse = tl.load(lse_ptr + offs_m)
        delta = tl.load(delta_ptr + offs_m)
        s_t = tl.dot(k_blk, tl.trans(q_blk))
        p_t = tl.math.exp2(s_t - lse[None, :])
        dv = tl.dot(p_t.to(tl.float16), do_blk, dv)
        dp_t = tl.dot(v_blk, tl.trans(do_blk))
        ds_t = p_t * (dp_t - delta[None, :])
        ds16 = ds_t.to(tl.float16)
        dk = tl.dot(ds16, q_blk, dk)
        dq = tl.dot(tl.trans(ds16), k_blk) * sm_scale
        tl.atomic_add(dq_ptr + offs_m[:, None] * D + offs_d[None, :], dq)
    dk_ptrs = dk_ptr + (kv_row + tl.arange(0, BN))[:, None] * D + offs_d[None, :]
    dv_ptrs = dv_ptr + (kv_row + tl.arange(0, BN))[:, None] * D + offs_d[None, :]
    tl.store(dk_ptrs, (dk * sm_scale).to(tl.float16))
    tl.store(dv_ptrs, dv.to(tl.float16))


# ruff: noqa: ANN001, ANN201, ANN202
