"""Fusion upper bounds and the fully fused DRAM floor."""

from __future__ import annotations

import pytest

from twill.io.networks import load_network
from twill.mapping.arch import gemmini_arch
from twill.mapping.fadiff.bounds import dram_floor_bytes, fusion_bounds, ideal_bound
from twill.mapping.fadiff.fusion import FusionPlan, evaluate_plan
from twill.mapping.fadiff.train import all_dram_mapping


def test_resnet50_floor_matches_spec(benchmark_data):
    net = load_network("resnet50", benchmark_data / "dosa" / "workloads")
    # 25 502 912 B weights + 157 323 B input (halo formula) + 1 000 B output
    assert dram_floor_bytes(net) == 25_502_912 + 157_323 + 1_000


def test_bounds_are_ordered_and_below_every_plan(benchmark_data):
    arch = gemmini_arch()
    net = load_network("bert", benchmark_data / "dosa" / "workloads")
    plan = FusionPlan("bert", tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    b = fusion_bounds(net, arch, plan)
    assert 1.0 <= b.gain_candidates <= b.gain_all <= b.gain_ideal
    assert 1.0 <= b.gain_capacity <= b.gain_ideal and b.capacity_edp >= b.ideal_edp
    rep = evaluate_plan(net, arch, plan)
    assert abs(rep.edp - b.edp) <= 1e-9 * rep.edp
    e, c = ideal_bound(net, arch)
    assert rep.energy_pj >= e and rep.cycles >= c
    assert b.all_free_dram_bytes >= b.floor_dram_bytes
    assert c == 2_957_312  # divisor-limited compute bound of BERT: 757 071 872 MACs / 256


def test_unfused_bound_below_every_layer_wise_plan():
    """The unfused bound holds for any mappings, including strided 1x1, dilated and depthwise
    layers (2 000 random factorisations each, the valid ones checked), and sits between the
    ideal bound and the cost of real layer-by-layer plans."""
    import numpy as np

    from twill.mapping.cost.analytical import evaluate_batch
    from twill.mapping.fadiff.bounds import unfused_bound
    from twill.mapping.network import Network
    from twill.mapping.search.random import sample_batch
    from twill.mapping.workload import Layer

    arch = gemmini_arch()
    layers = [
        Layer("down", {"P": 28, "Q": 28, "C": 64, "K": 128}, w_stride=2, h_stride=2),
        Layer(
            "dil", {"R": 3, "S": 3, "P": 16, "Q": 16, "C": 32, "K": 32}, w_dilation=2, h_dilation=2
        ),  # fmt: skip
        Layer("dw", {"R": 3, "S": 3, "P": 28, "Q": 28}, groups=64, w_stride=2, h_stride=2),
    ]
    for ly in layers:
        e, c = unfused_bound(Network(ly.name, (ly,)), arch)
        cost = evaluate_batch(ly, arch, sample_batch(ly, arch, 2000, seed=1))
        ok = cost.valid
        assert ok.sum() > 20
        assert np.all(cost.energy_pj[ok] >= e * (1 - 1e-12))
        assert np.all(cost.cycles[ok] >= c * (1 - 1e-12))
    net = Network("p", tuple(layers))
    plan = FusionPlan("p", tuple(all_dram_mapping(ly, arch) for ly in net.layers))
    e, c = unfused_bound(net, arch)
    rep = evaluate_plan(net, arch, plan)
    assert rep.energy_pj >= e and rep.cycles >= c
    ei, ci = ideal_bound(net, arch)
    assert e >= ei and c >= ci


def test_accumulator_floor_holds_for_random_mappings():
    """Partial-sum reads: every valid mapping of a conv, a GEMM and a depthwise layer makes
    at least ``2·MACs/maxdiv(C) - |O|`` accumulator accesses, on two Gemmini sizes, and the
    floor is reached by some mapping's order of magnitude (it is not vacuous)."""
    import numpy as np

    from twill.io.timeloop import read_arch, shipped_archs
    from twill.mapping.cost.analytical import evaluate_batch
    from twill.mapping.fadiff.floors import _accumulator_floor, _maxdiv
    from twill.mapping.search.random import sample_batch
    from twill.mapping.workload import Dim, Layer

    layers = [
        Layer("conv", {"R": 3, "S": 3, "P": 14, "Q": 14, "C": 64, "K": 64}),
        Layer("gemm", {"P": 128, "C": 768, "K": 96}),
        Layer("dw", {"R": 3, "S": 3, "P": 14, "Q": 14}, groups=32),
    ]
    for arch in (gemmini_arch(), read_arch(shipped_archs()["gemmini_32x32_sp512k_acc128k"])):
        acc = next(m for m, lv in enumerate(arch.levels) if lv.name == "Accumulator")
        for ly in layers:
            u = ly.total_macs / _maxdiv(ly.dim(Dim.C), arch.fanout(1))
            floor = _accumulator_floor(ly, arch, u)
            cost = evaluate_batch(ly, arch, sample_batch(ly, arch, 3000, seed=2))
            ok = cost.valid
            assert ok.sum() > 20
            got = cost.level_accesses[ok, acc]
            assert np.all(got >= floor * (1 - 1e-12))
            assert floor > u or ly.groups > 1  # the reads count where C is unrolled
            assert got.min() <= 4 * floor


# ------------------------------------------------------------------ capacity-aware bound
_W_RELEVANT = ("K", "C", "R", "S", "G")


def _dram_terms(cost, b: int, top: int) -> tuple[float, float, float]:
    """DRAM weight reads, input reads and output traffic (updates + reads) of row ``b``."""
    used = cost.instances_used[b, top]
    w = cost.reads[b, top, 0] * used
    i = cost.reads[b, top, 1] * used
    o = (cost.updates[b, top, 2] + cost.reads[b, top, 2]) * used
    return float(w), float(i), float(o)


def test_weights_reread_per_block_unless_resident():
    """Lemma behind :func:`capacity_bound`: a valid mapping with a weight-relevant (K, C, R,
    S, G) DRAM loop reads its weights from DRAM at least ``|W|·B`` times (B = its P·Q·N block
    count) and is not counted resident by the verifier; one without keeps all of ``|W|`` in
    the scratchpad (so it fits) and is counted resident. Random factorisations and the group
    search's block re-mappings of a conv, a GEMM, a depthwise, a strided 1x1 and a batched
    layer, on two Gemmini sizes; the per-status DRAM charges hold for each row too."""
    import numpy as np

    from twill.io.timeloop import read_arch, shipped_archs
    from twill.mapping.cost.analytical import batch_from_mappings, evaluate_batch
    from twill.mapping.fadiff.floors import input_words_floor
    from twill.mapping.fadiff.fusion import block_counts
    from twill.mapping.fadiff.groups import block_mapping
    from twill.mapping.search.random import sample_batch
    from twill.mapping.workload import Layer, Operand

    layers = [
        Layer("conv", {"R": 3, "S": 3, "P": 14, "Q": 14, "C": 64, "K": 64}),
        Layer("gemm", {"P": 128, "C": 768, "K": 96}),
        Layer("dw", {"R": 3, "S": 3, "P": 14, "Q": 14}, groups=32),
        Layer("down", {"P": 28, "Q": 28, "C": 64, "K": 128}, w_stride=2, h_stride=2),
        Layer("batch", {"P": 8, "Q": 8, "C": 32, "K": 32, "N": 4}),
    ]
    counts = {"reread": 0, "resident": 0}
    for arch in (gemmini_arch(), read_arch(shipped_archs()["gemmini_32x32_sp512k_acc128k"])):
        top = arch.n_levels - 1
        sp = top - 1
        for ly in layers:
            batch = sample_batch(ly, arch, 2000, seed=3)
            maps = [
                batch.mapping(int(b)) for b in np.flatnonzero(evaluate_batch(ly, arch, batch).valid)
            ]
            for bp in (1, 2, 7):
                for variant in ("resident", "lean"):
                    m = block_mapping(ly, arch, all_dram_mapping(ly, arch), bp, variant=variant)
                    maps += [m] if m is not None else []
            cost = evaluate_batch(ly, arch, batch_from_mappings(maps, ly.groups))
            assert cost.valid.all() and len(maps) > 50
            w = ly.footprint(Operand.W)
            for b, m in enumerate(maps):
                blocks = int(np.prod(block_counts(m, ly.groups)))
                reread = any(d.value in _W_RELEVANT for d, _ in m.placed(ly.groups).loops(top))
                w_dram, i_dram, o_dram = _dram_terms(cost, b, top)
                tile, fills = cost.tiles[b, sp, 0], cost.fills[b, sp, 0]
                resident = fills <= tile * (1 + 1e-12)  # the verifier's test
                assert w_dram >= w and o_dram >= ly.footprint(Operand.O)
                assert i_dram >= input_words_floor(ly) * (1 - 1e-12)
                if reread:
                    assert w_dram >= w * blocks and not resident
                else:
                    assert tile == w <= arch.levels[sp].entries and resident
                counts["reread" if reread else "resident"] += blocks > 1
    assert min(counts.values()) >= 20  # both cases occur with several blocks


def _sub_network(net, lo: int, hi: int):
    """Layers ``lo:hi`` of ``net`` with the edges among them."""
    from twill.mapping.network import LayerEdge, Network

    es = tuple(
        LayerEdge(e.src - lo, e.dst - lo, e.kind)
        for e in net.edges
        if lo <= e.src < hi and lo <= e.dst < hi
    )
    return Network(f"{net.name}[{lo}:{hi}]", net.layers[lo:hi], es)


def _group_charges(net, arch, plan, pricing=None):  # noqa: ANN001, ANN202
    """The group bound's charge of every layer under the plan's own edges and modes (one
    block or several; weights resident when loaded once, as the verifier counts them): its
    DRAM words, or one price per component of ``pricing``."""
    import numpy as np

    from twill.mapping.fadiff.edp_floor import Pricing
    from twill.mapping.fadiff.fusion import block_counts, fusion_groups, layer_cost
    from twill.mapping.fadiff.group_bounds import _RESIDENT, _UNBLOCKED, _LayerCharge

    sp = arch.n_levels - 2
    value = {("z", i): int(i in plan.fused) for i in net.candidates}
    for group in fusion_groups(net, plan.fused):
        first = min(group)
        bp, bq, bn = block_counts(plan.mappings[first], net.layers[first].groups)
        for j in group:
            c = layer_cost(net.layers[j], arch, plan.mappings[j])
            resident = float(c.fills[0, sp, 0]) <= float(c.tiles[0, sp, 0]) * (1 + 1e-12)
            blocked = bp * bq * bn > 1
            value[("u", j)] = _UNBLOCKED if not blocked else (_RESIDENT if resident else 1)
    carried: tuple = ()
    out = []
    for j in range(len(net.layers)):
        charge = _LayerCharge.build(net, arch, j, pricing or Pricing())
        got, carried = charge.words(lambda v: value.get(v, 0), carried)
        out.append(got if pricing else float(got[0]))
    return np.array(out)


_FLOORS: dict[tuple[int, int], tuple] = {}


def _network_floors(net, arch) -> dict:  # noqa: ANN001
    """Every bound of ``net`` on ``arch`` the plan lemmas check, computed once per pair (the
    pair is kept with them, so the ids stay theirs)."""
    key = (id(net), id(arch))
    if key not in _FLOORS:
        _FLOORS[key] = (net, arch, _compute_floors(net, arch))
    return _FLOORS[key][2]


def _compute_floors(net, arch) -> dict:  # noqa: ANN001
    import numpy as np

    from twill.mapping.fadiff.bounds import (
        _dram_words_floor,
        capacity_bound,
        group_capacity_bound,
        layer_edp_floor,
    )
    from twill.mapping.fadiff.group_bounds import group_edp_floor

    per_layer = capacity_bound(net, arch)
    scale = per_layer[0] / per_layer[1]
    words, priced = group_edp_floor(net, arch, scale)
    return {
        "layers": np.array([_dram_words_floor(net, arch, j) for j in range(len(net.layers))]),
        "words": words,
        "bounds": (per_layer, group_capacity_bound(net, arch, per_layer, words)),
        "scale": scale,
        "edp": (layer_edp_floor(net, arch), priced),
        "unfused_edp": layer_edp_floor(net, arch, unfused=True),
    }


def _check_plan(net, arch, plan) -> bool:
    """The plan verifies and every layer moves at least its DRAM floor and its group-bound
    charge under the plan's own edges and modes; all layers together at least the
    group-consistent floor; its energy, cycles and EDP are at least both capacity bounds'.
    Returns whether it fuses anything."""
    import numpy as np

    rep = evaluate_plan(net, arch, plan)
    assert rep.valid, rep.violations
    floors = _network_floors(net, arch)
    assert np.all(rep.layer_dram_bytes >= floors["layers"] * (1 - 1e-12))
    assert rep.dram_bytes >= floors["words"] * (1 - 1e-12)
    charges = _group_charges(net, arch, plan)
    assert np.all(rep.layer_dram_bytes >= charges * (1 - 1e-12))
    for e, c in floors["bounds"]:
        assert rep.energy_pj >= e and rep.cycles >= c and rep.edp >= e * 1e-6 * c
    _check_priced(net, arch, plan, rep)
    return bool(plan.fused)


def _check_priced(net, arch, plan, rep) -> None:  # noqa: ANN001
    """Energy and cycles priced together: under the plan's own edges and modes, every
    layer's ``a·E + b·D`` is at least its charge for each weight ``(a, b)``, and the plan's
    EDP at least both EDP floors (the unfused one too, for a plan without fusion)."""
    import numpy as np

    from twill.mapping.fadiff.edp_floor import Pricing

    floors = _network_floors(net, arch)
    pricing = Pricing.around(rep.energy_pj / rep.cycles)
    charges = _group_charges(net, arch, plan, pricing)  # (layers, weights)
    weights = np.array(pricing.weights)
    actual = np.outer(rep.layer_energy_pj, weights[:, 0])
    actual += np.outer(rep.layer_cycles, weights[:, 1])
    assert np.all(actual >= charges * (1 - 1e-9))
    for floor in floors["edp"]:
        assert rep.edp >= floor * 1e-6 * (1 - 1e-9)
    if not plan.fused:
        assert rep.edp >= floors["unfused_edp"] * 1e-6 * (1 - 1e-9)


def test_capacity_bound_below_searched_plans(benchmark_data, inverted_residual):
    """Lemma: the capacity bound is below every verified plan the project's searches find
    (unfused, polished, greedy fusion, group search from two seeds, FADiff) on an inverted
    residual block, ResNet-50's stage 2 and BERT, on three Gemmini sizes; per layer too."""
    from tests.mapping.mappers import fused as run_fadiff
    from twill.io.timeloop import read_arch, shipped_archs
    from twill.mapping.fadiff.baselines import greedy_fusion_baseline
    from twill.mapping.fadiff.bounds import capacity_bound
    from twill.mapping.fadiff.groups import group_search
    from twill.mapping.fadiff.polish import polish_mappings

    root = benchmark_data / "dosa" / "workloads"
    nets = [
        inverted_residual,
        _sub_network(load_network("resnet50", root), 1, 11),
        load_network("bert", root),
    ]
    archs = [
        gemmini_arch(),
        read_arch(shipped_archs()["gemmini_32x32_sp512k_acc128k"]),
        gemmini_arch(16, 32, 32),
    ]
    fused = 0
    for net in nets:
        for arch in archs:
            base = FusionPlan(net.name, tuple(all_dram_mapping(ly, arch) for ly in net.layers))
            polished = FusionPlan(net.name, tuple(polish_mappings(net.layers, arch, base.mappings)))
            plans = [base, polished, greedy_fusion_baseline(net, arch, polished).solution.plan]
            plans += [group_search(net, arch, base), group_search(net, arch, polished)]
            fused += sum(_check_plan(net, arch, p) for p in plans)
    net = nets[0]
    fused += _check_plan(net, archs[0], run_fadiff(net, archs[0], steps=30, seed=0).solution.plan)
    assert fused >= 20
    e, c = capacity_bound(nets[2], archs[0])
    ei, ci = ideal_bound(nets[2], archs[0])
    assert e * c > 1.06 * ei * ci  # not vacuous: BERT's FFN cannot fuse in 128 KB


def test_capacity_bound_below_every_verified_block_plan(inverted_residual):
    """Lemma at the capacity limit: every plan built from the group search's block
    re-mappings (several block counts, resident and lean weights, 1-D and 2-D blocks) with
    any subset of fused edges that verifies moves at least the per-layer DRAM floor. Small
    scratchpads (32 and 64 KB); a residual add, an inverted residual block and a GEMM pair
    whose weights cannot stay resident."""
    import itertools

    from twill.mapping.fadiff.groups import block_mapping
    from twill.mapping.network import LayerEdge, Network, chain_network
    from twill.mapping.workload import Layer

    up, down = Layer.gemm(64, 1024, 256, name="up"), Layer.gemm(64, 256, 1024, name="down")
    ffn = chain_network([up, down], "ffn")
    x = Layer("x", {"P": 16, "Q": 16, "C": 16, "K": 32})
    c1 = Layer("c1", {"R": 3, "S": 3, "P": 16, "Q": 16, "C": 32, "K": 16})
    c2 = Layer("c2", {"P": 16, "Q": 16, "C": 16, "K": 32})
    res = Network(
        "res",
        (x, c1, c2),
        (LayerEdge(0, 1, "block"), LayerEdge(1, 2, "chain"), LayerEdge(0, 2, "add")),
    )
    checked = 0
    for net in (ffn, res, inverted_residual):
        assert net.check() == []
        for arch in (gemmini_arch(16, 32, 32), gemmini_arch(16, 64, 32)):
            cands = net.candidates
            for bp, bq, variant in itertools.product(
                (1, 2, 4, 7, 16), (1, 4), ("resident", "lean")
            ):
                seeds = [all_dram_mapping(ly, arch) for ly in net.layers]
                maps = [
                    block_mapping(ly, arch, m, bp, variant=variant, q_blocks=bq)
                    for ly, m in zip(net.layers, seeds, strict=True)
                ]
                if any(m is None for m in maps):
                    continue
                for k in range(1, len(cands) + 1):
                    for fz in itertools.combinations(cands, k):
                        plan = FusionPlan(net.name, tuple(maps), fz)
                        if evaluate_plan(net, arch, plan).valid:
                            checked += _check_plan(net, arch, plan)
    assert checked >= 100


def test_capacity_bound_fuses_only_with_common_block_counts():
    """Fusion rule 3 in the bound: fused neighbours walk equal P, Q, N block counts, so a valid 3×3
    chain (58 → 56 rows: common block counts 1 and 2 per dimension) whose intermediate needs
    more than 4 blocks cannot fuse, and the bound charges both layers their unfused traffic;
    each layer alone has enough block counts (58 = 2·29), which the bound used to allow.
    Every plan of the chain that fuses the edge fails the verifier."""
    import numpy as np

    from twill.mapping.fadiff.bounds import _dram_words_floor
    from twill.mapping.fadiff.floors import (
        block_totals,
        input_words_floor,
        tiling_words_floor,
        weight_words_floor,
    )
    from twill.mapping.fadiff.groups import block_mapping
    from twill.mapping.network import chain_network
    from twill.mapping.workload import Layer, Operand

    a = Layer("a", {"R": 3, "S": 3, "P": 58, "Q": 58, "C": 16, "K": 64})
    b = Layer("b", {"R": 3, "S": 3, "P": 56, "Q": 56, "C": 64, "K": 16})
    net, arch = chain_network([a, b], "valid"), gemmini_arch(16, 32, 32)
    assert net.check() == [] and list(net.candidates) == [0]
    x = float(a.footprint(Operand.O))  # 215 K words, 4 blocks leave 54 K > 32 K
    assert block_totals(a, [b]) == [1, 2, 4]
    w = float(a.footprint(Operand.W))
    assert weight_words_floor(a, arch, w, x, block_totals(a, [b])) == np.inf
    assert weight_words_floor(a, arch, w, x, block_totals(a)) < np.inf  # alone: 58 blocks
    for j, ly in enumerate(net.layers):
        unfused = ly.footprint(Operand.W) + input_words_floor(ly) + ly.footprint(Operand.O)
        assert _dram_words_floor(net, arch, j) == max(unfused, tiling_words_floor(ly, arch)[0, 0])
    for bp in (1, 2):
        for bq in (1, 2):
            maps = [
                block_mapping(ly, arch, all_dram_mapping(ly, arch), bp, q_blocks=bq)
                for ly in net.layers
            ]
            if None not in maps:
                assert not evaluate_plan(net, arch, FusionPlan("valid", tuple(maps), (0,))).valid


def test_tiling_floor_charges_the_fused_buffers():
    """A fused tensor shares the scratchpad with the layer's tiles (fusion rule 4), so the tiling
    floor under a :class:`FusedLoad` is never below the free one, and rises where the
    buffers crowd the tiles out: a GEMM whose 64 K-word output is fused in 64 KB must run
    in blocks beside tiles too small to read its 256 K weights once. Every verified block
    plan moves at least the loaded floor (the lemma tests above check it per layer)."""
    from twill.mapping.fadiff.floors import FusedLoad, common_dims, tiling_words_floor
    from twill.mapping.workload import Layer, Operand

    up, down = Layer.gemm(64, 1024, 256, name="up"), Layer.gemm(64, 256, 1024, name="down")
    for arch in (gemmini_arch(16, 32, 32), gemmini_arch(16, 64, 32), gemmini_arch()):
        for ly, x_in in ((up, 0.0), (down, float(up.footprint(Operand.O)))):
            g = common_dims(ly, [])
            load = FusedLoad(x_in, float(ly.footprint(Operand.O)), g, g)
            free, loaded = tiling_words_floor(ly, arch), tiling_words_floor(ly, arch, load)
            assert all(loaded[k] >= free[k] for k in free)
            assert loaded[False, False] == free[False, False]
    arch = gemmini_arch(16, 64, 32)
    g = common_dims(up, [])
    load = FusedLoad(0.0, float(up.footprint(Operand.O)), g, g)
    w = float(up.footprint(Operand.W))
    assert tiling_words_floor(up, arch)[False, True] < 1.1 * w
    assert tiling_words_floor(up, arch, load)[False, True] > 2 * w


def test_capacity_bound_between_ideal_and_unfused(benchmark_data):
    """Lemma: ideal <= capacity <= unfused, energy and cycles, on five networks and every
    shipped Gemmini; FSRCNN (small weights, every boundary a candidate) sits on the ideal
    bound, and a GEMM pair whose intermediate needs blocks and whose weights cannot stay
    resident gains nothing from fusion in 32 KB but its output in 512 KB."""
    from twill.io.timeloop import read_arch, shipped_archs
    from twill.mapping.fadiff.bounds import _dram_words_floor, capacity_bound, unfused_bound
    from twill.mapping.network import chain_network
    from twill.mapping.workload import Layer

    root = benchmark_data / "dosa" / "workloads"
    archs = [gemmini_arch()] + [read_arch(p) for p in shipped_archs().values()]
    for name in ("fsrcnn", "unet", "resnet50", "bert", "retinanet"):
        net = load_network(name, root)
        for arch in archs:
            lo, mid, hi = (
                ideal_bound(net, arch),
                capacity_bound(net, arch),
                unfused_bound(net, arch),
            )
            for a, b, c in zip(lo, mid, hi, strict=True):
                assert a <= b * (1 + 1e-12) and b <= c * (1 + 1e-12)
            if name == "fsrcnn":
                assert mid == pytest.approx(lo, rel=1e-12)
    up = Layer.gemm(64, 1024, 256, name="up")  # |W| = 256 K words, |O| = 64 K words
    net = chain_network([up, Layer.gemm(64, 256, 1024, name="down")], "ffn")
    assert net.check() == []
    w, i, o = 256 * 1024, 64 * 256, 64 * 1024
    assert _dram_words_floor(net, gemmini_arch(16, 32, 32), 0) == w + i + o
    assert _dram_words_floor(net, gemmini_arch(16, 512, 32), 0) == w + i


def test_tiling_floor_holds_for_random_mappings():
    """Lemma behind :func:`tiling_words_floor`: no valid mapping moves fewer DRAM words, in
    any of the four fusion statuses, than the floor: 4 000 random factorisations (random loop
    orders) of a conv, a GEMM, a depthwise, a strided 1x1, a dilated, a batched, a grouped
    and a large conv whose weights exceed the scratchpad, on three Gemmini sizes. The floor
    is reached by some sampled mapping on most layers (it is tight there) and exceeds the
    one-pass count ``|W| + input + |O|`` where the scratchpad forces re-reads."""
    import numpy as np

    from twill.io.timeloop import read_arch, shipped_archs
    from twill.mapping.cost.analytical import evaluate_batch
    from twill.mapping.fadiff.floors import input_words_floor, tiling_words_floor
    from twill.mapping.search.random import sample_batch
    from twill.mapping.workload import Layer, Operand

    layers = [
        Layer("conv", {"R": 3, "S": 3, "P": 14, "Q": 14, "C": 64, "K": 64}),
        Layer("gemm", {"P": 128, "C": 768, "K": 96}),
        Layer("dw", {"R": 3, "S": 3, "P": 14, "Q": 14}, groups=32),
        Layer("down", {"P": 28, "Q": 28, "C": 64, "K": 128}, w_stride=2, h_stride=2),
        Layer(
            "dil", {"R": 3, "S": 3, "P": 16, "Q": 16, "C": 32, "K": 32}, w_dilation=2, h_dilation=2
        ),  # fmt: skip
        Layer("batch", {"P": 8, "Q": 8, "C": 32, "K": 32, "N": 4}),
        Layer("grouped", {"R": 3, "S": 3, "P": 28, "Q": 28, "C": 4, "K": 4}, groups=8),
        Layer("big", {"R": 3, "S": 3, "P": 28, "Q": 28, "C": 256, "K": 512}),
    ]
    archs = [
        gemmini_arch(),
        read_arch(shipped_archs()["gemmini_32x32_sp512k_acc128k"]),
        gemmini_arch(16, 32, 32),
    ]
    tight = raised = 0
    for arch in archs:
        top = arch.n_levels - 1
        for ly in layers:
            floor = tiling_words_floor(ly, arch)
            cost = evaluate_batch(ly, arch, sample_batch(ly, arch, 4000, seed=11))
            ok = cost.valid
            assert ok.sum() >= 10
            used = cost.instances_used[ok, top]
            w = cost.reads[ok, top, 0] * used
            i = cost.reads[ok, top, 1] * used
            o = (cost.updates[ok, top, 2] + cost.reads[ok, top, 2]) * used
            complete = cost.reads[ok, top, 2] == 0  # may be a fused producer (fusion rule 2)
            for (fused_in, fused_out), words in floor.items():
                got = w + (0.0 if fused_in else i) + (0.0 if fused_out else o)
                if fused_out:
                    got = got[complete]
                assert np.all(got >= words * (1 - 1e-12)), (ly.name, arch.name, fused_in)
            unfused = w + i + o
            tight += bool(unfused.min() <= floor[False, False] * (1 + 1e-9))
            one_pass = ly.footprint(Operand.W) + input_words_floor(ly) + ly.footprint(Operand.O)
            raised += floor[False, False] > one_pass * 1.01
    assert tight >= 15 and raised >= 3
