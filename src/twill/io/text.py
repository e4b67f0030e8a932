"""Reading a user's text file with one clear error for binary or mis-encoded content.

``Path.read_text`` raises a bare :class:`UnicodeDecodeError` that names neither the file nor
what to do; every text reader of :mod:`twill.io` goes through :func:`read_text_file` instead.
"""

from __future__ import annotations

from pathlib import Path

from twill.errors import InputFormatError

__all__ = ["read_text_file", "MAX_INPUT_BYTES"]

MAX_INPUT_BYTES = 256 * 1024 * 1024
"""Largest input file any twill reader opens (256 MiB)."""


def read_text_file(path: str | Path) -> str:
    """The UTF-8 text of ``path``.

    Raises
    ------
    InputFormatError
        The file is not UTF-8 text (a binary file, or another encoding), or it is larger than
        :data:`MAX_INPUT_BYTES`, naming the file.
    FileNotFoundError, IsADirectoryError, PermissionError
        As :meth:`pathlib.Path.read_text` (the CLI reports them with the file name).
    """
    p = Path(path)
    if p.is_file() and p.stat().st_size > MAX_INPUT_BYTES:
        raise InputFormatError(
            f"file of {p.stat().st_size:,} bytes is larger than the {MAX_INPUT_BYTES:,}-byte limit",
            source=str(p),
        )
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputFormatError(
            f"not a UTF-8 text file (byte {exc.start}: {exc.reason})", source=str(p)
        ) from None
