"""``twill sweep`` on a local Ray cluster against the serial run, and a run killed half-way and
resumed (issue 52), each as the command a user runs (``python -m twill sweep ... --json``).

    nice .venv/bin/python benchmarks/sweep_ray.py --json
    nice .venv/bin/python benchmarks/sweep_ray.py --networks dosa_bert --mapper random --json

Runs, in one invocation on one machine: ``serial`` (``--executor serial``), ``ray`` (``--executor
ray --ray-address`` of a cluster this script starts with ``ray start --head --block``, its own
port and temporary folder, stopped at the end by its process group), ``killed`` (the same Ray
command, ``SIGKILL``-ed once the store holds half the pairs) and ``resumed`` (the same command
again in the same folder). Optionally ``local`` (the process pool). ``--ray-address`` uses a
running cluster instead.

One row per run: ``run``, ``executor``, ``wall_s`` (the command, the networks' export and
read included), ``sweep_s`` (the sweep itself, from its JSON), ``pairs``, ``computed``,
``reused``, ``recomputed``, ``store_lines`` and ``store_keys`` (whole lines of the store and
distinct pairs in it: equal when no pair was computed twice), ``same_table`` (every row equals
the serial run's) and the load average. The summary gives the speed-up of each run over the
serial one and the data one Ray task moves (a pickled task and result, bytes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = "resnet50,dosa_bert,mobilenet_v2,llama-tiny:decode"
#: A cluster from ``ray start`` checks tokens (Ray 2.60's default); its drivers need this.
AUTH = {"RAY_AUTH_MODE": "token"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sweep_argv(args: argparse.Namespace, out: Path, executor: list[str]) -> list[str]:
    return [sys.executable, "-m", "twill", "sweep", args.space, "--networks", args.networks,
            "--mapper", args.mapper, "-o", str(out), "--json", *executor]  # fmt: skip


def _env() -> dict[str, str]:
    return {**AUTH, **os.environ, "PYTHONPATH": str(ROOT / "src")}


def _store(out: Path) -> tuple[int, int]:
    """(whole lines, distinct keys) of the store in ``out``."""
    path = out / "pairs.jsonl"
    if not path.exists():
        return 0, 0
    lines = [x for x in path.read_bytes().split(b"\n")[:-1] if x]
    return len(lines), len({json.loads(x)["key"] for x in lines})


def _run(name: str, argv: list[str], out: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=_env(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
    doc = json.loads(done.stdout)
    lines, keys = _store(out)
    return {"run": name, "executor": doc["executor"], "wall_s": round(wall, 1),
            "sweep_s": round(doc["seconds"], 1), "pairs": doc["pairs"],
            "computed": doc["computed"], "reused": doc["reused"],
            "recomputed": doc["recomputed"], "store_lines": lines, "store_keys": keys,
            "load": f"{load:.1f}-{os.getloadavg()[0]:.1f}", "_rows": doc["rows"]}  # fmt: skip


def _kill_half_way(argv: list[str], out: Path, pairs: int) -> dict[str, Any]:
    """Start ``argv``; SIGKILL it once the store holds half of ``pairs``."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        while _store(out)[0] < pairs // 2:
            if proc.poll() is not None:
                raise SystemExit("killed: the sweep ended before half its pairs")
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    lines, keys = _store(out)
    return {"run": "killed", "executor": "ray", "wall_s": round(time.perf_counter() - t0, 1),
            "sweep_s": None, "pairs": pairs, "computed": lines, "reused": 0, "recomputed": 0,
            "store_lines": lines, "store_keys": keys,
            "load": f"{load:.1f}-{os.getloadavg()[0]:.1f}", "_rows": None}  # fmt: skip


class _Cluster:
    """``ray start --head --block`` on a free port with its own temporary folder, in its own
    session, which :meth:`stop` ends process by process (no ``ray stop``: that ends every Ray
    of the machine). Ray's ``ray start`` turns token authentication on, so the drivers run with
    ``RAY_AUTH_MODE=token`` (:data:`AUTH`)."""

    def __init__(self, cpus: int, tmp: Path) -> None:
        self.port = _free_port()
        ray = Path(sys.executable).with_name("ray")
        cmd = [str(ray), "start", "--head", "--block", f"--port={self.port}",
               f"--num-cpus={cpus}", "--include-dashboard=false", "--disable-usage-stats",
               f"--temp-dir={tmp}"]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True, env={**_env(), **AUTH})  # fmt: skip
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("ray start --head did not come up") from None
                time.sleep(0.5)
        time.sleep(3)  # the raylet registers after the GCS listens

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _members(self) -> list[int]:
        """Live processes of the cluster's session (Ray's workers have groups of their own)."""
        out = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == self.proc.pid and fields[0] != "Z":
                out.append(int(proc.name))
        return out

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while self._members() and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in self._members():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()


def _payload_bytes(args: argparse.Namespace) -> dict[str, int]:
    """Pickled sizes of one Ray task's arguments and of its result (the largest layer)."""
    sys.path.insert(0, str(ROOT / "src"))
    from twill.io.networks import default_workload_root
    from twill.io.timeloop import read_network
    from twill.mapping.arch import gemmini_arch
    from twill.mapping.pipeline import MapTask, _task
    from twill.mapping.sweep import SweepSettings

    layer = max(read_network(default_workload_root() / "bert"), key=lambda ly: ly.macs)
    task = MapTask(layer, gemmini_arch(), args.mapper, SweepSettings().options())
    return {"task_bytes": len(pickle.dumps(task)), "result_bytes": len(pickle.dumps(_task(*task)))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", default="gemmini", help="a space YAML or a shipped name")
    ap.add_argument("--networks", default=NETWORKS)
    ap.add_argument("--mapper", default="cosa")
    ap.add_argument("--runs", default="serial,ray,killed", help="serial, local, ray, killed")
    ap.add_argument("--ray-address", default=None, help="a running cluster (default: start one)")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the cluster this script starts")
    ap.add_argument("--keep", action="store_true", help="keep the output folders (printed)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    work = Path(tempfile.mkdtemp(prefix="sweep_ray_"))
    cluster = None
    if args.ray_address is None and {"ray", "killed"} & set(runs):
        cluster = _Cluster(args.cpus, work / "ray")
    address = args.ray_address or (cluster.address if cluster else None)
    ray = ["--executor", "ray", "--ray-address", str(address)]
    rows: list[dict[str, Any]] = []
    try:
        for run in runs:
            if run in ("serial", "local"):
                argv = _sweep_argv(args, work / run, ["--executor", run])
                rows.append(_run(run, argv, work / run))
            elif run == "ray":
                rows.append(_run("ray", _sweep_argv(args, work / "ray_out", ray), work / "ray_out"))
            elif run == "killed":
                pairs = next((r["pairs"] for r in rows if r["pairs"]), None)
                if pairs is None:
                    raise SystemExit("--runs: killed needs a run before it (the pair count)")
                argv = _sweep_argv(args, work / "killed", ray)
                rows.append(_kill_half_way(argv, work / "killed", pairs))
                resumed = _run("resumed", argv, work / "killed")
                rows.append(resumed)
    finally:
        if cluster is not None:
            cluster.stop()
        if args.keep:
            print(f"outputs kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    reference = next((r["_rows"] for r in rows if r["run"] == "serial"), None)
    for r in rows:
        r["same_table"] = (
            None if r["_rows"] is None or reference is None else r["_rows"] == reference
        )
    summary = {"space": args.space, "networks": args.networks, "mapper": args.mapper,
               "cluster_cpus": args.cpus if cluster else None, **_payload_bytes(args)}  # fmt: skip
    serial = next((r["wall_s"] for r in rows if r["run"] == "serial"), None)
    if serial:
        summary["speedup_wall"] = {r["run"]: round(serial / r["wall_s"], 2) for r in rows
                                   if r["run"] in ("local", "ray")}  # fmt: skip
    table = [{k: v for k, v in r.items() if k != "_rows"} for r in rows]
    if args.json:
        print(json.dumps({"rows": table, "summary": summary}, indent=2))
    else:
        cols = list(table[0])
        print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
        for r in table:
            print("| " + " | ".join(str(r[c]) for c in cols) + " |")
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
