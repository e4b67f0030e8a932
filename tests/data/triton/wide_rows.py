"""Corpus kernel (twill tests): a loss over one very wide FP32 row, as loss kernels have it.

One loop over the row in blocks of 32768 elements with 32 warps: two loads, an element-wise
chain, the loss summed (one reduction) and the gradient stored. Each block is 256 registers
per thread on one warp group, more than a warp group has: Triton runs the chain element by
element over all 32 warps. Written for twill's tests; not taken from any project.
"""

import triton
import triton.language as tl


@triton.jit
def wide_rows(p_ptr, q_ptr, grad_ptr, loss_ptr, n, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    total = tl.zeros([1], tl.float32)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        mask = offs < n
        p = tl.load(p_ptr + row * n + offs, mask=mask, other=0.0)
        q = tl.load(q_ptr + row * n + offs, mask=mask, other=0.0)
        d = p - q
        total += tl.sum(d * d, axis=0)
        tl.store(grad_ptr + row * n + offs, 2.0 * scale * d, mask=mask)
    tl.store(loss_ptr + row + tl.arange(0, 1), total * scale)
