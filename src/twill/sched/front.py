"""What the outer layers take from the scheduling family's solvers, in one module.

Issue 51 (orchestration out of ``cli/`` and the front ends): ``twill solve``, ``bounds``,
``kernels``, ``gaus``, ``codegen`` and ``compile`` reach ``twill.sched`` through this front
only, so the CLI imports a handful of core modules instead of every solver's internals; the
Triton front end takes the problems it builds (:class:`PinnedProblem`, :class:`Pins`) and the
kernel loop's solves (:mod:`twill.sched.exact.kernel_loop`) from here too, and no module
outside the families imports a solver's module (``tests/test_layering.py``). Nothing here
computes: each name is the family's own object (the exact pipeline's :func:`run`, the GauS
pipeline's :func:`run_gaus`, ...), re-exported, so a call through the front is the same call,
frame for frame.

A name's module is imported when the name is first read (PEP 562), so a command loads only
what it uses, as before this front existed. The imports under ``TYPE_CHECKING`` are the same
table, for readers, type checkers and ``tests/test_layering.py``.

Examples
--------
>>> from twill.sched.front import KERNELS, WarpSpecProblem, run
>>> run(WarpSpecProblem(KERNELS["flash_attention_forward_simplified"](), max_II=5)).I
2
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twill._lazy import lazy_exports

if TYPE_CHECKING:
    from twill.progress import OnProgress, ProgressEvent
    from twill.results import WarpSchedule
    from twill.sched.bounds import rec_mii, res_mii, total_usage
    from twill.sched.exact.kernel_loop import at_fixed_warps, explain_joint_I, solve_for_compile
    from twill.sched.exact.pinned import PinnedProblem, Pins, pinned_answer
    from twill.sched.exact.pipeline import run
    from twill.sched.exact.search import with_run_settings
    from twill.sched.exact.settings import TwillSettings
    from twill.sched.exact.single import single_partition_graph
    from twill.sched.gaus.pipeline import GauSRun, caps_of, check_baseline, options_for, run_gaus
    from twill.sched.ir import DependenceGraph
    from twill.sched.kernels import KERNELS
    from twill.sched.problems import PROBLEM_TEXT, WarpSpecProblem

__all__ = [
    "DependenceGraph",
    "GauSRun",
    "KERNELS",
    "OnProgress",
    "PROBLEM_TEXT",
    "PinnedProblem",
    "Pins",
    "ProgressEvent",
    "TwillSettings",
    "WarpSchedule",
    "WarpSpecProblem",
    "at_fixed_warps",
    "caps_of",
    "check_baseline",
    "explain_joint_I",
    "options_for",
    "pinned_answer",
    "rec_mii",
    "res_mii",
    "run",
    "run_gaus",
    "single_partition_graph",
    "solve_for_compile",
    "total_usage",
    "with_run_settings",
]

#: module -> the names this front takes from it
_FROM: dict[str, tuple[str, ...]] = {
    "twill.progress": ("OnProgress", "ProgressEvent"),
    "twill.results": ("WarpSchedule",),
    "twill.sched.bounds": ("rec_mii", "res_mii", "total_usage"),
    "twill.sched.exact.kernel_loop": ("at_fixed_warps", "explain_joint_I", "solve_for_compile"),
    "twill.sched.exact.pinned": ("PinnedProblem", "Pins", "pinned_answer"),
    "twill.sched.exact.pipeline": ("run",),
    "twill.sched.exact.search": ("with_run_settings",),
    "twill.sched.exact.settings": ("TwillSettings",),
    "twill.sched.exact.single": ("single_partition_graph",),
    "twill.sched.gaus.pipeline": (
        "GauSRun",
        "caps_of",
        "check_baseline",
        "options_for",
        "run_gaus",
    ),
    "twill.sched.ir": ("DependenceGraph",),
    "twill.sched.kernels": ("KERNELS",),
    "twill.sched.problems": ("PROBLEM_TEXT", "WarpSpecProblem"),
}
_MODULE_OF = {name: module for module, names in _FROM.items() for name in names}
__getattr__, __dir__ = lazy_exports(globals(), _MODULE_OF)
