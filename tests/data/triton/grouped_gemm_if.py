"""Corpus kernel (twill tests): a grouped GEMM whose problems are walked by a while loop, the
K loop inside it, and an if inside the K loop (the last, partial K tile is masked).

Written for twill's tests; not taken from any project.
"""

import triton
import triton.language as tl


@triton.jit
def grouped_gemm_if(
    a_ptrs, b_ptrs, c_ptrs, sizes, groups, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    g = 0
    while g < groups:
        a_ptr = tl.load(a_ptrs + g).to(tl.pointer_type(tl.float16))
        b_ptr = tl.load(b_ptrs + g).to(tl.pointer_type(tl.float16))
        c_ptr = tl.load(c_ptrs + g).to(tl.pointer_type(tl.float16))
        K = tl.load(sizes + g)
        rm = tl.arange(0, BM)
        rn = tl.arange(0, BN)
        acc = tl.zeros([BM, BN], tl.float32)
        for k in range(0, K, BK):
            rk = k + tl.arange(0, BK)
            if k + BK <= K:
                a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
                b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
            else:
                a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=rk[None, :] < K, other=0.0)
                b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :], mask=rk[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))
        g += tl.num_programs(0)
