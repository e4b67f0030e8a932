"""Design-space sweeps (issue 52): the grid and its checks, one mapping per (architecture,
unique layer) pair shared across networks, the frontier, and the store: a sweep killed at any
point resumes with the same table and maps no finished pair again."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from twill.errors import InvalidProblemError
from twill.io.networks import default_workload_root
from twill.io.timeloop import read_network
from twill.mapping.space import DesignSpace
from twill.mapping.sweep import SweepNetwork, SweepRow, SweepSettings, pareto_frontier, sweep
from twill.mapping.sweep_store import STORE_NAME, PairStore

FAST = SweepSettings(mapper="random", executor="serial", seed=3)
SPACE = DesignSpace("gemmini", (("pe_rows", (8, 16)), ("scratchpad_kB", (64, 128))))


@pytest.fixture(scope="module")
def bert() -> SweepNetwork:
    return SweepNetwork("dosa_bert", tuple(read_network(default_workload_root() / "bert")))


def _table(result) -> list[tuple]:
    return [(r.arch, r.network, r.energy_uJ, r.cycles, r.on_frontier) for r in result.rows]


# ------------------------------------------------------------------------------ the space
def test_the_grid_is_the_product_in_file_order():
    names = [p.arch.name for p in SPACE.points()]
    assert names == ["gemmini_8x16_sp64k_acc32k", "gemmini_8x16_sp128k_acc32k",
                     "gemmini_16x16_sp64k_acc32k", "gemmini_16x16_sp128k_acc32k"]  # fmt: skip
    assert all(p.arch.check() == [] and p.area_mm2 > 0 for p in SPACE.points())


def test_a_rectangular_array_unrolls_c_over_rows_and_k_over_columns():
    [p] = DesignSpace("gemmini", (("pe_rows", (8,)), ("pe_cols", (32,)))).points()
    assert p.arch.macs == 256 and p.arch.level("Accumulator").instances == 32
    assert p.arch.fanout(1) == 8 and p.arch.fanout(2) == 32  # C below the accumulator, K above


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ((), "the space is empty"),
        ((("pe_rows", ()),), "pe_rows: empty list"),
        ((("scratchpad_kB", (128, -4)),), r"scratchpad_kB\[1\]: must be a number above 0"),
        ((("pe_rows", (8.5,)),), r"pe_rows\[0\]: must be an integer"),
        ((("pe_cols", (64,)), ("accumulator_kB", (0.1,))), "too small for any mapping"),
        ((("scratchpad_kB", (0.001,)),), "scratchpad_kB: .* too small for any mapping"),
        ((("pe_row", (8,)),), "pe_row: not a parameter of template 'gemmini'"),
        ((("pe_rows", (8, 8)),), "a value is repeated"),
    ],
)
def test_a_bad_space_is_refused_before_any_work(axes, message):
    with pytest.raises(InvalidProblemError, match=message):
        DesignSpace("gemmini", axes).points()


def test_simba_buffers_follow_the_space():
    space = DesignSpace("simba", (("pes", (16, 64)), ("global_buffer_kB", (32, 128))))
    points = space.points()
    assert len(points) == 4 and points[0].arch.level("GlobalBuffer").entries == 32 * 1024
    assert points[0].area_mm2 < points[1].area_mm2 < points[3].area_mm2
    bad = DesignSpace("simba", (("global_buffer_kB", (1e-4,)),))
    assert "too small for any mapping" in bad.check()[0]


# ------------------------------------------------------------------------------ the sweep
def test_each_pair_is_mapped_once_and_shared_across_networks(tmp_path, bert):
    half = SweepNetwork("bert_half", bert.layers[:3])
    res = sweep(SPACE.points(), [bert, half], tmp_path, FAST)
    assert res.pairs == res.computed == 4 * len(bert.layers) and res.recomputed == 0
    rows = {(r.arch, r.network): r for r in res.rows}
    assert len(rows) == 8
    for arch in {r.arch for r in res.rows}:
        whole, part = rows[(arch, "dosa_bert")], rows[(arch, "bert_half")]
        assert part.energy_uJ < whole.energy_uJ and part.cycles < whole.cycles
        assert whole.edp == pytest.approx(whole.energy_uJ * whole.cycles)


def test_network_totals_weight_layers_by_their_counts(tmp_path, bert):
    twice = SweepNetwork("bert_x2", tuple(replace(ly, count=2 * ly.count) for ly in bert.layers))
    res = sweep(SPACE.points()[:1], [bert, twice], tmp_path, FAST)
    one, two = res.rows
    assert two.energy_uJ == pytest.approx(2 * one.energy_uJ) and two.cycles == 2 * one.cycles
    assert res.pairs == len(bert.layers)


def test_the_frontier_is_what_nothing_beats_on_area_and_edp(tmp_path, bert):
    res = sweep(SPACE.points(), [bert], tmp_path, FAST)
    front = res.frontier
    assert front and all(r.on_frontier for r in front)
    for r in res.rows:
        beaten = any(o.area_mm2 <= r.area_mm2 and o.edp <= r.edp and (o.area_mm2, o.edp)
                     != (r.area_mm2, r.edp) for o in res.rows)  # fmt: skip
        assert r.on_frontier == (not beaten)


def test_pareto_frontier_per_network_and_without_totals():
    rows = [SweepRow("a", "n", 1.0, 4.0, 10, (), 1), SweepRow("b", "m", 2.0, 9.0, 10, (), 1),
            SweepRow("c", "n", 0.5, None, None, (), 1, unmapped=1)]  # fmt: skip
    assert pareto_frontier(rows) == {0, 1}


def test_serial_and_process_pool_give_the_same_table(tmp_path, bert):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = sweep(SPACE.points(), [bert], tmp_path / "a", FAST)
    b = sweep(SPACE.points(), [bert], tmp_path / "b", replace(FAST, executor="local", workers=2))
    assert _table(a) == _table(b)


def test_a_resume_after_a_kill_maps_only_the_missing_pairs(tmp_path, bert):
    full = sweep(SPACE.points(), [bert], tmp_path, FAST)
    store = tmp_path / STORE_NAME
    lines = store.read_bytes().splitlines(keepends=True)
    kept = len(lines) // 2
    store.write_bytes(b"".join(lines[:kept]) + lines[kept][:17])  # killed inside a write
    again = sweep(SPACE.points(), [bert], tmp_path, FAST)
    assert again.computed == full.pairs - kept and again.reused == kept
    assert again.recomputed == 0 and again.store_duplicates == 0
    assert _table(again) == _table(full)
    records = [json.loads(x) for x in store.read_bytes().splitlines()]  # every line whole
    assert len(records) == len({r["key"] for r in records}) == full.pairs  # none mapped twice
    done = sweep(SPACE.points(), [bert], tmp_path, FAST)
    assert done.computed == 0 and done.reused == full.pairs and _table(done) == _table(full)


def test_other_settings_are_other_pairs(tmp_path, bert):
    sweep(SPACE.points()[:1], [bert], tmp_path, FAST)
    res = sweep(SPACE.points()[:1], [bert], tmp_path, replace(FAST, seed=4))
    assert res.computed == res.pairs and res.recomputed == 0


def test_the_store_ignores_broken_lines_and_counts_repeats(tmp_path):
    path = tmp_path / STORE_NAME
    rec = {"key": "k", "arch": "a", "layer": "l", "status": "FEASIBLE"}
    path.write_text(json.dumps(rec) + "\nnot json\n" + json.dumps(rec) + '\n{"key": ')
    with PairStore.open(path) as store:
        assert list(store.records) == ["k"] and store.duplicates == 1 and store.ignored == 2
        store.append({**rec, "key": "k2"})
        store.append(rec)
        assert store.recomputed == 1
    lines = path.read_text().splitlines()
    assert (
        path.read_text().endswith("\n") and len(lines) == 5 and lines[3].startswith('{"key":"k2"')
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mapper": "nope"}, "mapper"),
        ({"objective": "area"}, "objective"),
        ({"executor": "ray:foo"}, "expected auto, local, HOST:PORT"),
        ({"time_limit_s": -1.0}, "time_limit_s"),
    ],
)
def test_bad_settings_are_refused(tmp_path, bert, change, message):
    with pytest.raises(InvalidProblemError, match=message):
        sweep(SPACE.points(), [bert], tmp_path, replace(FAST, **change))
    assert not (tmp_path / STORE_NAME).exists()


def test_a_second_writer_of_the_same_store_is_refused(tmp_path):
    pytest.importorskip("fcntl")
    with PairStore.open(tmp_path / STORE_NAME):
        with pytest.raises(InvalidProblemError, match="another sweep is writing this store"):
            PairStore.open(tmp_path / STORE_NAME)
    PairStore.open(tmp_path / STORE_NAME).close()  # free again once closed
