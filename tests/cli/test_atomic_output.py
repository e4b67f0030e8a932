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
