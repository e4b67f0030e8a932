"""FADiff: fusion-aware differentiable mapping of whole networks on Gemmini (``docs/fadiff.md``).

Modules: :mod:`~twill.mapping.network` (layer graphs), :mod:`~twill.mapping.fadiff.fusion`
(fusion accounting, fused-plan verifier, exact evaluation), :mod:`~twill.mapping.fadiff.model`
(the differentiable Gemmini model, torch), :mod:`~twill.mapping.fadiff.relax` (Gumbel-softmax
relaxations), :mod:`~twill.mapping.fadiff.train` (the optimiser: ``solve(problem, options)`` on a
:class:`~twill.mapping.problems.NetworkMappingProblem`) and
:mod:`~twill.mapping.fadiff.baselines`. Torch is imported only by ``model``, ``relax`` and
``train``, on use.
"""

__all__: list[str] = []
