"""Reading a user's text file with one clear error for binary or mis-encoded content.

``Path.read_text`` raises a bare :class:`UnicodeDecodeError` that names neither the file nor
what to do; every text reader of :mod:`twill.io` goes through :func:`read_text_file` instead.
"""

from __future__ import annotations

import stat
from pathlib import Path

from twill.errors import InputFormatError

__all__ = ["read_text_file", "check_input_file", "MAX_INPUT_BYTES"]

MAX_INPUT_BYTES = 256 * 1024 * 1024
"""Largest input file any twill reader opens (256 MiB)."""


_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def check_input_file(path: str | Path) -> Path:
    """``path`` as a :class:`~pathlib.Path` once it is known to be safe to read whole.

    A named pipe would block the reader forever and a device such as ``/dev/zero`` has size 0
    but never ends (reading it fills the memory), so anything but a regular file (or a folder,
    which the read itself reports) is refused before it is opened, as is a file above
    :data:`MAX_INPUT_BYTES`.

    Raises
    ------
    InputFormatError
        Not a regular file, or too large (names the file).
    FileNotFoundError, PermissionError
        As :func:`os.stat` (the CLI reports them with the file name).
    """
    p = Path(path)
    st = p.stat()
    kind = stat.S_IFMT(st.st_mode)
    if kind != stat.S_IFREG and kind != stat.S_IFDIR:
        what = _KINDS.get(kind, "not a regular file")
        raise InputFormatError(
            f"{what}, not a regular file: twill reads its inputs from regular files only",
            source=str(p),
        )
    if kind == stat.S_IFREG and st.st_size > MAX_INPUT_BYTES:
        raise InputFormatError(
            f"file of {st.st_size:,} bytes is larger than the {MAX_INPUT_BYTES:,}-byte limit",
            source=str(p),
        )
    return p


def read_text_file(path: str | Path) -> str:
    """The UTF-8 text of ``path``, without its byte-order mark if it has one (editors on
    Windows and spreadsheet exports write one; issue 49).

    Raises
    ------
    InputFormatError
        The file is not UTF-8 text (a binary file, or another encoding), not a regular file, or
        larger than :data:`MAX_INPUT_BYTES` (:func:`check_input_file`), naming the file.
    FileNotFoundError, IsADirectoryError, PermissionError
        As :meth:`pathlib.Path.read_text` (the CLI reports them with the file name).
    """
    p = check_input_file(path)
    try:
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFormatError(
            f"not a UTF-8 text file (byte {exc.start}: {exc.reason})", source=str(p)
        ) from None
