"""Nothing left behind (issue 38): while a command runs, Triton's and inductor's caches and
Python's temporary files live in one private folder, removed at exit; a cache folder the user
chose is kept."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from twill.scratch import private_scratch

ROOT = Path(__file__).resolve().parents[1]


def test_private_scratch_redirects_and_removes(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "mine"))  # the user's own: kept
    monkeypatch.setattr(tempfile, "tempdir", None)
    with private_scratch() as folder:
        assert folder is not None and Path(folder).parent == tmp_path
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"].startswith(folder)
        assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "mine")
        assert tempfile.gettempdir() == folder == os.environ["TMPDIR"]
        Path(tempfile.mkdtemp(), "left.txt").write_text("x")  # a library's leftover
    assert list(tmp_path.iterdir()) == []
    assert os.environ["TMPDIR"] == str(tmp_path) and "TORCHINDUCTOR_CACHE_DIR" not in os.environ


def test_a_triton_compile_leaves_no_cache(tmp_path):
    pytest.importorskip("triton")
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITON_", "TORCHINDUCTOR"))}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONPATH=str(ROOT / "src"))
    kernel = ROOT / "src" / "twill" / "data" / "triton" / "kernels.py"
    proc = subprocess.run(
        [sys.executable, "-m", "twill", "import-triton", f"{kernel}:gemm", "--arch", "sm_90a"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0 and "Warning" not in proc.stderr, proc.stderr
    assert list(tmp.iterdir()) == [] and list(home.iterdir()) == []
