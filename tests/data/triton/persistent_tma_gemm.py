"""Corpus kernel (twill tests): a persistent GEMM with TMA descriptors made on the device; the
tile loop holds the K loop, and the tile's epilogue (convert and store) sits in the outer
loop's body. Written for twill's tests; not taken from any project.
"""

import triton
import triton.language as tl


@triton.jit
def persistent_tma_gemm(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    NUM_SMS: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tiles_n = tl.cdiv(N, BN)
    num_tiles = tl.cdiv(M, BM) * tiles_n
    for tile in range(tl.program_id(0), num_tiles, NUM_SMS):
        om = (tile // tiles_n) * BM
        on = (tile % tiles_n) * BN
        acc = tl.zeros([BM, BN], tl.float32)
        for k in range(0, K, BK):
            a = a_desc.load([om, k])
            b = b_desc.load([on, k])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([om, on], acc.to(tl.float16))
