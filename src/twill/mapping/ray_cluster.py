"""Connecting to a Ray cluster in bounded time, with one clear error for each way it fails.

``ray.init(address=...)`` on an address where no cluster answers does not fail: it retries for
minutes ("Timed out while waiting for GCS"), or, with shorter timeouts configured, ends the whole
process from C++. Malformed addresses and ``ray://`` without Ray Client raise a bare
``ValueError`` deep inside Ray. So before :func:`connect` calls ``ray.init``:

1. :func:`parse_ray_address` checks the address's form (``auto``, ``local``, ``HOST:PORT``,
   ``ray://HOST[:PORT]``; IPv6 hosts in brackets), and ``ray://`` needs Ray Client's ``grpc``;
2. :func:`listening` checks that something accepts TCP connections at ``HOST:PORT`` within
   :data:`TCP_TIMEOUT_S` (a refused connection or an unknown host fails at once);
3. :func:`probe` connects once from a child process, which is killed after
   :data:`RAY_CONNECT_TIMEOUT_S` seconds: a cluster that does not answer in that time is an
   error (:class:`~twill.errors.BackendUnavailableError`), whatever Ray would have done.

Preconditions: the ``ray`` package is installed (:func:`connect` says so when it is not).
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys

from twill.errors import BackendUnavailableError, InvalidProblemError

__all__ = ["RAY_CONNECT_TIMEOUT_S", "TCP_TIMEOUT_S", "parse_ray_address", "listening", "probe",
           "connect"]  # fmt: skip

#: Seconds the connection to a cluster may take (Ray's import included) before it is an error.
RAY_CONNECT_TIMEOUT_S = 15.0
#: Seconds a TCP connection to the cluster's port may take.
TCP_TIMEOUT_S = 5.0

_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])"
_ADDRESS = re.compile(rf"(?P<client>ray://)?(?P<host>{_HOST})(?::(?P<port>[0-9]{{1,5}}))?")
_FORMS = "auto, local, HOST:PORT (the head's GCS, e.g. 10.0.0.5:6379) or ray://HOST[:PORT]"
_INSTALL = "pip install 'ray[client]==<your ray version>'"

_PROBE = """\
import sys
try:
    import ray
    ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
    ray.shutdown()
except BaseException as exc:
    text = str(exc).strip().splitlines()
    print(f"{type(exc).__name__}: {text[0] if text else ''}"[:300], flush=True)
    sys.exit(3)
"""


def parse_ray_address(address: str | None) -> str:
    """``address`` (``None``: ``auto``) once its form is one Ray accepts.

    Raises
    ------
    InvalidProblemError
        Not ``auto``, ``local``, ``HOST:PORT`` or ``ray://HOST[:PORT]`` (a port from 1 to
        65535), or ``ray://`` while Ray Client (``grpc``) is not installed.
    """
    if address is None or address in ("auto", "local"):
        return address or "auto"
    found = _ADDRESS.fullmatch(address)
    port = found and found["port"]
    if not found or (not found["client"] and port is None) or (port and not 0 < int(port) < 65536):
        raise InvalidProblemError(f"Ray address {address!r}: expected {_FORMS}")
    if found["client"] and importlib.util.find_spec("grpc") is None:
        raise InvalidProblemError(
            f"Ray address {address!r}: ray:// connects through Ray Client, which is not "
            f"installed ({_INSTALL}); or give the head's HOST:PORT"
        )
    return address


def listening(address: str, timeout: float = TCP_TIMEOUT_S) -> None:
    """Something accepts a TCP connection at ``address``'s host and port (``ray://``'s
    default port 10001); ``auto`` and ``local`` are not checked.

    Raises
    ------
    BackendUnavailableError
        The host is unknown, the connection is refused or does not open within ``timeout``.
    """
    found = _ADDRESS.fullmatch(address)
    if address in ("auto", "local") or not found:
        return
    host, port = found["host"].strip("[]"), int(found["port"] or 10001)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except TimeoutError:
        why = f"no answer within {timeout:g} s"
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
    else:
        return
    raise BackendUnavailableError(f"cannot reach a Ray cluster at {address}: {why}")


def probe(address: str, timeout: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Connect to the cluster at ``address`` once, from a child process stopped after
    ``timeout`` seconds, so that an address where no cluster answers costs at most that.

    Raises
    ------
    BackendUnavailableError
        No cluster answered within ``timeout`` seconds (or it refused this process's token:
        the message says to set ``RAY_AUTH_MODE=token``), or the connection failed (the
        message gives Ray's reason).
    """
    child = subprocess.Popen([sys.executable, "-c", _PROBE, address], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)  # fmt: skip
    try:
        said, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        try:
            _, logged = child.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild holds the pipe: no log then
            logged = ""
        if "InvalidAuthToken" in (logged or ""):  # Ray retries quietly until it gives up
            raise BackendUnavailableError(
                f"the Ray cluster at {address} requires token authentication (what ray start "
                "turns on by default in Ray 2.60): set RAY_AUTH_MODE=token, with the cluster's "
                "token in ~/.ray/auth_token or RAY_AUTH_TOKEN"
            ) from None
        raise BackendUnavailableError(
            f"no Ray cluster answered at {address} within {timeout:g} s (is it running, and "
            "is this its head's address?)"
        ) from None
    finally:
        if child.poll() is None:  # timed out or interrupted: end it and whatever it started
            _kill_group(child)
    if child.returncode != 0:
        why = said.strip().splitlines()[-1] if said.strip() else f"exit code {child.returncode}"
        raise BackendUnavailableError(f"cannot connect to a Ray cluster at {address}: {why}")


def _kill_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()
    child.wait()


def connect(address: str | None) -> None:
    """Join the cluster at ``address`` (:func:`parse_ray_address`; ``None``: ``auto``) in
    bounded time, unless this process already has a Ray session. ``local`` starts a Ray
    instance in this process, as ``ray.init()`` does.

    Raises
    ------
    BackendUnavailableError
        Ray is not installed, or no cluster answers (:func:`probe`).
    InvalidProblemError
        A malformed address.
    """
    address = parse_ray_address(address)
    if importlib.util.find_spec("ray") is None:
        raise BackendUnavailableError(
            "executor 'ray' needs the ray package (pip install 'twill-sched[ray]')"
        )
    loaded = sys.modules.get("ray")
    if loaded is not None and loaded.is_initialized():
        return
    if address != "local":  # before importing ray here (seconds): an unreachable address
        listening(address)  # is refused in the probe's time alone
        probe(address)
    import ray

    try:
        ray.init(address=None if address == "local" else address, log_to_driver=False,
                 logging_level="ERROR")  # fmt: skip
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise BackendUnavailableError(
            f"cannot connect to a Ray cluster at {address}: {exc}"
        ) from exc
