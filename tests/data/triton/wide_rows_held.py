"""Corpus kernel (twill tests): two very wide FP32 rows held across their row maxima.

32768-element blocks with 32 warps: each row is read by its reduction and by the element-wise
chain after it, so both rows are held whole until the chain runs (ptxas spills such rows to
local memory; Twill, which models no spilling, proves that H100's warp slots cannot hold them).
Written for twill's tests; not taken from any project.
"""

import triton
import triton.language as tl


@triton.jit
def wide_rows_held(p_ptr, q_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        mask = offs < n
        p = tl.load(p_ptr + row * n + offs, mask=mask, other=0.0)
        q = tl.load(q_ptr + row * n + offs, mask=mask, other=0.0)
        tl.store(
            out_ptr + row * n + offs, (p - tl.max(p, axis=0)) * (q - tl.max(q, axis=0)), mask=mask
        )
