"""Corpus kernel (twill tests): an online softmax over a long row in two loops.

First loop: running max and running sum with rescaling (two reductions per block); second
loop: normalise and write. Written for twill's tests; not taken from any project.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_loops(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([1], float("-inf"), tl.float32)
    s = tl.zeros([1], tl.float32)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=float("-inf")).to(tl.float32)
        tl.store(y_ptr + row * n + offs, tl.exp(x - m) / s, mask=offs < n)
