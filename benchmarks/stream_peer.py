"""Stream (stream-dse 2.1.1) as a peer: its fused-vs-layer-by-layer latency gain on ResNet-50
and MobileNetV2 on a Gemmini-like single core, in Stream's own cost model.

Usage::

    python benchmarks/stream_peer.py [--models resnet50,mobilenet_v2] [--time-limit S] [--json]
        [--fused-groups auto|blocks] [--drop-activations]

Stream needs Python >= 3.12, so it runs from its own virtual environment, as a subprocess::

    PYENV_VERSION=3.12.1 python3 -m venv .stream-venv
    .stream-venv/bin/pip install stream-dse==2.1.1 six

(``--venv`` names another folder). Without that environment the script says so and exits 0:
Stream is a peer, not a dependency. The models are exported to ONNX from twill's model zoo
(1x3x224x224) and run twice on ``benchmarks/stream/gemmini_single_core.yaml``: ``layer``
(one fusion group per layer) and ``fused`` (Stream's own fusion groups). ``fallbacks``
counts layers for which ZigZag found no valid mapping and Stream used an ideal-cycle
estimate instead; those make its numbers optimistic. Stream's estimate is latency (cycles)
only; twill's side of the comparison is ``benchmarks/fadiff_networks.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from twill.scratch import private_scratch

HERE = Path(__file__).resolve().parent
HARDWARE = HERE / "stream" / "gemmini_single_core.yaml"


def stream_onnx(src: Path, dst: Path, *, drop_activations: bool = False) -> Path:
    """``src`` rewritten with operators Stream 2.1.1 parses: ``Identity`` nodes bypassed, ``Clip``
    (ReLU6) as ``Relu`` (the same element-wise pass) and the ``Constant`` bounds it no longer
    reads dropped. With ``drop_activations`` the activations are bypassed too, as twill's
    model treats them (free epilogues). The convolutions and their shapes are untouched."""
    import onnx

    model = onnx.load(str(src))
    g = model.graph
    skip = {"Identity", "Clip", "Relu"} if drop_activations else {"Identity"}
    alias = {n.output[0]: n.input[0] for n in g.node if n.op_type in skip}

    def real(name: str) -> str:
        while name in alias:
            name = alias[name]
        return name

    nodes = []
    for n in g.node:
        if n.op_type in skip:
            continue
        ins = [real(x) for x in n.input]
        if n.op_type == "Clip":
            n = onnx.helper.make_node("Relu", ins[:1], list(n.output), name=n.name)
        else:
            del n.input[:]
            n.input.extend(ins)
        nodes.append(n)
    used = {x for n in nodes for x in n.input} | {real(o.name) for o in g.output}
    nodes = [n for n in nodes if n.op_type != "Constant" or n.output[0] in used]
    for o in g.output:
        o.name = real(o.name)
    del g.node[:]
    g.node.extend(nodes)
    onnx.save(model, str(dst))
    return dst


def run_stream(python: Path, model: Path, mode: str, time_limit: float) -> dict:
    """One Stream run in its own interpreter; the JSON line it prints plus the fallbacks."""
    with tempfile.TemporaryDirectory(prefix="twill_stream_") as out:
        proc = subprocess.run(
            [
                str(python),
                str(HERE / "stream" / "run_stream.py"),
                str(HARDWARE),
                str(model),
                out,
                mode,
                str(time_limit),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
        return {"mode": mode, "error": tail[0]}
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row.setdefault("fallbacks", proc.stderr.count("Falling back to an ideal-cycle estimate"))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet50,mobilenet_v2")
    ap.add_argument("--venv", default=str(HERE.parent / ".stream-venv"))
    ap.add_argument("--time-limit", type=float, default=30.0, help="per allocation solve, s")
    ap.add_argument(
        "--fused-groups",
        choices=("auto", "blocks"),
        default="auto",
        help="auto: Stream derives its fusion groups; blocks: one group per top-level module",
    )
    ap.add_argument(
        "--drop-activations",
        action="store_true",
        help="bypass ReLU/ReLU6 nodes (twill treats them as free epilogues)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    python = Path(args.venv) / "bin" / "python"
    if not python.is_file():
        print(f"Stream peer skipped: no virtual environment at {args.venv}", file=sys.stderr)
        return 0
    from twill.onnx.model_zoo import exported_model

    rows = []
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        with exported_model(name) as onnx_path:
            model = stream_onnx(
                onnx_path,
                onnx_path.with_name(f"{name}_stream.onnx"),
                drop_activations=args.drop_activations,
            )
            fused_mode = "fused" if args.fused_groups == "auto" else "blocks"
            runs = {m: run_stream(python, model, m, args.time_limit) for m in ("layer", fused_mode)}
        lay, fus = runs["layer"], runs[fused_mode]
        gain = lay["cycles"] / fus["cycles"] if "cycles" in lay and "cycles" in fus else None
        rows.append({"model": name, "layer": lay, "fused": fus, "stream_gain": gain})
        print(f"[{name}] {json.dumps(rows[-1])}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(
        f"{'model':14} {'layer cycles':>13} {'fused cycles':>13} {'gain':>6} "
        f"{'groups':>7} {'fallbacks l/f':>13} {'s':>6}"
    )
    for r in rows:
        lay, fus = r["layer"], r["fused"]
        if r["stream_gain"] is None:
            print(f"{r['model']:14} error: {lay.get('error') or fus.get('error')}")
            continue
        print(
            f"{r['model']:14} {lay['cycles']:13.0f} {fus['cycles']:13.0f} "
            f"{r['stream_gain']:5.3f}x {fus['groups']:7d} "
            f"{lay['fallbacks']:>6}/{fus['fallbacks']:<6} {lay['seconds'] + fus['seconds']:6.0f}"
        )
    return 0


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
