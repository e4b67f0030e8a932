"""`twill kernels | bounds | solve`: JSON fields, exit codes, clear errors without traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twill.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_kernels_json(capsys):
    code, out, _ = run(capsys, "kernels", "--json")
    names = [k["name"] for k in json.loads(out)]
    assert code == 0 and "flash_attention_forward_hopper" in names and len(names) == 6


def test_kernels_table(capsys):
    code, out, _ = run(capsys, "kernels")
    assert code == 0 and "simple_gemm_pipeline" in out


def test_bounds(capsys):
    code, out, _ = run(capsys, "bounds", str(DATA / "circt_minII_infeasible.yaml"), "--json")
    d = json.loads(out)
    assert code == 0 and (d["res_mii"], d["rec_mii"], d["mii"]) == (2, 3, 3)
    code, out, _ = run(capsys, "bounds", "flash_attention_forward_hopper")
    assert "ResMII = 4  RecMII = 2  MII = 4" in out


@pytest.mark.parametrize("backend", ["cbc", "cpsat"])
def test_solve_json_fields(capsys, backend):
    code, out, _ = run(capsys, "solve", "flash_attention_forward_simplified", "--json",
                       "--backend", backend)  # fmt: skip
    d = json.loads(out)
    assert code == 0
    assert {"I", "optimal", "L", "schedule", "certificate", "seconds"} <= set(d)
    assert (d["I"], d["optimal"], d["L"], d["schedule"]) == (2, True, 4, {"S": 0, "P": 2, "O": 3})


def test_solve_text_and_output_file(capsys, tmp_path):
    target = tmp_path / "r.json"
    code, out, _ = run(capsys, "solve", str(DATA / "circt_canis14_fig2.yaml"), "-o", str(target))
    assert code == 0
    assert "I = 3 cycles (proven optimal for modulo scheduling)" in out
    assert "modulo reservation table" in out
    assert json.loads(target.read_text())["I"] == 3


def test_solve_no_schedule_exits_1(capsys):
    code, out, _ = run(capsys, "solve", "flash_attention_forward_hopper", "--max-I", "3",
                       "--json")  # fmt: skip
    d = json.loads(out)
    assert code == 1 and d["I"] is None and d["optimal"] is False


def test_refuses_to_overwrite_input(capsys, tmp_path):
    src = tmp_path / "g.yaml"
    src.write_text((DATA / "circt_canis14_fig2.yaml").read_text())
    code, _, err = run(capsys, "solve", str(src), "-o", str(src))
    assert code == 2 and "refusing to overwrite the input file" in err
    assert src.read_text() == (DATA / "circt_canis14_fig2.yaml").read_text()


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["solve", "no_such_kernel"], "neither a file nor a known kernel"),
        (["solve", "missing.yaml"], "missing.yaml"),
        (["solve", str(DATA / "errors_graph_defects.yaml")], "duplicate name"),
        (["solve", str(DATA / "errors_bad_json.json")], "not valid JSON at line 1"),
        (["bounds", str(DATA / "errors_schema.yaml")], "instructions[0].cycles"),
    ],
)
def test_errors_exit_2_without_traceback(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2 and needle in err and err.startswith(f"twill {argv[0]}: error: ")


def test_bad_option_value(capsys):
    with pytest.raises(SystemExit) as info:
        main(["solve", "flash_attention_forward_simplified", "--max-I", "0"])
    assert info.value.code == 2
    assert "expected an integer >= 1, found '0'" in capsys.readouterr().err


def test_hatschet_with_explicit_resource_model(capsys, tmp_path, benchmark_data):
    import shutil

    src = benchmark_data / "hatschet" / "cTest"
    shutil.copy(src / "iir_biqu.graphml", tmp_path / "loop.graphml")
    code, _, err = run(capsys, "solve", str(tmp_path / "loop.graphml"))
    assert code == 2 and "looked for loop_RM.xml and loopRM.xml" in err
    code, out, _ = run(capsys, "solve", str(tmp_path / "loop.graphml"), "--json",
                       "--resource-model", str(src / "iir_biquRM.xml"))  # fmt: skip
    d = json.loads(out)
    assert code == 0 and d["I"] == 11 and d["optimal"] is True
    assert [c["verdict"] for c in d["certificate"]] == ["below_bound"] * 10


def test_solve_workers_give_the_one_worker_answer(capsys):
    """``--workers 2`` examines I = 6 in a worker while I = 5 is refuted; same answer."""
    args = ["solve", "flash_attention_backward_hopper", "--backend", "cpsat", "--json"]
    assert main(args) == 0
    alone = json.loads(capsys.readouterr().out)
    assert main([*args, "--workers", "2"]) == 0
    both = json.loads(capsys.readouterr().out)
    keys = ("I", "L", "optimal", "schedule", "assignment", "status")
    assert {k: both[k] for k in keys} == {k: alone[k] for k in keys}
    assert both["I"] == 6 and both["optimal"]
    for flag in ("--threads", "--workers"):
        with pytest.raises(SystemExit) as stop:
            main(["solve", "flash_attention_backward_hopper", flag, "0"])
        assert stop.value.code == 2


def test_codegen_says_what_it_wrote(capsys, tmp_path):
    target = tmp_path / "k.cu"
    code, out, _ = run(
        capsys, "codegen", "simple_gemm_pipeline", "--lang", "cuda", "-o", str(target)
    )
    assert (
        code == 0
        and out == f"simple_gemm_pipeline: CUDA skeleton (I = 2, L = 3) written to {target}\n"
    )
    assert "__global__" in target.read_text()


def test_bounds_output_and_time_unit(capsys, tmp_path):
    target = tmp_path / "b.json"
    code, out, _ = run(capsys, "bounds", "simple_gemm_pipeline", "-o", str(target))
    assert code == 0 and "1 unit = 256 SM clocks" in out and f"written to {target}" in out
    d = json.loads(target.read_text())
    assert (d["mii"], d["time_unit"], d["sm_clocks_per_unit"]) == (2, "units", 256.0)
