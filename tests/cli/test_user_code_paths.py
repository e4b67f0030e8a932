"""A kernel file is the user's code, run as Python runs a script, that cannot move twill's
outputs or inputs (issue 49).

* It may import a module beside it (its folder is first on ``sys.path`` while it runs, and the
  module is forgotten afterwards, so the next kernel's neighbour of the same name is its own).
* It may change the working directory (at import, in a ``@triton.heuristics`` rule): every path
  of the command line was made absolute before, and the directory is restored after, so
  ``-o``, ``--plot`` and ``compile -o DIR`` land where the user meant and nothing is written in
  the folder the kernel moved to.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.hostile import tree, twill_child
from twill.triton import SHIPPED_DIR

GEMM = (SHIPPED_DIR / "kernels.py").read_text().split("\n\n\n@triton.jit\ndef _fa_fwd_step")[0]
YAML = (SHIPPED_DIR / "kernels.yaml").read_text()


def _kernel(folder: Path, tail: str) -> Path:
    """``folder/k.py``: the shipped GEMM kernel with ``tail`` appended, and its YAML."""
    folder.mkdir()
    (folder / "k.py").write_text(GEMM + "\n" + tail)
    (folder / "k.yaml").write_text(YAML)
    return folder / "k.py"


CHDIR_AT_IMPORT = "import os\nos.chdir(os.path.join(os.path.dirname(__file__), '..', 'moved'))\n"


@pytest.mark.parametrize(
    ("argv", "written"),
    [
        (["import-triton", "D/k.py:gemm", "--arch", "sm_90a", "-o", "g.json"], ["g.json"]),
        (
            ["solve", "D/k.py:gemm", "--arch", "sm_90a", "-o", "s.json", "--plot", "s.svg"],
            ["s.json", "s.svg"],
        ),
        (["compile", "D/k.py:gemm", "--arch", "sm_90a", "-o", "out"], ["out"]),
    ],
)
def test_a_kernel_that_changes_directory_moves_no_output(tmp_path, argv, written):
    pytest.importorskip("triton")
    work = tmp_path / "work"
    work.mkdir()
    _kernel(work / "D", CHDIR_AT_IMPORT)
    (work / "moved").mkdir()
    (work / "moved" / written[0]).write_text("the user's file, never overwritten\n")
    before = tree(work / "D")
    done = twill_child(work, tmp_path / "tmp", *argv)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in work.iterdir()) == sorted(["D", "moved", *written])
    assert tree(work / "moved") == {written[0]: b"the user's file, never overwritten\n"}
    assert tree(work / "D") == before


def test_a_heuristic_that_changes_directory_moves_no_output(tmp_path):
    pytest.importorskip("triton")
    work = tmp_path / "work"
    work.mkdir()
    (work / "moved").mkdir()
    rule = "@triton.heuristics({'BK': lambda a: __import__('os').chdir('moved') or 64})"
    source = GEMM.replace("@triton.jit\ndef gemm", f"{rule}\n@triton.jit\ndef gemm")
    (work / "D").mkdir()
    (work / "D" / "k.py").write_text(source)
    (work / "D" / "k.yaml").write_text(YAML.replace(", BK: 64}", "}"))
    done = twill_child(work, tmp_path / "tmp", "import-triton", "D/k.py:gemm", "--arch", "sm_90a",
                 "-o", "g.json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (work / "g.json").is_file() and list((work / "moved").iterdir()) == []


def test_a_kernel_imports_a_module_beside_it_as_a_script_does(tmp_path):
    pytest.importorskip("triton")
    from twill.cli import main

    for name, bm in (("A", 128), ("B", 64)):  # the same module name, each kernel its own
        kernel = _kernel(tmp_path / name, "import sizes\n")
        (kernel.parent / "sizes.py").write_text(f"BM = {bm}\n")
        kernel.write_text(kernel.read_text().replace("import sizes\n", "from sizes import BM\n"))
        assert main(["import-triton", f"{kernel}:gemm", "--arch", "sm_90a",
                     "-o", str(tmp_path / f"{name}.json")]) == 0  # fmt: skip
        assert "sizes" not in sys.modules and str(kernel.parent) not in sys.path
    assert os.getcwd() != str(tmp_path)


def test_a_package_beside_the_kernel_is_imported_and_forgotten(tmp_path):
    from twill.triton.user_code import import_user_file

    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    (tmp_path / "helpers" / "sizes.py").write_text("BM = 7\n")
    (tmp_path / "k.py").write_text("from helpers.sizes import BM\nimport os\nos.chdir('/')\n")
    cwd, path = os.getcwd(), list(sys.path)
    module = import_user_file(tmp_path / "k.py", "_k")
    assert module.BM == 7 and os.getcwd() == cwd and sys.path == path
    assert "helpers" not in sys.modules and "helpers.sizes" not in sys.modules


def test_what_the_file_changes_in_the_process_is_restored(tmp_path):
    """``sys.path`` emptied, Ctrl-C ignored, the directory changed at import: all undone, so
    twill still imports its own modules and still stops on Ctrl-C."""
    import signal

    from twill.triton.user_code import import_user_file

    (tmp_path / "k.py").write_text(
        "import os, signal, sys\nsys.path.clear()\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nos.chdir('/')\n"
    )
    cwd, path = os.getcwd(), list(sys.path)
    handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    import_user_file(tmp_path / "k.py", "_k")
    assert os.getcwd() == cwd and sys.path == path
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == handlers
