"""Hostile input, round 2 (issue 38): data loss and wrong claims.

Each case is a real command line on a small file from ``tests/data/hostile`` (or built here);
each must give the documented exit code (2 for the user's input) with one message naming the
file and the item, and must leave every input file as it was.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from twill.cli import main
from twill.triton import SHIPPED_DIR

HOSTILE = Path(__file__).resolve().parents[1] / "data" / "hostile"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse refuses an option value
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


@pytest.fixture
def kernel_dir(tmp_path: Path) -> Path:
    """A kernel file with its option YAMLs, a symbolic and a hard link to one of them."""
    d = tmp_path / "D"
    d.mkdir()
    (d / "k.py").write_text("# a Triton kernel file\n")
    (d / "k.yaml").write_text("kern: {signature: {x: i32}}\n")
    (d / "kernels.yaml").write_text("kern: {signature: {x: i32}}\n")
    (d / "link.yaml").symlink_to("k.yaml")
    os.link(d / "kernels.yaml", d / "hard.yaml")
    return d


@pytest.mark.parametrize("output", ["k.yaml", "kernels.yaml", "link.yaml", "hard.yaml", "k.py"])
@pytest.mark.parametrize("command", ["import-triton", "solve"])
def test_implicit_kernel_inputs_are_never_overwritten(capsys, kernel_dir, command, output):
    before = {p.name: p.read_bytes() for p in kernel_dir.iterdir()}
    code, out, err = run(
        capsys,
        command,
        f"{kernel_dir}/k.py:kern",
        "--arch",
        "sm_90a",
        "-o",
        str(kernel_dir / output),
    )
    assert code == 2 and "refusing to overwrite the input file" in err, err
    assert {p.name: p.read_bytes() for p in kernel_dir.iterdir()} == before
    assert (kernel_dir / "link.yaml").is_symlink()


def test_a_colon_in_a_ttgir_name_does_not_defeat_the_check(capsys, tmp_path):
    ttgir = tmp_path / "a:b.ttgir"
    shutil.copy(SHIPPED_DIR / "gemm.sm_90a.ttgir", ttgir)
    before = ttgir.read_bytes()
    code, _, err = run(capsys, "import-triton", str(ttgir), "--arch", "sm_90a", "-o", str(ttgir))
    assert code == 2 and "refusing to overwrite" in err
    assert ttgir.read_bytes() == before
    out = tmp_path / "c:d.json"  # a legitimate output with a colon is written, atomically
    assert run(capsys, "import-triton", str(ttgir), "--arch", "sm_90a", "-o", str(out))[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a:b.ttgir", "c:d.json"]


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("kernel_exit_0", ["line 3", "sys.exit(0)"]),
        ("kernel_exit_7", ["line 6", "sys.exit(7)"]),
        ("kernel_os_exit", ["line 5", "os._exit(0)"]),
        ("kernel_syntax_error", ["line 3", "SyntaxError"]),
        ("kernel_raises", ["line 5", "KeyError", "'BN'"]),
    ],
)
@pytest.mark.parametrize("command", ["import-triton", "solve"])
def test_the_kernel_files_own_failure_is_exit_2(capsys, tmp_path, name, words, command):
    pytest.importorskip("triton")
    kernel = tmp_path / "k.py"
    shutil.copy(HOSTILE / f"{name}.py.txt", kernel)
    code, out, err = run(capsys, command, f"{kernel}:kern", "--arch", "sm_90a")
    assert code == 2, err
    assert out == ""  # what the file prints at import goes to stderr
    assert str(kernel) in err and "bug in twill" not in err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize("value", ["9" * 30, "2000", "0"])
@pytest.mark.parametrize("command", [("solve", "x"), ("map-network", "x", "--arch", "simba")])
def test_threads_beyond_the_documented_limit_are_refused(capsys, value, command):
    code, _, err = run(capsys, *command, "--threads", value)
    assert code == 2 and "--threads" in err and "1,024" in err, err


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", "simple_gemm_pipeline", "-o", ""],
        ["solve", "simple_gemm_pipeline", "--plot", " "],
        ["codegen", "simple_gemm_pipeline", "-o", ""],
        ["gaus", "simple_gemm_pipeline", "-o", ""],
        ["map-network", "dosa_bert", "--arch", "simba", "-o", ""],
    ],
)
def test_an_empty_output_name_is_refused(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and "empty file name" in err and out == "", err


@pytest.mark.parametrize("option", ["-o", "--plot"])
@pytest.mark.parametrize("command", [["fuse"], ["map-network", "--arch", "simba"]])
def test_onnx_external_weights_are_never_overwritten(capsys, tmp_path, command, option):
    """A model saved with its weights in ``weights.bin`` beside it: that file is an input."""
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="c")],
        "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ones((8, 8, 1, 1), np.float32), "w")],
    )
    model = tmp_path / "m.onnx"
    onnx.save_model(helper.make_model(graph), str(model), save_as_external_data=True,
                    location="weights.bin", size_threshold=0)  # fmt: skip
    weights = (tmp_path / "weights.bin").read_bytes()
    code, _, err = run(
        capsys, command[0], str(model), *command[1:], option, str(tmp_path / "weights.bin")
    )
    assert code == 2 and "refusing to overwrite the input file" in err, err
    assert (tmp_path / "weights.bin").read_bytes() == weights
