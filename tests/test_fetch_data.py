"""``benchmarks/fetch_data.py`` (``make data``): the checked-in manifest matches the shipped
graphs; present files are never downloaded again or overwritten; a download is kept only when
its SHA-256 matches. Offline: downloads are served by a stand-in opener."""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fetch_data  # noqa: E402  (the script itself)

SHIPPED = "rand_graph_sparse_1000_1.gml"


def _suite(tmp_path: Path, benchmark_data: Path, files: dict[str, bytes]) -> Path:
    """A ``gs_schedule`` folder under ``tmp_path`` whose manifest lists ``files``."""
    folder = tmp_path / "gs_schedule"
    folder.mkdir()
    lines = [f"{hashlib.sha256(b).hexdigest()}  {name}" for name, b in files.items()]
    (folder / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    shutil.copy(benchmark_data / "gs_schedule" / SHIPPED, folder / SHIPPED)
    return folder


def _serve(payloads: dict[str, bytes], calls: list[str]):
    def opener(url: str) -> io.BytesIO:
        calls.append(url)
        return io.BytesIO(payloads[url.rsplit("/", 1)[1]])

    return opener


def test_manifest_lists_all_18_graphs_and_matches_the_shipped_ones(benchmark_data) -> None:
    manifest = fetch_data.read_manifest(benchmark_data / "gs_schedule/SHA256SUMS")
    assert len(manifest) == 18
    status = fetch_data.fetch_suite("gs_schedule", data=benchmark_data, download=False)
    assert status["rand_graph_1000_1.gml"] == status[SHIPPED] == "present"
    assert set(status.values()) <= {"present", "missing"}


def test_present_files_are_not_fetched_and_missing_ones_are_checked(
    tmp_path, benchmark_data
) -> None:
    new = b"graph [ node [ id 0 ] ]\n"
    shipped = (benchmark_data / "gs_schedule" / SHIPPED).read_bytes()
    _suite(tmp_path, benchmark_data, {SHIPPED: shipped, "new.gml": new})
    calls: list[str] = []
    opener = _serve({"new.gml": new}, calls)
    status = fetch_data.fetch_suite("gs_schedule", data=tmp_path, opener=opener)
    assert status == {SHIPPED: "present", "new.gml": "fetched"}
    assert calls == [fetch_data.SUITES["gs_schedule"] + "new.gml"]
    assert (tmp_path / "gs_schedule/new.gml").read_bytes() == new
    calls.clear()
    assert set(fetch_data.fetch_suite("gs_schedule", data=tmp_path, opener=opener).values()) == {
        "present"
    }
    assert calls == []


def test_a_download_with_the_wrong_checksum_leaves_nothing(tmp_path, benchmark_data) -> None:
    folder = _suite(tmp_path, benchmark_data, {"new.gml": b"the real bytes"})
    opener = _serve({"new.gml": b"tampered bytes"}, [])
    with pytest.raises(fetch_data.FetchError, match="SHA-256") as err:
        fetch_data.fetch_suite("gs_schedule", data=tmp_path, opener=opener)
    assert err.value.code == 1
    assert sorted(p.name for p in folder.iterdir()) == ["SHA256SUMS", SHIPPED]


def test_a_corrupt_local_file_is_reported_and_kept(tmp_path, benchmark_data) -> None:
    folder = _suite(tmp_path, benchmark_data, {SHIPPED: b"not what ships"})
    before = (folder / SHIPPED).read_bytes()
    with pytest.raises(fetch_data.FetchError, match="differs") as err:
        fetch_data.fetch_suite("gs_schedule", data=tmp_path, opener=_serve({}, []))
    assert err.value.code == 2 and (folder / SHIPPED).read_bytes() == before


def test_cli_check_reports_missing_files_without_downloading(capsys) -> None:
    assert fetch_data.main(["gs_schedule", "--check", "--files", SHIPPED]) == 0
    assert "1 present and verified" in capsys.readouterr().out
    assert fetch_data.main(["gs_schedule", "--files", "nope.gml"]) == 2
    assert "not in its manifest: nope.gml" in capsys.readouterr().err


def _script(*argv: str) -> subprocess.CompletedProcess[str]:
    """The script as `make data` runs it: a bare Python (``-I -S``: no site-packages, no
    PYTHONPATH, so twill is not installed), from another folder."""
    script = Path(fetch_data.__file__)
    return subprocess.run([sys.executable, "-I", "-S", str(script), *argv], cwd=script.anchor,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_the_script_runs_without_the_venv() -> None:
    done = _script("gs_schedule", "--check", "--files", SHIPPED)
    assert done.returncode == 0 and "1 present and verified" in done.stdout, done.stderr


@pytest.mark.parametrize("shape", ["folder", "dangling link", "manifest folder", "binary manifest"])
def test_a_manifest_entry_that_is_no_file_is_a_clean_error(tmp_path, benchmark_data, shape):
    folder = _suite(tmp_path, benchmark_data, {"new.gml": b"x"})
    if shape == "folder":
        (folder / "new.gml").mkdir()
    elif shape == "dangling link":
        (folder / "new.gml").symlink_to(tmp_path / "nowhere")
    elif shape == "manifest folder":
        (folder / "SHA256SUMS").unlink()
        (folder / "SHA256SUMS").mkdir()
    else:
        (folder / "SHA256SUMS").write_bytes(b"\xff\xfe\x00")
    before = sorted(p.name for p in folder.iterdir())
    done = _script("--check", "--data", str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert str(folder) in done.stderr and done.stdout == ""
    assert sorted(p.name for p in folder.iterdir()) == before
