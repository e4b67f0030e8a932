"""Corpus kernel (twill tests): a row loss with an early return for masked rows.

The shape of cross-entropy and loss kernels: a masked row zeroes its output and returns; the
other rows run two loops over the row (a sum of squares, then a scaled copy with a branch).
Written for twill's tests; not taken from any project.
"""

import triton
import triton.language as tl


@triton.jit
def early_return(x_ptr, y_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    flag = tl.load(flag_ptr + row)
    if flag == 0:
        for i in range(0, n, BLOCK):
            offs = i + tl.arange(0, BLOCK)
            tl.store(y_ptr + row * n + offs, tl.zeros([BLOCK], tl.float32), mask=offs < n)
        return
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
        acc += x * x
    total = tl.sum(acc, axis=0)
    for i in range(0, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
        if total > 1.0:
            x = x / total
        else:
            x = x * 2.0
        tl.store(y_ptr + row * n + offs, x, mask=offs < n)
