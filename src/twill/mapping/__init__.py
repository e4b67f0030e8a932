"""Family 2: DNN layers mapped onto spatial accelerators (CoSA, baselines, FADiff).

Specs (:mod:`~twill.mapping.workload`, :mod:`~twill.mapping.arch`,
:mod:`~twill.mapping.mapping`), the Timeloop-class cost model (:mod:`~twill.mapping.cost`),
the CoSA MIP (:mod:`~twill.mapping.cosa`), search baselines (:mod:`~twill.mapping.search`) and
the per-network pipeline (:mod:`~twill.mapping.pipeline`). Never imports :mod:`twill.sched`.
"""

__all__: list[str] = []
