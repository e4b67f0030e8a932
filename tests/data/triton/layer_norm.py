"""Corpus kernel (twill tests): layer norm forward in three loops over the row.

The shape of the usual Triton layer-norm forward: one loop for the mean, one for the
variance, one that normalises and writes. Written for twill's tests; not taken from any project.
"""

import triton
import triton.language as tl


@triton.jit
def layer_norm(x_ptr, y_ptr, w_ptr, b_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        acc += tl.load(x_row + offs, mask=offs < n, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < n, other=0.0).to(tl.float32)
        d = tl.where(offs < n, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n + eps)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask)
        b = tl.load(b_ptr + offs, mask=mask)
        tl.store(y_ptr + row * n + offs, ((x - mean) * rstd * w + b).to(tl.float16), mask=mask)
