"""``twill compile FILE.py:KERNEL -o DIR`` checks DIR and the four files it will write before
any work (issue 49): a file that is a folder, a link (to the kernel, to its YAML, to anything),
a hard link to an input, a pipe, an empty name, a link to nothing are refused with exit 2 and
one line, and DIR, the kernel and TMPDIR are left exactly as they were. What is accepted is
then written all or nothing (``tests/cli/test_atomic_output.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.hostile import tree, twill_child
from twill.triton import SHIPPED_DIR


def _spoil(out: Path, kernel: Path, shape: str) -> None:
    if shape == "summary.json is a folder":
        (out / "summary.json").mkdir()
        (out / "summary.json" / "keep").write_text("x")
    elif shape == "ptx links to the kernel":
        (out / "gemm.ptx").symlink_to(kernel)
    elif shape == "cubin links to the YAML":
        (out / "gemm.cubin").symlink_to(Path("..") / "D" / "kernels.yaml")
    elif shape == "ttgir links elsewhere":
        (out / "gemm.ttgir").symlink_to("/etc/hostname")
    elif shape == "ttgir is a hard link to the YAML":
        os.link(kernel.parent / "kernels.yaml", out / "gemm.ttgir")
    elif shape == "summary.json is a pipe":
        os.mkfifo(out / "summary.json")
    elif shape == "ptx is a dangling link":
        (out / "gemm.ptx").symlink_to("nowhere")


SHAPES = ["summary.json is a folder", "ptx links to the kernel", "cubin links to the YAML",
          "ttgir links elsewhere", "ttgir is a hard link to the YAML", "summary.json is a pipe",
          "ptx is a dangling link"]  # fmt: skip


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """``work/D/kernels.py`` and its YAML (the shipped ones), and an output folder ``work/out``
    holding an old result."""
    (tmp_path / "work" / "D").mkdir(parents=True)
    for name in ("kernels.py", "kernels.yaml"):
        (tmp_path / "work" / "D" / name).write_bytes((SHIPPED_DIR / name).read_bytes())
    (tmp_path / "work" / "out").mkdir()
    (tmp_path / "work" / "out" / "gemm.ptx.old").write_text("an old result\n")
    return tmp_path / "work"


@pytest.mark.parametrize("shape", SHAPES)
def test_an_unwritable_artefact_is_refused_before_any_work(capsys, work, shape):
    from twill.cli import main

    _spoil(work / "out", work / "D" / "kernels.py", shape)
    before = tree(work)
    code = main(["compile", f"{work}/D/kernels.py:gemm", "--arch", "sm_90a", "-o",
                 str(work / "out")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "remove it or choose another folder" in err and "Traceback" not in err
    assert tree(work) == before


@pytest.mark.parametrize(
    ("output", "words"),
    [("", "empty folder name"), (" ", "empty folder name"), ("D/kernels.py", "not a folder"),
     ("nowhere/out", "does not exist"), ("dangling", "symbolic link to nothing")],
)  # fmt: skip
def test_a_bad_output_folder_is_refused_from_outside(tmp_path, work, output, words):
    (work / "dangling").symlink_to("missing")
    before = tree(work)
    done = twill_child(work, tmp_path / "tmp", "compile", "D/kernels.py:gemm", "--arch",
                       "sm_90a", "-o", output)  # fmt: skip
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert tree(work) == before


def test_a_new_folder_is_created_with_the_four_files(tmp_path, work):
    pytest.importorskip("triton")
    done = twill_child(work, tmp_path / "tmp", "compile", "D/kernels.py:gemm", "--arch",
                       "sm_90a", "-o", "new")  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = ["gemm.cubin", "gemm.ptx", "gemm.ttgir", "summary.json"]
    assert sorted(p.name for p in (work / "new").iterdir()) == names
