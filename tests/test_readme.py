"""The README's commands run as written, in order, against this checkout's package.

Every line of every ```sh block and every ```python block is run, except:

* lines that only set up the environment (``make ...``, ``. .venv/bin/activate``, ``pip``):
  the test already runs inside that environment;
* lines or blocks whose comment contains ``expensive`` (a user reads the same word: these
  take minutes), and benchmark scripts (``python benchmarks/...``), which belong to
  ``docs/benchmarks.md``.

Commands run in a scratch folder whose ``data`` and ``src`` point at this checkout's, so the
README's relative paths resolve exactly as in a checkout (nothing outside the repository is
reachable) and outputs (``-o``, ``--plot``) land in the scratch folder.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ("make ", ". .venv/bin/activate", "source .venv/bin/activate", "pip ")
SKIP = ("python benchmarks/",)


def _blocks(lang: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _sh_blocks() -> list[list[str]]:
    """The commands of each ```sh block, in order (a block's lines may build on each other)."""
    out = []
    for block in _blocks("sh"):
        commands = []
        for line in block.replace("\\\n", " ").splitlines():
            command, _, comment = line.partition("  #")
            command = command.split(" # ")[0].strip()
            if not command or command.startswith(SETUP + SKIP) or "expensive" in comment:
                continue
            commands.append(command)
        if commands:
            out.append(commands)
    return out


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("readme")
    (base / "checkout").mkdir()
    return base / "checkout"


def test_readme_has_the_first_commands() -> None:
    first = _blocks("sh")[0]
    assert ". .venv/bin/activate" in first and "twill kernels" in first


@pytest.mark.parametrize("commands", _sh_blocks(), ids=lambda c: c[0][:60])
def test_sh_block_runs(commands: list[str], tmp_path: Path, scratch: Path) -> None:
    """Each block runs line by line, in order, in a folder of its own."""
    folder = scratch.parent / tmp_path.name
    folder.mkdir()
    for name in ("src", "data"):  # paths into the checkout resolve as written
        (folder / name).symlink_to(ROOT / name)
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "twill", f"README command does not start with twill: {command}"
        proc = _run([sys.executable, "-m", "twill", *argv[1:]], folder)
        assert proc.returncode == 0, f"{command}\nexit {proc.returncode}\n{proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_python_block_runs(index: int, scratch: Path) -> None:
    code = _blocks("python")[index]
    if "expensive" in code:
        pytest.skip("marked expensive in the README")
    proc = _run([sys.executable, "-c", code], scratch)
    assert proc.returncode == 0, f"{code}\n{proc.stderr[-2000:]}"
