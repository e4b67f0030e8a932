"""Networks, fusion verifier/accounting and the optimiser on small instances."""

from __future__ import annotations

import pytest

from tests.mapping.mappers import fused
from twill.io.networks import load_network
from twill.mapping.arch import gemmini_arch
from twill.mapping.fadiff.fusion import FusionPlan, evaluate_plan, verify_plan
from twill.mapping.fadiff.heuristics import greedy_fusion
from twill.mapping.mapping import parse_dosa_mapping
from twill.mapping.network import NETWORKS, chain_network
from twill.mapping.workload import Layer

SPEC_MACS = {
    "resnet50": 4089184256,
    "bert": 757071872,
    "retinanet": 3323622400,
    "unet": 167322556672,
}


@pytest.mark.parametrize("name", NETWORKS)
def test_networks_match_spec_and_candidates_are_legal(name, benchmark_data):
    net = load_network(name, benchmark_data / "dosa" / "workloads")
    assert net.macs == SPEC_MACS[name]
    assert net.check() == []
    assert net.candidates


def _pair():
    a = Layer("a", {"P": 16, "Q": 16, "C": 16, "K": 32})
    b = Layer("b", {"R": 3, "S": 3, "P": 16, "Q": 16, "C": 32, "K": 16})
    net = chain_network([a, b])
    ma = parse_dosa_mapping("L3[WIO] P4 - L2[WI] K16X - L1[O] K2 Q16 P4 C16X - L0[W]")
    mb = parse_dosa_mapping("L3[WIO] P4 - L2[WI] S3 K16X - L1[O] R3 C2 Q16 P4 C16X - L0[W]")
    return net, FusionPlan("chain", (ma, mb))


def test_fused_pair_saves_two_intermediates():
    arch = gemmini_arch()
    net, plan = _pair()
    assert verify_plan(net, arch, plan) == []
    base = evaluate_plan(net, arch, plan)
    fused = plan.with_fused({0})
    assert verify_plan(net, arch, fused) == []
    rep = evaluate_plan(net, arch, fused)
    inter = 16 * 16 * 32
    # producer write and consumer read of the intermediate both leave DRAM
    assert base.dram_bytes - rep.dram_bytes >= 2 * inter
    assert rep.energy_pj < base.energy_pj
    assert greedy_fusion(net, arch, plan).fused == (0,)


def test_verifier_rejects_misaligned_blocks_and_overflow():
    arch = gemmini_arch()
    net, plan = _pair()
    mb = parse_dosa_mapping("L3[WIO] P2 - L2[WI] S3 K16X - L1[O] R3 C2 Q16 P8 C16X - L0[W]")
    bad = FusionPlan("chain", (plan.mappings[0], mb), (0,))
    assert [v.rule for v in verify_plan(net, arch, bad)] == ["fusion.blocks"]
    tiny = gemmini_arch(16, 4, 32)  # 4 KB scratchpad cannot hold the fused working set
    rules = {v.rule for v in verify_plan(net, tiny, plan.with_fused({0}))}
    assert "fusion.capacity" in rules or "capacity" in rules


def test_verifier_rejects_a_fused_tensor_waiting_over_an_outside_layer():
    """Fusion rule 5: in a residual block x -> c1 -> c2 (+ x in c2's epilogue), fusing only the
    add edge leaves c1 running whole while x's output waits in the scratchpad. The verifier
    rejects it, the repair unfuses it, greedy fusion never returns it, and fusing the whole
    block is accepted."""
    from twill.mapping.fadiff.groups import block_mapping
    from twill.mapping.fadiff.heuristics import repair_plan
    from twill.mapping.fadiff.train import all_dram_mapping
    from twill.mapping.network import LayerEdge, Network

    x = Layer("x", {"P": 16, "Q": 16, "C": 16, "K": 32})
    c1 = Layer("c1", {"P": 16, "Q": 16, "C": 32, "K": 16})
    c2 = Layer("c2", {"P": 16, "Q": 16, "C": 16, "K": 32})
    edges = (LayerEdge(0, 1, "block"), LayerEdge(1, 2, "chain"), LayerEdge(0, 2, "add"))
    net, arch = Network("res", (x, c1, c2), edges), gemmini_arch()
    maps = [block_mapping(ly, arch, all_dram_mapping(ly, arch), 1) for ly in net.layers]
    plan = FusionPlan("res", tuple(maps))  # one block, outputs complete: no partial sums
    alone = plan.with_fused({2})
    assert [v.rule for v in verify_plan(net, arch, alone)] == ["fusion.span"]
    assert repair_plan(net, arch, alone).fused == ()
    whole = plan.with_fused({0, 1, 2})
    assert "fusion.span" not in {v.rule for v in verify_plan(net, arch, whole)}
    got = greedy_fusion(net, arch, plan)
    assert verify_plan(net, arch, got) == []


def test_fadiff_small_chain_verified_reproducible_never_worse():
    torch = pytest.importorskip("torch")
    from twill.mapping.fadiff.train import FADiffSettings

    arch = gemmini_arch()
    net, plan = _pair()
    r1 = fused(net, arch, steps=30, seed=3, eval_every=10, candidates=[plan])
    # the settings object and the keyword form are the same run
    cfg = FADiffSettings(steps=30, seed=3, eval_every=10)
    r2 = fused(net, arch, cfg, candidates=[plan])
    assert r1.settings == r2.settings and r1.settings["steps"] == 30
    assert verify_plan(net, arch, r1.solution.plan) == []
    assert r1.solution.report.valid
    assert (
        r1.solution.report.edp == r2.solution.report.edp
        and r1.solution.plan.mappings == r2.solution.plan.mappings
    )
    assert r1.solution.report.edp <= evaluate_plan(net, arch, plan).edp
    assert torch.get_num_threads() >= 1
    off = fused(net, arch, fusion=False, steps=20, seed=0)
    assert off.solution.plan.fused == () and verify_plan(net, arch, off.solution.plan) == []
    assert r1.settings["method"] == "fadiff" and off.settings["method"] == "layerwise-gradient"


def test_plateau_stop_follows_the_documented_rule():
    """Without fusion the gradient phase ends once ``patience`` read-outs in a row improved the
    best verified EDP by < 0.1 %; ``patience=None`` runs every step."""
    pytest.importorskip("torch")

    arch = gemmini_arch()
    net, plan = _pair()
    full = fused(net, arch, fusion=False, steps=60, eval_every=10, init=plan, patience=None)
    assert full.stats["n_iter"] == 60 and len(full.stats["history"]) == 60
    r = fused(net, arch, fusion=False, steps=60, eval_every=10, init=plan, patience=2)
    assert (
        len(r.stats["history"]) == r.stats["n_iter"]
        and r.stats["n_evaluations"] == r.stats["n_iter"] * 2 * 3
    )
    assert r.stats["n_iter"] < 60  # from a valid start the rounded descent stops improving
    best, last_gain, stops = None, 0, []
    for ev in r.stats["evals"]:  # replay the rule on the recorded read-outs
        if best is None or ev["edp"] < (1 - 1e-3) * best:
            last_gain = ev["step"]
        best = ev["edp"] if best is None else min(best, ev["edp"])
        stops.append(ev["step"] - last_gain >= 2 * 10)
    assert stops[-1] and not any(stops[:-1])
    assert r.solution.report.edp <= evaluate_plan(net, arch, plan).edp


def test_fadiff_on_grouped_layers_counts_every_group():
    """A MobileNet-style block (expand, depthwise, project, next expand): every edge is a
    fusion candidate (the depthwise layer's too), the plan is verified and its totals are the
    NumPy model's whole-layer costs (G x one group for the depthwise layer)."""
    pytest.importorskip("torch")
    from twill.mapping.cost import evaluate

    arch = gemmini_arch()
    layers = [
        Layer("expand", {"P": 14, "Q": 14, "C": 16, "K": 96}),
        Layer("dw", {"R": 3, "S": 3, "P": 14, "Q": 14}, groups=96),
        Layer("project", {"P": 14, "Q": 14, "C": 96, "K": 24}),
        Layer("next", {"P": 14, "Q": 14, "C": 24, "K": 144}),
    ]
    net = chain_network(layers)
    assert net.check() == [] and [net.edges[i].src for i in net.candidates] == [0, 1, 2]
    assert net.macs == sum(ly.total_macs for ly in layers)
    r = fused(net, arch, steps=30, seed=1, eval_every=10)
    assert verify_plan(net, arch, r.solution.plan) == [] and r.solution.report.valid
    unfused = evaluate_plan(net, arch, FusionPlan("u", r.solution.plan.mappings))
    per_layer = [
        evaluate(ly, arch, m) for ly, m in zip(layers, r.solution.plan.mappings, strict=True)
    ]
    assert unfused.energy_pj == pytest.approx(sum(p.energy_pj for p in per_layer), rel=1e-9)
    one = Layer("one", dict(layers[1].dims))
    dw = evaluate(one, arch, r.solution.plan.mappings[1])
    assert per_layer[1].energy_pj == pytest.approx(96 * dw.energy_pj, rel=1e-12)


def test_fadiff_on_simba_verified_and_never_worse_than_cosa():
    """FADiff beyond Gemmini: Simba's six levels (eight learnable slots), the global buffer
    holding the fused intermediates; an architecture whose outermost on-chip level does not
    keep inputs is refused."""
    pytest.importorskip("torch")
    from dataclasses import replace

    from twill.errors import InvalidProblemError
    from twill.mapping.arch import simba_arch
    from twill.mapping.fadiff.baselines import layerwise_cosa
    from twill.mapping.workload import Operand

    arch = simba_arch()
    net, _ = _pair()
    cosa = layerwise_cosa(net, arch).solution.plan
    r = fused(net, arch, steps=30, seed=0, eval_every=10, candidates=[cosa])
    assert verify_plan(net, arch, r.solution.plan) == [] and r.solution.report.valid
    assert r.solution.report.edp <= evaluate_plan(net, arch, cosa).edp
    levels = list(arch.levels)
    levels[-2] = replace(levels[-2], keeps=frozenset({Operand.O}), partition=None)
    with pytest.raises(InvalidProblemError, match="must keep inputs"):
        fused(net, replace(arch, levels=tuple(levels)), steps=1)


def test_joint_rounding_lets_gradient_read_outs_fuse():
    """With the group search off, the gradient's read-outs are the only source of fusion:
    rounded layer by layer they never agree on block counts (no read-out fuses), rounded
    jointly (one block count per fused group) a read-out fuses the inverted-residual block
    and wins."""
    pytest.importorskip("torch")

    arch = gemmini_arch()
    net = chain_network(
        [
            Layer("expand", {"P": 28, "Q": 28, "C": 16, "K": 96}),
            Layer("dw", {"R": 3, "S": 3, "P": 28, "Q": 28}, groups=96),
            Layer("project", {"P": 28, "Q": 28, "C": 96, "K": 24}),
        ]
    )
    kw = dict(steps=60, seed=0, eval_every=10, group_len=1)
    joint = fused(net, arch, joint_rounding=True, **kw)
    alone = fused(net, arch, joint_rounding=False, **kw)
    assert all(ev["fused"] == 0 for ev in alone.stats["evals"])
    assert joint.solution.source == "gradient" and joint.solution.plan.fused
    assert verify_plan(net, arch, joint.solution.plan) == []
    assert joint.solution.report.edp < alone.solution.report.edp
