"""Plan heuristics on top of the fusion verifier: :func:`repair_plan` (unfuse until the plan
verifies) and :func:`greedy_fusion` (fuse candidate boundaries while the EDP falls).
Heuristic: no optimality claim; every plan they return verifies or is the input plan."""

from __future__ import annotations

from typing import TYPE_CHECKING

from twill.errors import InvalidProblemError
from twill.mapping.arch import Arch
from twill.mapping.fadiff.fusion import evaluate_plan, verify_plan
from twill.mapping.fadiff.plan import FusionPlan
from twill.mapping.network import Network

if TYPE_CHECKING:
    from twill.mapping.workload import Operand

__all__ = ["greedy_fusion", "repair_plan"]


def repair_plan(net: Network, arch: Arch, plan: FusionPlan) -> FusionPlan:
    """Unfuse boundaries until the plan verifies (drop, in a violating group, the
    boundary with the largest intermediate; illegal boundaries are dropped first)."""
    for _ in range(len(plan.fused) + 1):
        viol = verify_plan(net, arch, plan)
        if not viol:
            return plan
        if any(
            v.rule
            not in {
                "fusion.partial_sums",
                "fusion.blocks",
                "fusion.capacity",
                "fusion.candidate",
                "fusion.span",
            }
            for v in viol
        ):
            raise InvalidProblemError([str(v) for v in viol], source=f"plan for {net.name}")
        bad_edges = set()
        for v in viol:
            if v.rule == "fusion.candidate":
                bad_edges.add(v.at["edge"])
            elif v.rule in {"fusion.partial_sums", "fusion.blocks", "fusion.span"}:
                for i in plan.fused:
                    e = net.edges[i]
                    if (net.layers[e.src].name, net.layers[e.dst].name) == (
                        v.at["producer"],
                        v.at["consumer"],
                    ):
                        bad_edges.add(i)
        if not bad_edges:  # capacity: drop the largest intermediate of the first bad group
            names = [v.at["group"] for v in viol if v.rule == "fusion.capacity"][0].split("->")
            members = {net.index(n) for n in names}
            inside = [i for i in plan.fused if net.edges[i].src in members]
            bad_edges.add(
                max(inside, key=lambda i: net.layers[net.edges[i].src].footprint(_operand_o()))
            )
        plan = plan.with_fused(set(plan.fused) - bad_edges)
    return plan


def _operand_o() -> Operand:
    from twill.mapping.workload import Operand

    return Operand.O


def greedy_fusion(net: Network, arch: Arch, plan: FusionPlan) -> FusionPlan:
    """Fuse every candidate boundary that keeps the plan valid and lowers the network EDP,
    largest intermediate first (the ``layerwise-greedy-fusion`` baseline's second step)."""
    order = sorted(
        net.candidates, key=lambda i: -net.layers[net.edges[i].src].footprint(_operand_o())
    )
    best = plan
    best_edp = evaluate_plan(net, arch, plan, verify=False).edp
    for i in order:
        if i in best.fused:
            continue
        trial = best.with_fused(set(best.fused) | {i})
        if verify_plan(net, arch, trial):
            continue
        edp = evaluate_plan(net, arch, trial, verify=False).edp
        if edp < best_edp:
            best, best_edp = trial, edp
    return best
