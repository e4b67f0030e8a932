"""Public example kernels (``twill.kernels``): FlashAttention forward and backward, a GEMM loop.

Thin re-export of :mod:`twill.sched.kernels`, where each factory's docstring derives its cycle
counts from public hardware rates.

Examples
--------
>>> from twill.kernels import flash_attention_forward_simplified
>>> flash_attention_forward_simplified().names
['S', 'P', 'O']
"""

from twill.sched.kernels import (
    KERNELS,
    flash_attention_backward_blackwell,
    flash_attention_backward_hopper,
    flash_attention_forward_blackwell,
    flash_attention_forward_hopper,
    flash_attention_forward_simplified,
    get_kernel,
    simple_gemm_pipeline,
)

__all__ = [
    "flash_attention_forward_simplified",
    "flash_attention_forward_hopper",
    "flash_attention_forward_blackwell",
    "flash_attention_backward_hopper",
    "flash_attention_backward_blackwell",
    "simple_gemm_pipeline",
    "KERNELS",
    "get_kernel",
]
