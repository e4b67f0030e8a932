"""``twill ... | head -1``: a reader that stops early closes stdout. Every command that prints
must then end quietly, as ``git log | head`` does: exit 141 (never 1, which means "no answer"),
no traceback, and no partial ``-o`` file (issue 38).

Each command runs in-process with a stdout whose every write fails as a closed pipe does; a
few run as real programs on a pipe whose reading end is already closed.
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from twill.cli import EXIT_CLOSED_PIPE, main
from twill.triton import SHIPPED_DIR

ROOT = Path(__file__).resolve().parents[2]
GRAPH = ROOT / "tests" / "data" / "circt_canis14_fig2.yaml"  # 6 operations
LAYER = "problem: {R: 1, S: 1, P: 8, Q: 8, C: 16, K: 16, N: 1}\n"
MAPPING = "L5[WIO] P8 - L4[IO] Q8 - L3[I] - L2[W] - L1[O] C16 K16 - L0[W]"
TTGIR = str(SHIPPED_DIR / "gemm.sm_90a.ttgir")

# (id, argv with {g} graph, {l} layer, {n} network folder, {d} temporary folder)
COMMANDS = [
    ("kernels", ["kernels"]),
    ("kernels-json", ["kernels", "--json"]),
    ("bounds", ["bounds", "{g}"]),
    ("bounds-json", ["bounds", "{g}", "--json"]),
    ("solve", ["solve", "{g}", "-o", "{d}/r.json"]),
    ("solve-json", ["solve", "{g}", "--json"]),
    ("codegen", ["codegen", "{g}"]),
    ("gaus", ["gaus", "{g}", "--max-iters", "20", "--no-polish", "-o", "{d}/r.json"]),
    ("gaus-json", ["gaus", "{g}", "--max-iters", "20", "--no-polish", "--json"]),
    ("map", ["map", "{l}", "--arch", "simba", "--method", "random", "-o", "{d}/m.yaml"]),
    ("map-json", ["map", "{l}", "--arch", "simba", "--method", "random", "--json"]),
    (
        "map-network",
        ["map-network", "{n}", "--arch", "simba", "--method", "random", "--executor", "serial"],
    ),  # fmt: skip
    ("map-eval", ["map-eval", "--arch", "simba", "--layer", "{l}", "--mapping", MAPPING]),
    ("import-triton", ["import-triton", TTGIR, "--arch", "sm_90a"]),
    ("import-triton-o", ["import-triton", TTGIR, "--arch", "sm_90a", "-o", "{d}/g.json"]),
]


class _ClosedPipe(io.TextIOBase):
    """A stdout whose reader has gone: every write fails with EPIPE."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    def isatty(self) -> bool:
        return False


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "g.yaml").write_bytes(GRAPH.read_bytes())
    (tmp_path / "l.yaml").write_text(LAYER)
    net = tmp_path / "net"
    net.mkdir()
    (net / "a.yaml").write_text(LAYER)
    (net / "layers.yaml").write_text("- a\n")
    out = tmp_path / "out"
    out.mkdir()
    return {"g": str(tmp_path / "g.yaml"), "l": str(tmp_path / "l.yaml"), "n": str(net),
            "d": str(out)}  # fmt: skip


def _complete(path: Path) -> bool:
    """An output file is whole: it parses (JSON or YAML) to something non-empty."""
    import yaml

    text = path.read_text()
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    return bool(data)


@pytest.mark.parametrize(("argv"), [c[1] for c in COMMANDS], ids=[c[0] for c in COMMANDS])
def test_closed_stdout_ends_quietly_with_141(capsys, monkeypatch, inputs, argv):
    argv = [a.format(**inputs) for a in argv]
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_CLOSED_PIPE, err
    assert "Traceback" not in err and "error" not in err, err
    out = Path(inputs["d"])
    for written in out.iterdir():  # an -o file is complete, never partial (or absent)
        assert not written.name.startswith("."), f"temporary file left: {written.name}"
        assert _complete(written), written


@pytest.mark.parametrize(
    "argv",
    [
        ["kernels"],
        ["solve", "{g}", "-o", "{d}/r.json"],
        [
            "map-network",
            "{n}",
            "--arch",
            "simba",
            "--method",
            "random,cosa",
            "--executor",
            "serial",
        ],
    ],  # fmt: skip
    ids=["kernels", "solve", "map-network"],
)
def test_a_real_closed_pipe(inputs, argv):
    """As a program on a pipe whose reader is gone: 141 and an empty stderr, also from the
    interpreter's own flush at exit."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "twill", *(a.format(**inputs) for a in argv)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (EXIT_CLOSED_PIPE, "")


def _tiny_onnx(path: Path) -> Path:
    """Two 1x1 convolutions, 8x8 image: the smallest network ``fuse`` and ``import-onnx``
    accept."""
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    weights = [numpy_helper.from_array(np.zeros((8, 8, 1, 1), np.float32), f"w{i}") for i in (1, 2)]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="c1"),
             helper.make_node("Conv", ["a", "w2"], ["y"], name="c2")]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        weights,
    )
    onnx.save(helper.make_model(graph), str(path))
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["import-onnx", "{m}", "-o", "{d}/layers"],
        pytest.param(["fuse", "{m}", "--steps", "2", "-o", "{d}/p.yaml"], marks=pytest.mark.slow),
    ],
    ids=["import-onnx", "fuse"],
)
def test_closed_stdout_onnx_commands(capsys, monkeypatch, inputs, tmp_path, argv):
    model = _tiny_onnx(tmp_path / "tiny.onnx")
    argv = [a.format(m=model, **inputs) for a in argv]
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_CLOSED_PIPE and "Traceback" not in err, err
    for written in Path(inputs["d"]).rglob("*"):
        assert not written.name.startswith("."), f"temporary file left: {written.name}"
        assert written.is_dir() or _complete(written), written


def test_started_with_stdout_closed(inputs):
    """``twill kernels >&-``: Python has no stdout at all; the command runs and prints nowhere."""
    proc = subprocess.run(
        [sys.executable, "-m", "twill", "kernels"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        preexec_fn=lambda: os.close(1),  # noqa: PLW1509 (no threads in this test process's child)
        timeout=120,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (0, "")


@pytest.mark.slow
def test_closed_stdout_compile(capsys, monkeypatch, inputs):
    pytest.importorskip("triton")
    kernel = SHIPPED_DIR / "kernels.py"
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    argv = ["compile", f"{kernel}:gemm", "--arch", "sm_90a", "-o", f"{inputs['d']}/c"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_CLOSED_PIPE and "Traceback" not in err, err
    assert json.loads((Path(inputs["d"]) / "c" / "summary.json").read_text())
