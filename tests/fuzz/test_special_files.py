"""Inputs that are not regular files: a named pipe would block the reader forever and
``/dev/zero`` (size 0, endless) would fill the memory. Every reader refuses them before
opening, with exit 2 and a message naming the path and what it is.

The commands run in-process under an alarm, so that a regression fails the test instead of
hanging the suite.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

SIMBA = Path(__file__).resolve().parents[2] / "data/cosa/arch/simba.yaml"
LAYER = "problem: {R: 3, S: 3, P: 8, Q: 8, C: 4, K: 16, N: 1}\n"


class _Hung(Exception):
    pass


def _alarm(_signum: int, _frame: object) -> None:
    raise _Hung("the command blocked on a special file")


# (file name, argv; {f} = the special file, {layer} = a valid layer file)
CASES = [
    ("g.yaml", ["bounds", "{f}"]),
    ("g.json", ["solve", "{f}"]),
    ("g.yaml", ["codegen", "{f}"]),
    ("g.gml", ["gaus", "{f}"]),
    ("a.aig", ["gaus", "{f}"]),
    ("l.graphml", ["bounds", "{f}", "--resource-model", "{layer}"]),
    ("l.yaml", ["map", "{f}", "--arch", str(SIMBA)]),
    ("a.yaml", ["map", "{layer}", "--arch", "{f}"]),
    ("m.onnx", ["import-onnx", "{f}", "-o", "{out}"]),
    ("d.csv", ["map-eval", "--dataset", "{f}"]),
    ("k.ttgir", ["import-triton", "{f}", "--arch", "sm_90a"]),
]


@pytest.mark.parametrize("kind", ["fifo", "devzero"])
@pytest.mark.parametrize(("name", "argv"), CASES, ids=[f"{c[1][0]}-{c[0]}" for c in CASES])
def test_special_file_refused(cli, tmp_path: Path, kind: str, name: str, argv) -> None:  # noqa: ANN001
    special = tmp_path / name
    if kind == "fifo":
        os.mkfifo(special)
    else:
        special.symlink_to("/dev/zero")
    layer = tmp_path / "ok_layer.yaml"
    layer.write_text(LAYER)
    argv = [a.format(f=special, layer=layer, out=tmp_path / "out") for a in argv]
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)
    try:
        code, _out, err = cli.run(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    what = "named pipe" if kind == "fifo" else "character device"
    cli.clean(code, err, name, what)
