"""Readers and writers at the edge of twill (outer layer; the core never imports it).

* :mod:`twill.io.graph_json`: JSON / YAML dependence graphs (schema in ``docs/formats.md``).
* :mod:`twill.io.hatschet`: HatScheT ``.graphml`` + resource-model XML.
* :mod:`twill.io.gml`, :mod:`twill.io.aiger`: GS-Schedule GML and AIGER netlists.
* :mod:`twill.io.timeloop`: Timeloop-style problem / architecture / mapping YAML, DOSA CSV.
* :mod:`twill.onnx.model`: ONNX models (and :mod:`twill.onnx.model_zoo` PyTorch networks) to
  layers and their producer → consumer graph.
* :func:`load_graph`: the one entry for the CLI and the solvers' users: a kernel name, a
  ``.json``/``.yaml``/``.yml`` file or a ``.graphml`` file (and, with ``arrays=True``,
  ``.gml``/``.aig``).
"""

from __future__ import annotations

from pathlib import Path

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph

__all__ = ["load_graph", "graph_input_files"]


def graph_input_files(spec: str | Path, resource_model: str | Path | None = None) -> list[Path]:
    """Every file :func:`load_graph` (or ``twill gaus``) may read for ``spec``: the file itself
    and, for a HatScheT ``.graphml``, the resource model given or the ones looked for beside it.

    The CLI refuses an output path that names any of them, so no input is ever overwritten.
    """
    text = str(spec)
    files = [Path(text)]  # the whole spec as given: a file may have a colon in its name
    if ":" in text and text.rpartition(":")[0].endswith(".py"):
        # FILE.py:KERNEL reads FILE.py and the option YAMLs beside it
        from twill.triton.importer import kernel_option_files

        script = Path(text.rpartition(":")[0])
        return [*files, script, *kernel_option_files(script)]
    if resource_model is not None:
        files.append(Path(resource_model))
    elif Path(spec).suffix.lower() in (".graphml", ".xml"):
        from twill.io.hatschet import resource_model_candidates

        files += resource_model_candidates(spec)
    return files


def load_graph(
    spec: str | Path,
    resource_model: str | Path | None = None,
    arch: str | None = None,
    *,
    arrays: bool = False,
) -> DependenceGraph:
    """Load a dependence graph from a kernel name or a file: the one loader for every format.

    Parameters
    ----------
    spec
        A name in :data:`twill.kernels.KERNELS`, or a path ending in ``.json``, ``.yaml``,
        ``.yml`` or ``.graphml`` (HatScheT).
    resource_model
        HatScheT resource-model XML (only for ``.graphml``; default: found beside the file).
    arrays
        Also accept the formats that only GauS reads, GS-Schedule ``.gml`` and AIGER ``.aig``
        (and HatScheT as ``.xml``). Their weights ride on the graph (``Edge.comm``,
        ``memory_weight``, ``weight_note``); GauS works on its array view
        :func:`~twill.sched.gaus.graph.gaus_view`.
    arch
        Target of a Triton kernel ``FILE.py:KERNEL`` or a ``.ttgir`` file (``sm_90a`` or
        ``sm_100a``; :func:`twill.triton.import_triton`).

    Returns
    -------
    DependenceGraph
        A graph that has passed :func:`twill.sched.validate.check_graph`; a ``.gml`` / ``.aig``
        graph (``arrays=True``) is checked by its reader only (no cycle; no Twill model-size
        limit, since GauS bounds its own arrays).

    Raises
    ------
    InvalidProblemError
        Unknown kernel or file type, or an invalid graph (every defect, naming the file).
    InputFormatError
        The file cannot be parsed.
    FileNotFoundError
        The file does not exist.

    Examples
    --------
    >>> load_graph("flash_attention_forward_simplified").names
    ['S', 'P', 'O']
    """
    from twill.sched.kernels import KERNELS

    text = str(spec)
    path = Path(text)
    suffix = path.suffix.lower()
    if resource_model is not None and suffix != ".graphml":
        raise InvalidProblemError(
            "a resource model only applies to HatScheT .graphml files", source=text
        )
    if suffix == ".ttgir" or (":" in text and text.rpartition(":")[0].endswith(".py")):
        from twill.triton.importer import import_triton

        return import_triton(text, arch)
    if text in KERNELS and not path.exists():
        return KERNELS[text]()
    if suffix in (".json", ".yaml", ".yml"):
        from twill.io.graph_json import read_graph

        return read_graph(path)
    if arrays and suffix in (".gml", ".aig", ".xml"):
        return _load_array_format(path)
    if suffix == ".graphml":
        from twill.io.hatschet import read_hatschet

        _require_file(path)
        return read_hatschet(path, resource_model)
    if suffix == ".py" and path.is_file():  # a kernel file without its kernel's name
        from twill.triton.compiler import kernel_file_hint

        raise InvalidProblemError(kernel_file_hint(path), source=text)
    if path.exists():
        extra = ", .gml, .aig, .xml" if arrays else ""
        raise InvalidProblemError(
            f"unsupported file type {suffix or '(none)'!r}; expected .json, .yaml, .yml{extra} or "
            ".graphml",
            source=text,
        )
    raise InvalidProblemError(
        f"neither a file nor a known kernel; kernels: {', '.join(sorted(KERNELS))}", source=text
    )


def _require_file(path: Path) -> None:
    """A regular file, or the error that says what ``path`` is instead (missing, a folder, a
    pipe or a device)."""
    from twill.text import check_input_file

    check_input_file(path)
    if path.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(path))


def _load_array_format(path: Path) -> DependenceGraph:
    """GS-Schedule GML, AIGER, or HatScheT under an ``.xml`` name."""
    _require_file(path)
    suffix = path.suffix.lower()
    if suffix == ".gml":
        from twill.io.gml import read_gml

        return read_gml(path)
    if suffix == ".aig":
        from twill.io.aiger import read_aiger

        return read_aiger(path)
    from twill.io.hatschet import read_hatschet

    return read_hatschet(path)
