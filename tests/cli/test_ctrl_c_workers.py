"""A terminal's Ctrl-C (SIGINT to the whole process group) while worker processes run: one line
on stderr, exit 130, no process of the group left, nothing left in TMPDIR (issue 38).

The workers get the SIGINT too; they ignore it and the parent stops them. Before, each worker
printed its own traceback ("Process ForkProcess-2: ...", "SpawnPoolWorker-1: ...").
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="needs Linux /proc to find the process group"
)


def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    out = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(proc.name))
    return out


def _ctrl_c(args: list[str], tmp: Path, workers: int) -> tuple[int, str, list[int]]:
    """Start ``twill args`` in a new process group; once ``workers`` children run, SIGINT the
    group as a terminal does. Returns exit code, stderr and the processes left afterwards."""
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "twill", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + 60
        while len(_group(proc.pid)) < 1 + workers:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.05)
        time.sleep(0.5)  # the workers are busy solving
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:  # the test failed: leave nothing running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err, _left_after(proc.pid)


def _left_after(pgid: int, grace_s: float = 3.0) -> list[int]:
    """The processes of group ``pgid`` still alive ``grace_s`` after its leader ended."""
    end = time.monotonic() + grace_s
    while (left := _group(pgid)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


def _check(rc: int, err: str, left: list[int], tmp: Path, command: str) -> None:
    assert rc == 130, err
    # one line; a search names where it stood ("interrupted at Phase 2: I=6 trying [1.0 s]")
    [line] = err.splitlines()
    assert re.fullmatch(rf"twill {command}: interrupted( at .+)?; no result written", line), err
    assert left == []
    assert list(tmp.iterdir()) == []


def test_ctrl_c_during_map_network_workers(tmp_path):
    net, tmp = tmp_path / "net", tmp_path / "tmp"
    net.mkdir()
    tmp.mkdir()
    # twelve layers: 6.6 s of CPU in all (four took 2 s, so that a quiet machine could finish
    # them soon after the SIGINT planned half a second after the workers started)
    channels = range(32, 13 * 32, 32)
    for c in channels:
        (net / f"c{c}.yaml").write_text(
            f"problem: {{R: 3, S: 3, P: 28, Q: 28, C: {c}, K: 64, N: 1}}\n"
        )
    (net / "layers.yaml").write_text("".join(f"- c{c}\n" for c in channels))
    args = ["map-network", str(net), "--arch", "simba", "--method", "hybrid", "--workers", "2"]
    _check(*_ctrl_c(args, tmp, workers=2), tmp, "map-network")


def test_ctrl_c_during_solve_workers(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    kernel = "flash_attention_backward_hopper"  # about 6 s with CP-SAT: workers after 1 s
    args = ["solve", kernel, "--backend", "cpsat", "--workers", "2", "-o", str(tmp_path / "r.json")]
    _check(*_ctrl_c(args, tmp, workers=2), tmp, "solve")
    assert not (tmp_path / "r.json").exists()
