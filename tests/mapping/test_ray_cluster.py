"""Joining a Ray cluster takes bounded time and fails with one clear error (issue 49).

``ray.init`` on an address where no cluster answers retries for minutes; a malformed address or
``ray://`` without Ray Client raise a bare ``ValueError`` inside Ray. Here the address forms are
checked, a port where nothing listens fails at once, and a port where something listens that is
no Ray cluster (a plain TCP server) costs the probe's timeout, its child process stopped.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path

import pytest

from tests.hostile import twill_child
from twill.errors import BackendUnavailableError, InvalidProblemError
from twill.mapping.ray_cluster import listening, parse_ray_address, probe


@pytest.mark.parametrize(
    "address", ["auto", "local", "10.0.0.5:6379", "head-1.example.org:6379", "[::1]:6379",
                "ray://head:10001", "ray://head"],
)  # fmt: skip
def test_the_forms_ray_accepts_are_accepted(address):
    if address.startswith("ray://") and importlib.util.find_spec("grpc") is None:
        with pytest.raises(InvalidProblemError, match=r"Ray Client, which is not installed"):
            parse_ray_address(address)
    else:
        assert parse_ray_address(address) == address


@pytest.mark.parametrize(
    "address", ["foo", "a:b:c", ":6379", "host:", "host:0", "host:99999", "::1:6379", " h:1",
                "h:1 ", "http://h:1", "ray://", "h:1/x", "-h:1", "h:-1", "ray://ray://h:1", ""],
)  # fmt: skip
def test_a_malformed_address_is_named(address):
    with pytest.raises(InvalidProblemError, match=r"expected auto, local, HOST:PORT"):
        parse_ray_address(address)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_fails_at_once():
    with pytest.raises(BackendUnavailableError, match=r"127\.0\.0\.1:\d+: Connection refused"):
        listening(f"127.0.0.1:{_closed_port()}")
    with pytest.raises(BackendUnavailableError, match=r"cannot reach"):
        listening("no-such-host.invalid:6379")


def test_a_server_that_is_no_cluster_costs_the_timeout_and_leaves_no_process():
    pytest.importorskip("ray")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"
        listening(address)  # something accepts TCP there
        before = _children()
        with pytest.raises(BackendUnavailableError, match=r"no Ray cluster answered .* 3 s"):
            probe(address, timeout=3)
        assert _children() == before


def _children() -> set[int]:
    """This process's live children (Linux /proc)."""
    me, out = str(os.getpid()), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            out.add(int(stat.parent.name))
    return out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--executor", "ray", "--ray-address", "foo"], "expected auto, local, HOST:PORT"),
        (["--executor", "ray", "--ray-address", "h:70000"], "expected auto, local, HOST:PORT"),
        (["--executor", "serial", "--ray-address", "h:1"], "--ray-address needs --executor ray"),
        (["--ray-address", "h:1"], "--ray-address needs --executor ray"),
        (["--executor", "ray", "--ray-address", "127.0.0.1:PORT"], "Connection refused"),
    ],
)
def test_the_command_line_refuses_a_bad_cluster_with_exit_2(tmp_path, argv, words):
    pytest.importorskip("ray")
    argv = [a.replace("PORT", str(_closed_port())) for a in argv]
    done = twill_child(tmp_path, tmp_path / "tmp", "map-network", "dosa_bert", "--arch",
                       "gemmini", "--methods", "random", "--limit", "1", *argv)  # fmt: skip
    assert done.returncode == 2 and words in done.stderr and done.stdout == "", done.stderr
