"""Output files are written atomically: the target is either untouched or complete."""

from __future__ import annotations

import os

import pytest

from twill.cli._args import atomic_output, write_output


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_output(target) as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_write_replaces_with_default_permissions(tmp_path):
    target = tmp_path / "r.json"
    write_output(target, "new\n")
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_device_targets_are_written_in_place():
    write_output(os.devnull, "x")  # not replaced by a regular file
    assert not os.path.isfile(os.devnull)


def test_interrupted_folder_leaves_nothing(tmp_path):
    from twill._atomic import atomic_folder

    target = tmp_path / "layers"
    with pytest.raises(KeyboardInterrupt), atomic_folder(target) as tmp:
        (tmp / "a.yaml").write_text("half")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    target.mkdir()  # an empty folder given as the output is replaced by the complete one
    with atomic_folder(target) as tmp:
        (tmp / "a.yaml").write_text("whole")
    assert [p.name for p in tmp_path.iterdir()] == ["layers"]
    assert (target / "a.yaml").read_text() == "whole"


@pytest.mark.parametrize("exists", [True, False])
def test_a_set_of_files_is_written_all_or_nothing(tmp_path, monkeypatch, exists):
    """``compile -o DIR``'s four files (issue 49): a failure while writing the third leaves the
    folder as it was (or absent), with no temporary file."""
    from twill import _atomic

    out = tmp_path / "out"
    if exists:
        out.mkdir()
        (out / "k.ttgir").write_text("old")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    staged = _atomic._stage
    calls = []

    def failing(folder, name, content):
        calls.append(name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return staged(folder, name, content)

    monkeypatch.setattr(_atomic, "_stage", failing)
    files = {"k.ttgir": "new", "k.ptx": "p", "k.cubin": b"\0", "summary.json": "{}"}
    with pytest.raises(OSError, match="No space"):
        _atomic.write_files(files, out)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    monkeypatch.setattr(_atomic, "_stage", staged)
    assert _atomic.write_files(files, out) == [out / n for n in files]
    assert sorted(p.name for p in out.iterdir()) == sorted(files)
    assert (out / "k.ttgir").read_text() == "new" and (out / "k.cubin").read_bytes() == b"\0"
