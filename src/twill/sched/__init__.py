"""Family 1: dependence graphs of loop bodies and their schedulers.

* :mod:`twill.sched.ir`: the IR (instructions, edges, machine, graph).
* :mod:`twill.sched.validate`: ``check_graph`` (every defect at once).
* :mod:`twill.sched.verify`: independent modulo / DAG schedule verifiers.
* :mod:`twill.sched.bounds`: ResMII, RecMII, MII, ASAP.
* :mod:`twill.sched.exact`: Twill Phase 1 (exact modulo scheduling) and the search for I*.
* :mod:`twill.sched.kernels`: the FlashAttention / GEMM example graphs.
* :mod:`twill.sched.normalize`: cost normalisation (Twill paper §5.2).

Importing this package is cheap; solver libraries load inside the functions that use them.
"""

from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription

__all__ = ["DependenceGraph", "Edge", "Instruction", "MachineDescription"]
