"""``twill sweep`` (issue 52): the interface the checks use, refusals before any work (exit 2,
one line, nothing written), Ctrl-C (exit 130, a consistent store that the same command
resumes), and Ray's local instance giving the serial table."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.hostile import ROOT, twill_child
from twill.cli import main

SPACE = "template: gemmini\npe_rows: [8, 16]\npe_cols: [8, 16]\nscratchpad_kB: [128]\n"
FAST = ("--networks", "dosa_bert", "--mapper", "random", "--executor", "serial")


@pytest.fixture()
def space(tmp_path: Path) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(SPACE)
    return path


def _json_run(capsys, *argv: str) -> dict:
    assert main(["sweep", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_help_names_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    out = capsys.readouterr().out
    assert "--networks" in out and "--executor" in out and "--ray-address" in out


def test_json_table_frontier_and_files(tmp_path, space, capsys):
    doc = _json_run(capsys, str(space), *FAST, "-o", str(tmp_path / "out"))
    assert {"rows", "frontier", "recomputed", "pairs", "computed"} <= set(doc)
    assert len(doc["rows"]) == 4 and doc["recomputed"] == 0 and doc["pairs"] == 4 * 5
    for row in doc["rows"]:
        assert {"arch", "network", "energy_uJ", "cycles", "edp", "area_mm2"} <= set(row)
        assert row["edp"] == pytest.approx(row["energy_uJ"] * row["cycles"])
    assert doc["frontier"] and all(r["on_frontier"] for r in doc["frontier"])
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["edp_area.png", "pairs.jsonl", "sweep.json", "table.csv"]
    table = (tmp_path / "out" / "table.csv").read_text().splitlines()
    assert table[0].startswith("arch,network,energy_uJ,cycles,edp,area_mm2") and len(table) == 5
    again = _json_run(capsys, str(space), *FAST, "-o", str(tmp_path / "out"))
    assert again["computed"] == 0 and again["reused"] == 20 and again["rows"] == doc["rows"]


@pytest.mark.parametrize(
    ("text", "networks", "message"),
    [
        ("template: gemmini\npe_rows: []\n", "dosa_bert", "pe_rows: empty list"),
        ("template: gemmini\n", "dosa_bert", "the space is empty"),
        ("template: gemmini\nscratchpad_kB: [-1]\n", "dosa_bert", "must be a number above 0"),
        ("pe_cols: [64]\naccumulator_kB: [0.1]\n", "dosa_bert", "too small for any mapping"),
        ("pe_rows: {from: 8, to: 4, times: 2}\n", "dosa_bert", "to at least from"),
        (SPACE, "dosa_bert,no_such_net", "unknown network 'no_such_net'"),
        (SPACE, "dosa_bert,dosa_bert", "named twice"),
    ],
)
def test_bad_input_is_refused_before_any_work(tmp_path, text, networks, message):
    (tmp_path / "space.yaml").write_text(text)
    done = twill_child(tmp_path, tmp_path / "tmp", "sweep", "space.yaml", "--networks",
                       networks, "-o", "out")  # fmt: skip
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_the_output_folder_is_no_input(tmp_path, space):
    bert = ROOT / "src" / "twill" / "data" / "workloads" / "dosa" / "bert"
    for out in (str(space), str(tmp_path), str(bert)):
        done = twill_child(tmp_path, tmp_path / "tmp", "sweep", str(space), *FAST, "-o", out)
        assert done.returncode == 2 and "folder of their own" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["space.yaml", "tmp"]


def test_a_range_sweeps_its_values(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text("pe_rows: {from: 4, to: 16, times: 2}\n")
    doc = _json_run(capsys, str(tmp_path / "s.yaml"), *FAST, "-o", str(tmp_path / "o"))
    assert [r["pe_rows"] for r in doc["rows"]] == [4, 8, 16]


def _interrupt_after(
    argv: list[str], store: Path, pairs: int, sig: int = signal.SIGINT
) -> tuple[int, str]:
    """Run ``twill ARGV`` in its own process group; once ``store`` holds ``pairs`` lines,
    send ``sig`` to the group (SIGINT: a terminal's Ctrl-C). Returns the exit code and stderr.
    Its TMPDIR is a folder of its own, removed after (a SIGKILL leaves its scratch folder)."""
    with _short_tmpdir() as tmp:
        return _interrupt_in(argv, store, pairs, sig, tmp)


@contextlib.contextmanager
def _short_tmpdir():
    """A fresh TMPDIR with a short path (Ray's sockets must fit AF_UNIX's 107 bytes, which
    pytest's tmp_path does not), removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="tw-"))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _interrupt_in(argv: list[str], store: Path, pairs: int, sig: int, tmp: Path) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "twill", *argv], env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not store.exists() or store.read_bytes().count(b"\n") < pairs:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no pair stored"
            time.sleep(0.02)
        os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err


def _check_interrupted_then_resume(capsys, argv: list[str], rc: int, err: str) -> None:
    """Exit 130 with one line, whole records only, no table; the same command resumes."""
    store = Path(argv[argv.index("-o") + 1]) / "pairs.jsonl"
    assert rc == 130, err
    [line] = err.splitlines()
    assert "interrupted at pair" in line and "the same command resumes" in line
    kept = [json.loads(x) for x in store.read_bytes().splitlines()]  # whole lines only
    assert not (store.parent / "table.csv").exists()
    doc = _json_run(capsys, *argv[1:])
    assert doc["recomputed"] == 0 and doc["reused"] == len(kept)
    assert doc["computed"] == doc["pairs"] - len(kept)
    keys = [json.loads(x)["key"] for x in store.read_bytes().splitlines()]
    assert len(keys) == len(set(keys)) == doc["pairs"]


def _interrupt_argv(tmp_path: Path, executor: str) -> list[str]:
    (tmp_path / "s.yaml").write_text("pe_rows: [4, 8, 16, 32]\nscratchpad_kB: [64, 128, 256]\n")
    return ["sweep", str(tmp_path / "s.yaml"), "--networks", "dosa_bert,dosa_resnet50",
            "--mapper", "random", "--executor", executor, "-o", str(tmp_path / "o")]  # fmt: skip


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_exits_130_and_the_same_command_resumes(tmp_path, capsys):
    argv = _interrupt_argv(tmp_path, "serial")
    rc, err = _interrupt_after(argv, tmp_path / "o" / "pairs.jsonl", 10)
    _check_interrupted_then_resume(capsys, argv, rc, err)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_under_ray_says_one_line(tmp_path, capsys):
    """Ray's workers used to fail aloud (hundreds of lines) once the scratch folder holding the
    local instance's logs was removed; the driver now ends its tasks first."""
    pytest.importorskip("ray", reason="ray not installed (optional extra [ray])")
    argv = _interrupt_argv(tmp_path, "ray")
    with _new_ray_sessions_removed():
        rc, err = _interrupt_after(argv, tmp_path / "o" / "pairs.jsonl", 20)
    _check_interrupted_then_resume(capsys, [*argv[:-3], "serial", *argv[-2:]], rc, err)


@contextlib.contextmanager
def _new_ray_sessions_removed():
    """Ray keeps a local instance's sessions under ``/tmp/ray``; remove what the block adds."""
    root = Path(tempfile.gettempdir()) / "ray"
    before = set(root.iterdir()) if root.exists() else set()
    try:
        yield
    finally:
        for entry in (set(root.iterdir()) if root.exists() else set()) - before:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


@pytest.mark.slow
def test_ray_local_instance_gives_the_serial_table(tmp_path, space, capsys):
    pytest.importorskip("ray", reason="ray not installed (optional extra [ray])")
    serial = _json_run(capsys, str(space), *FAST, "-o", str(tmp_path / "s"))
    with _new_ray_sessions_removed(), _short_tmpdir() as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TMPDIR": str(tmp)}
        done = subprocess.run(
            [sys.executable, "-m", "twill", "sweep", str(space), "--networks", "dosa_bert",
             "--mapper", "random", "--executor", "ray", "-o", str(tmp_path / "r"), "--json"],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        left = list(tmp.iterdir())  # the local instance's session goes with the scratch folder
    assert done.returncode == 0 and done.stderr == "", done.stderr
    ray_doc = json.loads(done.stdout)
    assert ray_doc["executor"] == "ray:local" and ray_doc["rows"] == serial["rows"]
    assert left == [], left


def test_a_layer_folder_is_a_network_and_shares_pairs_with_its_name(tmp_path, space, capsys):
    folder = ROOT / "src" / "twill" / "data" / "workloads" / "dosa" / "bert"
    doc = _json_run(capsys, str(space), "--networks", f"dosa_bert,{folder}", "--mapper",
                    "random", "--executor", "serial", "-o", str(tmp_path / "o"))  # fmt: skip
    assert doc["pairs"] == 4 * 5  # the same five shapes: mapped once for both networks
    by_net = {}
    for r in doc["rows"]:
        by_net.setdefault(r["network"], []).append(r["edp"])
    assert by_net["dosa_bert"] == by_net[str(folder)]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_sigkill_loses_nothing_finished(tmp_path, capsys):
    argv = _interrupt_argv(tmp_path, "serial")
    store = tmp_path / "o" / "pairs.jsonl"
    rc, _ = _interrupt_after(argv, store, 10, signal.SIGKILL)
    assert rc == -signal.SIGKILL
    kept = store.read_bytes().count(b"\n")
    doc = _json_run(capsys, *argv[1:])
    assert doc["reused"] == kept >= 10 and doc["recomputed"] == 0
    assert doc["computed"] + doc["reused"] == doc["pairs"] == store.read_bytes().count(b"\n")
