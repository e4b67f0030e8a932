"""Run the shipped kernels on the GPU under Triton's default schedule and under Twill's.

For each shipped kernel (``gemm``, ``fa_fwd``, ``fa_fwd_plain``, ``fa_bwd``) on the GPU it
finds (``sm_90a`` for an H100, ``sm_100a`` for a B200): launch it once as Triton compiles it by
default and once inside :func:`twill.triton.twill_schedule` (Twill's stages and clusters
written onto the loop), check both outputs against a PyTorch reference, and time each with
``triton.testing.do_bench`` (median of its runs, milliseconds). Columns: ``kernel``, ``arch``,
``device``, ``triton_ms``, ``twill_ms``, ``speedup`` (triton / twill), ``triton_ok``,
``twill_ok`` (output within tolerance), ``error`` (a launch that failed, e.g. a kernel whose
buffers exceed the SM). ``fa_fwd_gluon`` compares Triton's default ``fa_fwd`` with the Gluon
kernel built from Twill's checked-in schedule of that loop (``twill_ms``; on ``sm_90a``
:func:`twill.codegen.gluon.attention_sm90.launch_sm90`, on ``sm_100a``
:func:`twill.codegen.gluon.attention_sm100.launch_sm100`, not yet run on a GPU). Without a
GPU it says so and exits 0.

    .venv/bin/python benchmarks/triton_device.py [--kernels gemm ...] [--size N] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from twill.scratch import private_scratch

KERNELS = ("gemm", "fa_fwd", "fa_fwd_plain", "fa_bwd", "fa_fwd_gluon")


def _gemm(mod: Any, opts: Any, n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import torch

    c = opts.constexprs
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    out = torch.empty(n, n, device="cuda", dtype=torch.float16)
    grid = (n // c["BM"], n // c["BN"])

    def launch() -> Any:
        mod.gemm[grid](a, b, out, n, n, n, num_warps=opts.num_warps or 8, **c)
        return out

    return launch, lambda: (a.float() @ b.float()).half()


def _attention(n: int) -> tuple[Any, ...]:
    import torch

    bh, d = 4, 128
    q, k, v = (torch.randn(bh * n, d, device="cuda", dtype=torch.float16) for _ in range(3))
    return bh, d, q, k, v


def _fa_fwd(mod: Any, opts: Any, n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import torch

    c = opts.constexprs
    bh, d, q, k, v = _attention(n)
    out = torch.empty_like(q)
    scale = d**-0.5
    grid = (n // c["BM"], bh)

    def launch() -> Any:
        mod.fa_fwd[grid](q, k, v, out, n, scale, num_warps=opts.num_warps or 8, **c)
        return out

    launch.inputs = (q, k, v, scale)  # type: ignore[attr-defined]  (for the Gluon row)

    def reference() -> Any:
        qs, ks, vs = (x.float().view(bh, n, d) for x in (q, k, v))
        p = torch.softmax(qs @ ks.transpose(1, 2) * scale, dim=-1)
        return (p @ vs).view(bh * n, d).half()

    return launch, reference


def _fa_bwd(mod: Any, opts: Any, n: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """The kernel's own math: P = exp2(K Q^T - lse), no scale inside the exponent."""
    import torch

    c = opts.constexprs
    bh, d, q, k, v = _attention(n)
    q, k = q / 4, k / 4
    do = torch.randn_like(q)
    qs, ks, vs, dos = (x.float().view(bh, n, d) for x in (q, k, v, do))
    s = qs @ ks.transpose(1, 2)
    lse = torch.logsumexp(s * 0.6931471805599453, -1) / 0.6931471805599453
    p = torch.exp2(s - lse[..., None])
    delta = (dos * (p @ vs)).sum(-1)
    dq = torch.zeros(bh * n, d, device="cuda", dtype=torch.float32)
    dk, dv = torch.empty_like(q), torch.empty_like(q)
    scale, grid = d**-0.5, (n // c["BN"], bh)

    def launch() -> Any:
        dq.zero_()
        mod.fa_bwd[grid](
            q,
            k,
            v,
            do,
            lse.reshape(-1).contiguous(),
            delta.reshape(-1).contiguous(),
            dq,
            dk,
            dv,
            n,
            scale,
            num_warps=opts.num_warps or 8,
            **c,
        )
        return torch.cat([dk.float(), dv.float()])

    def reference() -> Any:
        dp = dos @ vs.transpose(1, 2)
        ds = p * (dp - delta[..., None])
        dk_r = (ds.transpose(1, 2) @ qs * scale).reshape(bh * n, d)
        dv_r = (p.transpose(1, 2) @ dos).reshape(bh * n, d)
        return torch.cat([dk_r, dv_r])

    return launch, reference


def _gluon_launch(arch: str, n: int, q: Any, k: Any, v: Any, scale: float) -> Callable[[], Any]:
    """The Gluon forward of ``arch`` on Twill's checked-in schedule of the shipped loop (the
    answer ``tests/data/triton_schedules`` holds and its test verifies against the graph)."""
    from pathlib import Path

    from twill.codegen.gluon import plan as gluon_plan
    from twill.codegen.gluon.attention_sm90 import attention_roles_sm90, launch_sm90
    from twill.codegen.gluon.attention_sm100 import launch_sm100
    from twill.triton import SHIPPED_DIR
    from twill.triton.extract import extract_loops, read_ttgir_file
    from twill.triton.schedule import graph_ops

    text = read_ttgir_file(SHIPPED_DIR / f"fa_fwd.{arch}.ttgir")
    loop = extract_loops(text, arch=arch)[0]
    find = attention_roles_sm90 if arch == "sm_90a" else gluon_plan.attention_roles
    roles = find(graph_ops(loop, text), loop.graph)
    root = Path(__file__).resolve().parents[1]
    answer = json.loads((root / "tests/data/triton_schedules" / f"fa_fwd.{arch}.json").read_text())
    sched, assign = answer["schedule"], answer["assignment"]
    if gluon_plan.split_roles(roles, assign):  # each role whole, as twill compile's route does
        assign = gluon_plan.pin_roles(roles, assign, loop.graph)
    plan = gluon_plan.plan_from_schedule(
        arch, roles, sched, assign, answer["I"], answer["L"], "checked-in answer"
    )
    if arch == "sm_100a":
        return lambda: launch_sm100(plan, q, k, v, n, scale)
    return lambda: launch_sm90(plan, q, k, v, n, scale, sched)


def _gluon_row(row: dict[str, Any], mod: Any, opts: Any, n: int) -> dict[str, Any]:
    """Triton's default ``fa_fwd`` against the Gluon kernel, both checked against PyTorch."""
    arch = row["arch"]
    launch, reference = _fa_fwd(mod, opts, n)
    ref = reference()
    row["triton_ms"], row["triton_ok"] = _measure(launch, ref)
    row["twill_ms"], row["twill_ok"] = _measure(_gluon_launch(arch, n, *launch.inputs), ref)
    row["speedup"] = round(row["triton_ms"] / row["twill_ms"], 3)
    return row


def _measure(launch: Callable[[], Any], reference: Any) -> tuple[float, bool]:
    import torch
    from triton.testing import do_bench

    out = launch().float()
    torch.cuda.synchronize()
    ok = bool(torch.allclose(out, reference.float(), atol=5e-2, rtol=5e-2))
    return float(do_bench(launch, return_mode="median")), ok


def run(name: str, arch: str, size: int) -> dict[str, Any]:
    import importlib.util

    import torch

    from twill.triton import SHIPPED_DIR, SHIPPED_VARIANTS, kernel_options, twill_schedule

    spec = importlib.util.spec_from_file_location(
        "twill_shipped_kernels", SHIPPED_DIR / "kernels.py"
    )
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    kernel, consts, warps = SHIPPED_VARIANTS.get(name, ("fa_fwd", {}, None))  # fa_fwd_gluon
    opts = kernel_options(SHIPPED_DIR / "kernels.py", kernel, arch)
    opts.constexprs.update(consts)
    opts = replace(opts, num_warps=warps or opts.num_warps)
    make = {"gemm": _gemm, "fa_fwd_plain": _fa_fwd, "fa_bwd": _fa_bwd}.get(name, _fa_fwd)
    row: dict[str, Any] = {"kernel": name, "arch": arch, "device": torch.cuda.get_device_name()}
    try:
        if name == "fa_fwd_gluon":
            return _gluon_row(row, mod, opts, size)
        launch, reference = make(mod, opts, size)
        ref = reference()
        row["triton_ms"], row["triton_ok"] = _measure(launch, ref)
        with twill_schedule() as log:
            row["twill_ms"], row["twill_ok"] = _measure(launch, ref)
        row["twill_applied"] = [e.get("applied") for e in log]
        row["speedup"] = round(row["triton_ms"] / row["twill_ms"], 3)
    except Exception as exc:  # a launch that fails is a row, not a crash
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    return row


def nothing_to_run(why: str, args: argparse.Namespace) -> int:
    """Say why nothing ran and exit 0; with ``--json`` stdout still holds JSON (no rows) and
    the sentence goes to stderr."""
    if args.json:
        print(why, file=sys.stderr)
        print(json.dumps([]))
    else:
        print(why)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=KERNELS)
    ap.add_argument("--size", type=int, default=4096, help="matrix size / sequence length")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        return nothing_to_run("no GPU found (PyTorch is not installed); nothing to run", args)
    if not torch.cuda.is_available():
        why = "no GPU found (torch.cuda.is_available() is False); nothing to run"
        return nothing_to_run(why, args)
    import triton

    triton.set_allocator(
        lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda")
    )
    major, _ = torch.cuda.get_device_capability()
    arch = {9: "sm_90a", 10: "sm_100a"}.get(major)
    if arch is None:
        why = (
            f"GPU {torch.cuda.get_device_name()} is neither an H100 (sm_90a) nor a B200 "
            "(sm_100a); nothing to run"
        )
        return nothing_to_run(why, args)
    rows = []
    for k in args.kernels:
        rows.append(run(k, arch, args.size))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    head = ("kernel", "arch", "triton_ms", "twill_ms", "speedup", "triton_ok", "twill_ok", "error")
    print(" | ".join(head))
    for r in rows:
        print(" | ".join(str(r.get(h, "")) for h in head))
    return 0


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
