"""The `fedldp` binary of the build under test, for tests that compare the
module with the command or drive a deployment (ctest sets
FEDLDP_BINARY_DIR); a test without it is skipped. Deployments run as the
operator runs them: processes in a folder of the test's own."""

import os
import re
import socket
import subprocess
import time

import pytest


def cli():
    build = os.environ.get("FEDLDP_BINARY_DIR")
    path = os.path.join(build, "apps", "fedldp", "fedldp") if build else None
    if not path or not os.path.exists(path):
        pytest.skip("the fedldp binary is not known (FEDLDP_BINARY_DIR)")
    return path


def run(*args, cwd, check=True):
    """`fedldp ARGS` in `cwd`, to the end; its output (an error fails, if `check`)."""
    return subprocess.run([cli(), *args], cwd=cwd, check=check, capture_output=True, text=True)


_started = []  # every process start() made, until kill_started()


def start(*args, cwd, name):
    """`fedldp ARGS` started in `cwd`, its output in NAME.out and NAME.err;
    killed when the test ends, however it ends (conftest.py)."""
    process = subprocess.Popen([cli(), *args], cwd=cwd, stdout=open(cwd / f"{name}.out", "w"),
                               stderr=open(cwd / f"{name}.err", "w"))
    _started.append(process)
    return process


def kill_started():
    """Kills what start() started and is still running: a test that fails
    half-way leaves no server or client behind."""
    while _started:
        process = _started.pop()
        if process.poll() is None:
            process.kill()
            process.wait()


def start_clients(port, tokens, cwd, extra=lambda i: (), shuffler_port=None):
    """A client per token file, of the server on `port` (and the shuffler),
    each with its own ledger and `extra(i)`, started in `cwd` as clientI."""
    through = ("--shuffler", f"127.0.0.1:{shuffler_port}") if shuffler_port else ()
    return {f"client{i}": start("client", "--server", f"127.0.0.1:{port}", *through,
                                "--token-file", token, "--ledger", f"ledger{i}.sqlite", *extra(i),
                                cwd=cwd, name=f"client{i}")
            for i, token in enumerate(tokens)}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(process, log, timeout=60):
    """Waits until the process says it listens."""
    until = time.time() + timeout
    while time.time() < until and process.poll() is None:
        if re.search(r"listening on 127\.0\.0\.1:\d+", log.read_text()):
            return
        time.sleep(0.05)
    raise AssertionError(f"{log.name} never listened: {log.read_text()}")


def finish(processes, cwd):
    """Waits for each process to exit 0 (its stderr is the failure)."""
    for name, p in processes.items():
        try:
            assert p.wait(timeout=300) == 0, (cwd / f"{name}.err").read_text()
        finally:
            p.kill()
