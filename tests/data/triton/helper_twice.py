"""Corpus kernel (twill tests): one helper with a loop, inlined at two calls.

The shape of attention backward kernels that call one inner-loop function twice (a masked
pass over the diagonal blocks, then an unmasked pass): two loops at one source line, told
apart by the line of each call. Written for twill's tests; not taken from any project.
"""

import triton
import triton.language as tl


@triton.jit
def _row_pass(acc, x_ptr, start, steps, BLOCK: tl.constexpr, MASK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(steps):
        x = tl.load(x_ptr + start + i * BLOCK + offs)
        if MASK:
            x = tl.where(offs <= i, x, 0.0)
        acc += tl.exp2(x)
    return acc


@triton.jit
def helper_twice(x_ptr, y_ptr, n_diag, n_rest, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    acc = _row_pass(acc, x_ptr + row * BLOCK, 0, n_diag, BLOCK, MASK=True)
    acc = _row_pass(acc, x_ptr + row * BLOCK, n_diag * BLOCK, n_rest, BLOCK, MASK=False)
    tl.store(y_ptr + row * BLOCK + tl.arange(0, BLOCK), acc)
