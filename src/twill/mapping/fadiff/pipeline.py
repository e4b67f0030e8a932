"""The ``twill fuse`` run as one function: layer-wise mapping, group search, FADiff, bound.

Issue 51 (orchestration out of ``cli/``): :func:`fuse` runs the steps of ``twill fuse`` and
splits one :class:`~twill.deadline.Deadline` between them; the command parses, calls it and
prints. With ``g = settings.grace_seconds`` (a tenth of the limit), the steps and their time:

1. every unique layer shape mapped by the layer method (:func:`map_layer_shapes`, what
   ``map-network`` does), to ``2 g`` before the deadline (a shape not mapped by then keeps
   the all-DRAM mapping, counted in ``unmapped_layers``);
2. the group search on those mappings (most of the fusion gain, seconds of CPU): to ``g``
   before the deadline, so at least ``g``;
3. the layer-wise gradient (FADiff without fusion): a third of the time left before that;
4. FADiff from the better layer-wise plan: the rest. Steps 3 and 4 are skipped when no time
   is left (the plan is then the group search's, or the layer-wise one);
5. the fusion bound (:func:`fusion_gain`): the last ``g``; skipped (and said so in
   ``bound_note``) when the deadline has passed.

The answer is never worse than the layer-wise plan nor the first group search's: both are
candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from twill.deadline import NO_DEADLINE, Deadline
from twill.mapping.arch import Arch
from twill.mapping.network import Network
from twill.options import SolverOptions
from twill.results import SolveResult, Status, Timings

__all__ = [
    "FuseOutcome",
    "FuseSettings",
    "check_arch",
    "fuse",
    "fuse_json",
    "fusion_gain",
    "map_layer_shapes",
]

#: Called with a line saying which step starts (the command prints it on stderr).
Say = Callable[[str], None]


@dataclass(frozen=True)
class FuseSettings:
    """The knobs of :func:`fuse` (``twill fuse``'s flags).

    ``layer_method`` maps the layer shapes (``cosa-edp``, ``cosa-rerank`` or ``cosa``) in a
    pool of ``workers``; ``steps``, ``seed`` and ``device`` are FADiff's; ``init``: FADiff
    starts from the layer-wise plan; ``grace_seconds``: what the two short steps worth
    finishing (the first group search, the bound) keep for themselves before the deadline
    (a tenth of the limit each; module docstring).
    """

    layer_method: str = "cosa-edp"
    steps: int = 300
    seed: int = 0
    device: str = "cpu"
    init: bool = True
    workers: int | None = None
    grace_seconds: float = 0.0


@dataclass(frozen=True)
class FuseOutcome:
    """What :func:`fuse` found: the result (a :class:`~twill.mapping.fadiff.plan.NetworkPlan`
    solution), the best layer-wise plan and its report, and the gain over it (the keys of
    :func:`fusion_gain`, and ``stopped``: ``"time_limit"`` when the deadline cut a step)."""

    result: SolveResult
    layerwise_plan: Any
    layerwise_report: Any
    gain: dict[str, Any]


def map_layer_shapes(net: Network, arch: Arch, settings: FuseSettings,
                     deadline: Deadline = NO_DEADLINE) -> Any:  # fmt: skip  # noqa: ANN401
    """Every unique layer shape of ``net`` mapped by ``settings.layer_method`` in a process
    pool of ``settings.workers``, by ``deadline``: the
    :class:`~twill.mapping.pipeline.NetworkMappings` the layer-wise plan is built from."""
    from twill.mapping.pipeline import map_network
    from twill.mapping.workload import unique_layers

    method = settings.layer_method
    opts = SolverOptions(seed=settings.seed if method != "cosa" else 0, deadline=deadline)
    return map_network(unique_layers(net.layers), arch, methods=[method],
                       options={method: opts}, workers=settings.workers)  # fmt: skip


def fuse(
    net: Network,
    arch: Arch,
    settings: FuseSettings,
    deadline: Deadline = NO_DEADLINE,
    *,
    mapped: Any = None,
    on_step: Callable[[Any], None] | None = None,
    say: Say | None = None,
) -> FuseOutcome:
    """``twill fuse``: the steps of the module docstring within ``deadline``; ``mapped``:
    :func:`map_layer_shapes`'s result when already computed; ``on_step``: FADiff's progress
    events; ``say``: a line per step."""
    from twill.mapping.fadiff.plan import NetworkPlan

    say = say or (lambda _line: None)
    body = deadline.reserve(settings.grace_seconds)  # the last g: the bound's
    lw, first, unmapped = _layerwise(net, arch, settings, body, mapped, say)
    (lw_plan, lw_rep), (first_plan, first_rep) = lw, first
    candidates = ((first_plan, first_rep, f"group-search({settings.layer_method})"),
                  (lw_plan, lw_rep, "layer-wise plan"))  # fmt: skip
    if body.expired():  # no time for FADiff: the better of the two plans at hand
        plan, rep, source = min(candidates, key=lambda c: c[1].edp if c[1].valid else float("inf"))
        res = _plan_result(NetworkPlan(plan, rep, source), settings)
    else:
        init = lw_plan if settings.init else None
        res = _fadiff(net, arch, settings, body, init=init, candidates=(lw_plan,),
                      on_progress=on_step)  # fmt: skip
        for plan, rep, source in candidates:  # never worse than these
            if rep.valid and rep.edp < res.solution.report.edp:
                res = replace(res, solution=NetworkPlan(plan, rep, source), objective=rep.edp)
    stopped = "time_limit" if body.passed() else None
    gain = fusion_gain(net, arch, res, (lw_plan, lw_rep), deadline)
    more = {"unmapped_layers": len(unmapped)} if unmapped else {}
    return FuseOutcome(res, lw_plan, lw_rep, {**gain, "stopped": stopped, **more})


def _layerwise(net: Network, arch: Arch, settings: FuseSettings, deadline: Deadline,
               mapped: Any, say: Say) -> tuple[Any, Any, list[str]]:  # fmt: skip
    """Steps 1-3 by ``deadline`` (the fuse deadline less the bound's part): the best
    layer-wise plan and the first fused plan, each ``(plan, report)``, and the layers the
    mapping left unmapped (all-DRAM in the layer-wise plan)."""
    from twill.mapping.fadiff.baselines import layerwise_plan
    from twill.mapping.fadiff.fusion import evaluate_plan
    from twill.mapping.fadiff.groups import group_search

    if mapped is None:
        say(f"mapping every layer shape with {settings.layer_method} ...")
        mapped = map_layer_shapes(net, arch, settings, deadline.reserve(settings.grace_seconds))
    method = settings.layer_method
    base = layerwise_plan(net, arch, mapped.mappings(method), method).solution
    say("group search on the layer-wise mappings ...")
    first = group_search(net, arch, base.plan.with_fused(()), stop=deadline.perf_stop())
    first = replace(first, method="fadiff")  # FADiff's discrete phase, run first
    first_rep = evaluate_plan(net, arch, first)
    best = (base.plan, base.report)
    if not deadline.expired():
        say("layer-wise gradient (no fusion) ...")
        lg = _fadiff(net, arch, settings, deadline.child(fraction=1 / 3), fusion=False,
                     init=base.plan, candidates=(base.plan,)).solution  # fmt: skip
        best = min(best, (lg.plan, lg.report), key=lambda x: x[1].edp)
    return best, (first, first_rep), list(base.plan.meta.get("unmapped") or ())


def _fadiff(net: Network, arch: Arch, settings: FuseSettings, deadline: Deadline,
            **problem: Any) -> SolveResult:  # fmt: skip
    """FADiff (:func:`twill.mapping.fadiff.train.solve`) with ``settings``' steps, seed and
    device by ``deadline``; ``problem``: fusion, start plan, candidates and ``on_progress``."""
    from twill.mapping.fadiff.train import FADiffSettings, solve
    from twill.mapping.problems import NetworkMappingProblem

    on_progress = problem.pop("on_progress", None)
    cfg = FADiffSettings(steps=settings.steps, device=settings.device)
    options = SolverOptions(seed=settings.seed, fadiff=cfg, on_progress=on_progress,
                            deadline=deadline)  # fmt: skip
    return solve(NetworkMappingProblem(net, arch, **problem), options)


def _plan_result(found: Any, settings: FuseSettings) -> SolveResult:  # noqa: ANN401
    """The result of a run that had no time for FADiff: ``found`` (a verified
    :class:`~twill.mapping.fadiff.plan.NetworkPlan`), FEASIBLE."""
    return SolveResult(Status.FEASIBLE, found, found.report.edp, "EDP (µJ·cycles)",
                       timings=Timings(solve=0.0), stats={"skipped": "time limit"},
                       settings={"method": "fadiff", "steps": settings.steps},
                       seed=settings.seed)  # fmt: skip


def fusion_gain(net: Network, arch: Arch, res: SolveResult, layerwise: tuple[Any, Any],
                stop: Deadline = NO_DEADLINE) -> dict[str, Any]:  # fmt: skip
    """``layerwise_edp``, ``edp``, ``gain_vs_layerwise`` (layer-wise EDP / the plan's, ≥ 1)
    and ``bound_gain``: the most any fusion plan could gain over the layer-wise plan's EDP
    (its EDP over the capacity bound, docs/fadiff.md "Bounds"), ``None`` if not computable,
    with ``bound_note`` saying why; the group-consistent part of the bound stops at ``stop``
    (then the note says the per-layer bound is used), and past ``stop`` there is none."""
    from twill.mapping.fadiff.bounds import fusion_bounds

    lw_plan, lw_rep = layerwise
    bound_gain, note = None, None
    names = {lv.name for lv in arch.levels}
    if not {"Registers", "Accumulator", "Scratchpad"} <= names:
        # the floors are Gemmini's: registers, an accumulator, one scratchpad for weights
        # and inputs (Simba's per-PE weight, input and accumulation buffers have none yet)
        note = f"the bounds model Gemmini's memory levels; {arch.name} has other levels"
    elif stop.passed():
        note = "bound not computed: out of --time-limit"
    else:
        try:
            bounds = fusion_bounds(net, arch, lw_plan, stop=stop.perf_stop())
            bound = bounds.capacity_edp
            bound_gain = lw_rep.edp / bound if bound > 0 else None
            if not bounds.group_floor:
                note = (
                    "the group-consistent bound was not computed (over its state budget, or "
                    "out of --time-limit): bound_gain is the per-layer capacity bound"
                )
        except Exception as exc:  # noqa: BLE001 - a bound is extra information, never a failure
            note = f"bound not computed: {type(exc).__name__}: {exc}"
    edp = res.solution.report.edp
    return {"layerwise_edp": lw_rep.edp, "edp": edp, "gain_vs_layerwise": lw_rep.edp / edp,
            "bound_gain": bound_gain, "bound_note": note}  # fmt: skip


def check_arch(arch: Arch) -> None:
    """Refuse an architecture ``fuse`` cannot run on (its outermost on-chip level must keep
    inputs and be bounded: it holds the fused intermediates), naming what is missing."""
    from twill.errors import InvalidProblemError
    from twill.mapping.fadiff.fusion import check_gemmini

    bad = check_gemmini(arch)
    if bad:
        raise InvalidProblemError([f"{arch.name}: {b}" for b in bad], source="--arch")


def fuse_json(net: Network, arch: Arch, res: SolveResult) -> dict[str, Any]:
    """The ``--json`` object: the result's :meth:`~twill.results.SolveResult.to_dict` (the
    top-level keys every method's JSON has; the per-step ``history`` and ``evals`` of its
    statistics left out), then the totals, source, fused edges and fusion groups by layer
    name."""
    from twill.mapping.fadiff.fusion import fusion_groups

    rep = res.solution.report
    shared = res.to_dict()
    shared["stats"] = {k: v for k, v in shared["stats"].items() if k not in ("history", "evals")}
    return {
        **shared,
        "network": net.name,
        "method": res.solution.plan.method,
        **rep.summary(),
        "seconds": res.timings.total,
        "source": res.solution.source,
        "fused": res.solution.plan.to_dict(net, arch)["fused"],
        "groups": [[net.layers[j].name for j in g] for g in fusion_groups(net, rep.fused)],
    }
