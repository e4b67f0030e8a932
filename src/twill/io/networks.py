"""Network workload folders (``layers.yaml`` plus one problem YAML per layer): DOSA's read
into :class:`~twill.mapping.network.Network` graphs, an imported model's written
(:func:`write_layer_folder`, ``twill import-onnx``).

The edges come from :mod:`twill.mapping.network`; this module only finds, reads and writes
the files. The data root is an argument; :func:`default_workload_root` is the default the CLI
(``twill fuse --workloads DIR``), the benchmarks and the demos use: DOSA's workloads, shipped
with the package in ``twill/data/workloads/dosa`` (BSD-2-Clause, ``LICENSE`` and ``SOURCE.md``
beside them).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from twill.errors import InvalidProblemError
from twill.mapping.network import (
    Network,
    build_network,
    fsrcnn,
    network_key,
    network_name,
)
from twill.mapping.workload import Layer

if TYPE_CHECKING:
    from twill.onnx.model import OnnxImport

__all__ = [
    "SHIPPED_WORKLOADS",
    "WORKLOADS_ENV",
    "default_workload_root",
    "load_network",
    "read_network_layers",
    "write_layer_folder",
]


#: Environment variable naming DOSA's ``workloads`` folder when no root is passed.
WORKLOADS_ENV = "TWILL_WORKLOADS"


#: DOSA's ``workloads`` folder as installed with the package.
SHIPPED_WORKLOADS = Path(__file__).resolve().parent.parent / "data" / "workloads" / "dosa"


def default_workload_root() -> Path:
    """``$TWILL_WORKLOADS`` when set, else the DOSA workloads shipped with the package
    (:data:`SHIPPED_WORKLOADS`).

    Never relative to the current folder: a network name means the same from anywhere.
    """
    env = os.environ.get(WORKLOADS_ENV)
    return Path(env).resolve() if env else SHIPPED_WORKLOADS


def read_network_layers(folder: str | Path) -> list[Layer]:
    """The layers of one workload folder, in the order of its ``layers.yaml``.

    Raises
    ------
    InvalidProblemError
        When ``layers.yaml`` is missing or not a list of file stems, or a layer file is bad.
    """
    from twill.io.timeloop import load_yaml, read_layer

    folder = Path(folder)
    order_file = folder / "layers.yaml"
    if not order_file.is_file():
        raise InvalidProblemError("layers.yaml not found", source=str(folder))
    names = load_yaml(order_file)
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        raise InvalidProblemError("expected a list of layer file stems", source=str(order_file))
    # each layer counts once in a network (a file's ``count`` is for CoSA's per-layer runs)
    return [replace(read_layer(folder / f"{n}.yaml", name=n), count=1) for n in names]


def load_network(name: str, root: str | Path | None = None) -> Network:
    """One of :data:`~twill.mapping.network.NETWORKS` read from ``root`` (DOSA's
    ``workloads`` folder; :func:`default_workload_root` when ``None``) and named
    ``dosa_NAME`` (``name`` may be ``dosa_bert`` or ``bert``), or one of
    :data:`~twill.mapping.network.IMAGE_NETWORKS`, which are written in code."""
    key = network_key(name)
    if key == "fsrcnn":
        return fsrcnn()
    folder = Path(root or default_workload_root()) / key
    net = build_network(key, read_network_layers(folder), str(folder))
    return replace(net, name=network_name(key))


def write_layer_folder(imp: OnnxImport, directory: str | Path) -> Path:
    """Write the layer folder: one problem YAML per layer, ``layers.yaml`` and ``graph.yaml``.

    ``graph.yaml`` holds ``name``, ``layers`` (file stems in order) and ``edges`` as
    ``[producer, consumer, kind]``; :func:`twill.mapping.network.load_network`
    reads the folder back as a network. Refuses to write into a non-empty folder; the folder
    is filled beside the target and renamed into place, so it is complete or absent.
    """
    import yaml

    from twill._atomic import atomic_folder
    from twill.io.timeloop import layer_yaml

    d = Path(directory)
    if d.exists() and (not d.is_dir() or any(d.iterdir())):
        raise InvalidProblemError("output folder exists and is not empty", source=str(d))
    d.parent.mkdir(parents=True, exist_ok=True)
    net = imp.network
    names = [ly.name for ly in net.layers]
    graph = {
        "name": net.name,
        "layers": names,
        "edges": [[names[e.src], names[e.dst], e.kind] for e in net.edges],
        "free_ops": dict(sorted(imp.free_ops.items())),
    }
    with atomic_folder(d) as tmp:  # complete, or not there at all
        for ly in net.layers:
            (tmp / f"{ly.name}.yaml").write_text(yaml.safe_dump(layer_yaml(ly), sort_keys=False))
        (tmp / "layers.yaml").write_text(yaml.safe_dump(names))
        (tmp / "graph.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
    return d
