"""Corpus kernel (twill tests): attention backward for one K/V block and one Q block in four
top-level loops, as split-phase backward kernels have them.

Loop 1 recomputes the row statistics of the Q block (max and sum of exp, two reductions per
step); loop 2 accumulates dV and dK over Q blocks (four GEMMs); loop 3 accumulates dQ over K/V
blocks (three GEMMs and a reduction); loop 4 writes dQ in slices. Written for twill's tests;
not taken from any project.
"""

import triton
import triton.language as tl


# fmt: off
@triton.jit
def attn_bwd4(q_ptr, k_ptr, v_ptr, do_ptr, dq_ptr, dk_ptr, dv_ptr, seq_len, sm_scale,
              BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    # fmt: on
    start = tl.program_id(0) * BN
    rn = start + tl.arange(0, BN)
    rm0 = start + tl.arange(0, BM)
    rd = tl.arange(0, D)
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    q0 = tl.load(q_ptr + rm0[:, None] * D + rd[None, :])
    m = tl.full([BM], float("-inf"), tl.float32)
    l = tl.zeros([BM], tl.float32)
    for n in range(0, seq_len, BN):
        kn = tl.load(k_ptr + (n + tl.arange(0, BN))[:, None] * D + rd[None, :])
        s = tl.dot(q0, tl.trans(kn)) * sm_scale
        m_new = tl.maximum(m, tl.max(s, axis=1))
        l = l * tl.exp2(m - m_new) + tl.sum(tl.exp2(s - m_new[:, None]), axis=1)
        m = m_new
    dk = tl.zeros([BN, D], tl.float32)
    dv = tl.zeros([BN, D], tl.float32)
    for mm in range(0, seq_len, BM):
        rm = mm + tl.arange(0, BM)
        q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
        do = tl.load(do_ptr + rm[:, None] * D + rd[None, :])
        p = tl.exp2(tl.dot(q, tl.trans(k)) * sm_scale - m[:, None]) / l[:, None]
        dv += tl.dot(tl.trans(p.to(tl.float16)), do)
        dp = tl.dot(do, tl.trans(v))
        ds = (p * (dp - tl.sum(p * dp, axis=1)[:, None])).to(tl.float16)
        dk += tl.dot(tl.trans(ds), q)
    tl.store(dk_ptr + rn[:, None] * D + rd[None, :], dk.to(tl.float16))
    tl.store(dv_ptr + rn[:, None] * D + rd[None, :], dv.to(tl.float16))
    dq = tl.zeros([BM, D], tl.float32)
    do0 = tl.load(do_ptr + rm0[:, None] * D + rd[None, :])
    for n in range(0, seq_len, BN):
        rk = n + tl.arange(0, BN)
        kn = tl.load(k_ptr + rk[:, None] * D + rd[None, :])
        vn = tl.load(v_ptr + rk[:, None] * D + rd[None, :])
        p = tl.exp2(tl.dot(q0, tl.trans(kn)) * sm_scale - m[:, None]) / l[:, None]
        dp = tl.dot(do0, tl.trans(vn))
        ds = (p * (dp - tl.sum(p * dp, axis=1)[:, None])).to(tl.float16)
        dq += tl.dot(ds, kn)
    for c in range(0, D, 32):
        rc = c + tl.arange(0, 32)
        sl = tl.load(dq_ptr + rm0[:, None] * D + rc[None, :])
        tl.store(dq_ptr + rm0[:, None] * D + rc[None, :], sl + 1.0)
    tl.store(dq_ptr + rm0[:, None] * D + rd[None, :], dq)
