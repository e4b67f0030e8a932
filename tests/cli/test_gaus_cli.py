"""``twill gaus``: every number says what it is (objective meaning and unit, bound in the same
unit), formulation C says which capacities it used, and a kernel's schedule starts at step 0."""

from __future__ import annotations

import json

import pytest

from twill.cli import main


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(["gaus", *argv, "--max-iters", "60"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out


def test_memory_objective_has_a_unit(capsys, benchmark_data):
    aig = str(benchmark_data / "epfl" / "ctrl.aig")
    code, out = run(capsys, aig, "--formulation", "B", "--json")
    d = json.loads(out)
    assert code == 0 and d["legal"] and d["objective_unit"] == "values"
    assert d["objective_meaning"].startswith("peak memory")
    code, out = run(capsys, aig, "--formulation", "B")
    assert "objective (values)" in out and "peak memory" in out and "bound in the same unit" in out


def test_kernel_formulation_c_names_its_caps_and_starts_at_0(capsys):
    code, out = run(capsys, "flash_attention_forward_hopper", "--formulation", "C", "--json")
    d = json.loads(out)
    assert code == 0 and d["legal"] and min(d["schedule"].values()) == 0
    assert d["cap_source"] == "graph" and d["caps"]["TC"] == 1.0
    assert d["objective_unit"] == "bytes"  # hopper ops carry shared-memory footprints
    code, out = run(capsys, "flash_attention_forward_hopper", "--formulation", "C")
    assert "no --cap given, so the graph's own are used (TC 1" in out


def test_explicit_cap_is_reported(capsys, benchmark_data):
    aig = str(benchmark_data / "epfl" / "ctrl.aig")
    code, out = run(capsys, aig, "--formulation", "C", "--cap", "2", "--json")
    d = json.loads(out)
    assert code == 0 and d["cap_source"] == "--cap" and d["caps"] == {"AND": 2.0}
    code, out = run(capsys, aig, "--formulation", "C", "--cap", "2")
    assert "capacities: --cap 2 on every resource (AND 2)" in out


def test_lns_time_runs_the_large_neighbourhood_search(capsys, benchmark_data):
    aig = str(benchmark_data / "epfl" / "ctrl.aig")
    # without the time-budgeted polish both runs start the search from the same seeded
    # schedule, so the comparison does not depend on the machine's load
    code, out = run(capsys, aig, "--no-polish", "--json")
    plain = json.loads(out)
    code, out = run(capsys, aig, "--no-polish", "--lns-time", "4", "--json")
    d = json.loads(out)
    assert code == 0 and d["legal"] and d["objective"] < plain["objective"]
    assert "large-neighbourhood search" in d["message"]
    with pytest.raises(SystemExit) as exc:
        main(["gaus", aig, "--lns-time", "-1"])
    assert exc.value.code == 2
    assert "--lns-time: expected a number >= 0" in capsys.readouterr().err


def test_text_shows_the_schedule_and_what_was_written(capsys, tmp_path):
    """No ``II None`` outside formulation C; the schedule summarised; files named."""
    out_json, picture = tmp_path / "r.json", tmp_path / "p.png"
    code, out = run(capsys, "simple_gemm_pipeline", "-o", str(out_json), "--plot", str(picture))
    assert code == 0 and "None" not in out and "II" not in out
    assert "schedule: 4 ops starting in steps 0.." in out and "TMA_A@0" in out
    assert f"JSON result written to {out_json}" in out and f"picture written to {picture}" in out
    assert json.loads(out_json.read_text())["legal"] and picture.stat().st_size > 0
