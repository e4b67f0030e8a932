"""Public example kernels (``twill.kernels``): FlashAttention forward and backward, a GEMM loop.

Thin re-export of :mod:`twill.sched.kernels`, where each factory's docstring derives its cycle
counts from public hardware rates.

Examples
--------
>>> from twill.kernels import flash_attention_forward_simplified
>>> flash_attention_forward_simplified().names
['S', 'P', 'O']
"""

from twill.sched import kernels as _kernels
from twill.sched.kernels import *  # noqa: F403  (the public names, listed once there)

__all__ = list(_kernels.__all__)
