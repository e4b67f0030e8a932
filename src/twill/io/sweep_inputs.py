"""Readers for ``twill sweep``: the design-space YAML and the ``--networks`` list.

A design space (:class:`~twill.mapping.space.DesignSpace`) in YAML::

    template: gemmini          # or simba (twill.mapping.space.TEMPLATES lists the parameters)
    pe_rows: [8, 16]           # a list: the values to sweep
    pe_cols: [8, 16]
    scratchpad_kB: {from: 64, to: 512, times: 2}   # a range: 64, 128, 256, 512
    accumulator_kB: 32         # one value
    dram_bandwidth: {from: 4, to: 16, step: 4}     # 4, 8, 12, 16

A network is a DOSA workload (``dosa_bert``, ``dosa_resnet50``, ``dosa_unet``,
``dosa_retinanet``), a zoo model (``mobilenet_v2``, ``resnet50``, ``bert-base``, ``gpt2``,
``llama-tiny``, ...; a decoder takes ``:decode`` or ``:prefill``, e.g. ``llama-tiny:decode``), an
``.onnx`` file or a layer folder (``layers.yaml`` and one problem YAML per layer). Every name is
resolved before any model is exported, so an unknown one costs nothing.

Readers validate, then build: each message names the file, the key, what is allowed and what
was found, on one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twill.errors import InvalidProblemError
from twill.mapping.space import MAX_POINTS, TEMPLATES, DesignSpace
from twill.mapping.sweep import SweepNetwork

__all__ = ["SHIPPED_SPACES", "space_path", "read_design_space", "NetworkSpec", "parse_networks",
           "network_input_paths", "read_networks"]  # fmt: skip

#: The design spaces shipped with twill, by name (``twill sweep gemmini ...``).
SHIPPED_SPACES = Path(__file__).resolve().parent.parent / "data" / "spaces"


def space_path(text: str) -> Path:
    """``text`` as a path, or the shipped space it names (``gemmini``, ``simba``) when no such
    file exists."""
    path = Path(text)
    shipped = SHIPPED_SPACES / f"{text}.yaml"
    return shipped if not path.exists() and "/" not in text and shipped.is_file() else path


_RANGE_KEYS = ({"from", "to", "times"}, {"from", "to", "step"})


def _one_line(defects: list[str], source: str) -> InvalidProblemError:
    more = f" (and {len(defects) - 1} more)" if len(defects) > 1 else ""
    return InvalidProblemError(defects[0] + more, source=source)


def read_design_space(path: str | Path) -> DesignSpace:
    """The design space in the YAML file at ``path`` (module docstring), checked.

    Raises
    ------
    InvalidProblemError
        Not a mapping, an unknown template or parameter, an empty list, a value out of range
        (a negative size), a buffer too small for any mapping, more than
        :data:`~twill.mapping.space.MAX_POINTS` points: the first defect, naming the key.

    Examples
    --------
    >>> space = read_design_space(space_path("gemmini"))
    >>> space.template, space.size, [name for name, _ in space.axes]
    ('gemmini', 64, ['pe_dim', 'scratchpad_kB', 'accumulator_kB'])
    """
    from twill.yaml_safe import load_yaml_file

    source = str(path)
    data = load_yaml_file(path)
    if not isinstance(data, dict):
        raise InvalidProblemError(
            "expected a mapping with template: and the parameters to sweep, found "
            f"{type(data).__name__}",
            source=source,
        )
    template = data.get("template", "gemmini")
    if template not in TEMPLATES:
        raise InvalidProblemError(
            f"template: unknown template {template!r} (choose from {', '.join(TEMPLATES)})",
            source=source,
        )
    axes, bad = [], []
    for key, value in data.items():
        if key == "template":
            continue
        values, problem = _values(str(key), value)
        if problem:
            bad.append(problem)
        axes.append((str(key), values))
    space = DesignSpace(template, tuple(axes))
    bad = bad or space.check()
    if bad:
        raise _one_line(bad, source)
    return space


def _values(key: str, value: Any) -> tuple[tuple[float, ...], str | None]:  # noqa: ANN401
    """A parameter's values: a list, one number, or a range ``{from, to, times|step}``."""
    if isinstance(value, list):
        return tuple(value), None
    if not isinstance(value, dict):
        return (value,), None
    if set(value) not in _RANGE_KEYS:
        return (), (f"{key}: a range has the keys from, to and times (geometric) or step "
                    f"(arithmetic), found {', '.join(map(str, value)) or 'none'}")  # fmt: skip
    lo, hi = value["from"], value["to"]
    by = value.get("times", value.get("step"))
    nums = [lo, hi, by]
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in nums) or not all(
        math.isfinite(x) for x in nums
    ):
        return (), f"{key}: from, to and times/step must be numbers, found {nums}"
    geometric = "times" in value
    if lo <= 0 if geometric else False:
        return (), f"{key}: a geometric range starts above 0, found from {lo!r}"
    if (geometric and by <= 1) or (not geometric and by <= 0) or hi < lo:
        what = "times must be above 1" if geometric else "step must be above 0"
        return (), f"{key}: {what} and to at least from, found {value}"
    out, x = [], lo
    while x <= hi * (1 + 1e-9) and len(out) <= MAX_POINTS:
        out.append(x)
        x = x * by if geometric else x + by
    return tuple(out), None


@dataclass(frozen=True)
class NetworkSpec:
    """One ``--networks`` item, resolved: its kind (``dosa``, ``zoo``, ``onnx``, ``folder``)
    and what the reader needs (a folder, a file, or a zoo name and phase)."""

    name: str
    kind: str
    target: str
    phase: str | None = None


def parse_networks(text: str) -> list[NetworkSpec]:
    """The ``--networks`` list, every item resolved (nothing is read or exported yet).

    Raises
    ------
    InvalidProblemError
        An empty list, an item named twice, or one that is no DOSA workload, zoo model,
        ``.onnx`` file or layer folder (naming the item and the choices).

    Examples
    --------
    >>> [(s.name, s.kind, s.phase) for s in parse_networks("dosa_bert,llama-tiny:decode")]
    [('dosa_bert', 'dosa', None), ('llama-tiny:decode', 'zoo', 'decode')]
    """
    from twill.io.networks import default_workload_root
    from twill.mapping.network import NETWORKS
    from twill.onnx.model_zoo import MODELS, model_key
    from twill.onnx.model_zoo_text import DECODERS, PHASES

    items = [t.strip() for t in text.split(",")]
    if not text.strip() or not all(items):
        raise InvalidProblemError(f"--networks {text!r}: an empty name; give names separated "
                                  "by commas, e.g. mobilenet_v2,dosa_bert")  # fmt: skip
    out = []
    for item in items:
        if item in [s.name for s in out]:
            raise InvalidProblemError(f"--networks: {item!r} is named twice")
        path = Path(item)
        name, _, phase = item.partition(":")
        dosa = name.lower().replace("-", "_")
        if path.is_dir():
            out.append(NetworkSpec(item, "folder", item))
        elif path.is_file() and path.suffix.lower() == ".onnx":
            out.append(NetworkSpec(item, "onnx", item))
        elif model_key(name) and (not phase or (phase in PHASES and model_key(name) in DECODERS)):
            out.append(NetworkSpec(item, "zoo", model_key(name), phase or None))
        elif dosa.startswith("dosa_") and dosa[5:] in NETWORKS and not phase:
            out.append(NetworkSpec(item, "dosa", str(default_workload_root() / dosa[5:])))
        else:
            dosa_names = ", ".join(f"dosa_{n}" for n in NETWORKS)
            raise InvalidProblemError(
                f"--networks: unknown network {item!r} (a DOSA workload {dosa_names}; a zoo "
                f"model {', '.join(MODELS)}, decoders {'/'.join(DECODERS)} with :decode or "
                ":prefill; an .onnx file or a layer folder)"
            )
    return out


def network_input_paths(specs: list[NetworkSpec]) -> list[Path]:
    """The files and folders the networks are read from (an output must be none of them)."""
    return [Path(s.target) for s in specs if s.kind in ("folder", "onnx", "dosa")]


def read_networks(specs: list[NetworkSpec]) -> list[SweepNetwork]:
    """Read (zoo models: export, then read) every network, unique shapes with their counts.

    Raises
    ------
    InvalidProblemError
        A file that cannot be read, a network without layers, a layer out of range.
    """
    from twill.io.timeloop import read_network
    from twill.onnx.model import import_model, unique_layers

    out = []
    for spec in specs:
        if spec.kind in ("folder", "dosa"):
            layers = read_network(spec.target)
        else:
            layers = unique_layers(import_model(spec.target, phase=spec.phase).layers)
        if not layers:
            raise InvalidProblemError("no layers: nothing to map", source=spec.name)
        bad = [f"{ly.name}: {d}" for ly in layers for d in ly.check()]
        if bad:
            raise _one_line(bad, spec.name)
        out.append(SweepNetwork(spec.name, tuple(layers)))
    return out
