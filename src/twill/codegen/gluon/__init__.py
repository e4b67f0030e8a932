"""The Gluon route (``triton.experimental.gluon``): kernel templates whose partitions,
warps, registers and buffer depths are read from Twill's schedule.

* :mod:`twill.codegen.gluon.common`: compiling a Gluon kernel without a GPU, its resources,
  whether it can launch (:class:`~twill.codegen.gluon.common.GluonKernel`);
* :mod:`twill.codegen.gluon.plan`: Twill's answer for the FlashAttention forward -> an
  :class:`~twill.codegen.gluon.plan.AttentionPlan`;
* :mod:`twill.codegen.gluon.attention_sm100`: the B200 kernel (tcgen05, tensor memory);
* :mod:`twill.codegen.gluon.attention_sm90`: the H100 kernel (wgmma, one consumer warp group
  per Q sub-tile).

``twill compile`` reaches them through :mod:`twill.triton.gluon_route`.

Needs the ``triton`` extra (Triton 3.9.0).
"""

from __future__ import annotations
