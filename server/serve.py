"""Serve the project with daphne: one process, or several sharing one port.

    python -m server.serve [--host 127.0.0.1] [--port 8000] [--workers N]

One daphne process runs its event loop, and so every socket's Python work, on one core. To use
more cores, this starts `--workers` daphne processes (WEB_WORKERS; by default 1 without Redis,
one per core with it). Each worker gets a listening socket of its own, bound to the same
address with SO_REUSEPORT, so the kernel spreads new connections over the workers: no proxy
in between, and nothing in Python on the path of a frame.

Several workers need REDIS_URL: a watcher's socket may be on another process than the
player's, and only a shared channel layer carries the move across. Without Redis (the embedded
default) more than one worker is refused rather than served with silent gaps.

The supervisor passes SIGINT/SIGTERM on to its workers, and if one worker dies it stops the
others and exits with that worker's code, so a process manager sees the failure.
"""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time

from django.core.exceptions import ImproperlyConfigured

from server import worker
from server.env import env_count, env_port, port_or_none, refusal_line

APPLICATION = "server.asgi:application"
DEFAULT_PORT = 8000


def default_workers(environ: os._Environ | dict[str, str] = os.environ) -> int:
    """WEB_WORKERS if set; else one per core when a shared channel layer exists, else one."""
    if environ.get("WEB_WORKERS"):
        return env_count("WEB_WORKERS", 1, environ)
    return (os.cpu_count() or 1) if environ.get("REDIS_URL") else 1


def check_workers(workers: int, host: str, environ: os._Environ | dict[str, str]) -> str | None:
    """Why this many workers cannot serve, or None if they can."""
    if workers < 1:
        return "--workers must be at least 1."
    if workers == 1:
        return None
    if not environ.get("REDIS_URL"):
        return (
            "More than one worker needs REDIS_URL: without a shared channel layer a watcher on "
            "one process would miss moves made on another. Set REDIS_URL or use --workers 1."
        )
    if not hasattr(socket, "SO_REUSEPORT"):
        return "More than one worker needs SO_REUSEPORT, which this platform lacks."
    if ipv4_address(host) is None:
        return f"More than one worker listens on IPv4 only, and '{host}' has no IPv4 address."
    return None


def ipv4_address(host: str) -> str | None:
    """The IPv4 address the workers bind for `host` (a name is resolved), or None."""
    try:
        return host if ipaddress.ip_address(host).version == 4 else None
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except (OSError, IndexError):
        return None


def listening_socket(host: str, port: int) -> socket.socket:
    """A listening socket that other workers may bind to the same address (SO_REUSEPORT)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(1024)
    return sock


def port_taken(host: str, port: int) -> str | None:
    """Why the server cannot listen on `host`:`port`, or None. Asked with a socket that does
    not set SO_REUSEPORT: the workers' own sockets share their port with any other that sets
    it, so a second server started with workers on a port in use (`make run` twice, with Redis)
    took half of the first one's new connections, silently; one worker said so in daphne's
    log lines, then the supervisor's."""
    if port == 0:
        return None
    ipv4 = ipv4_address(host)  # a name binds as IPv4, as Twisted's does
    if ipv4 is not None:
        family, address = socket.AF_INET, (ipv4, port)
    else:  # an IPv6 address, or a host that does not resolve (the server's own listen says so)
        try:
            family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        except (OSError, IndexError):
            return None
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Twisted's and ours
        try:
            probe.bind(address)
        except OSError as exc:
            return f"Cannot listen on {host}:{port}: {exc.strerror or exc}."
    return None


def daphne_args(extra: list[str]) -> list[str]:
    """A worker's command: daphne's own command line, on the project's reactor (server.worker)."""
    return [sys.executable, "-m", "server.worker", *extra, APPLICATION]


def _die_with_parent() -> None:
    """In a worker, before exec: get SIGTERM if the supervisor dies (Linux), so a killed
    supervisor leaves no worker holding the port."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start_workers(host: str, port: int, workers: int, daphne_extra: list[str]) -> list:
    """The worker processes; with one worker, plain daphne on host and port."""
    if workers == 1:
        args = daphne_args(["-b", host, "-p", str(port), *daphne_extra])
        return [subprocess.Popen(args, preexec_fn=_die_with_parent)]
    address = ipv4_address(host) or host
    sockets = [listening_socket(address, port) for _ in range(workers)]
    procs = []
    for sock in sockets:
        fd = sock.fileno()
        procs.append(
            subprocess.Popen(
                daphne_args(["--fd", str(fd), *daphne_extra]),
                pass_fds=(fd,),
                preexec_fn=_die_with_parent,
            )
        )
    for sock in sockets:
        sock.close()  # the workers hold their own copies
    return procs


def supervise(procs: list[subprocess.Popen]) -> int:
    """Wait until a worker exits or we are told to stop; then stop the rest."""
    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    code = 0
    while True:
        exited = [p for p in procs if p.poll() is not None]
        if exited and not stopping:
            code = exited[0].returncode or 1
            print(f"worker {exited[0].pid} exited ({code}): stopping the others", file=sys.stderr)
            stop(signal.SIGTERM, None)
        if len(exited) == len(procs):
            return code
        time.sleep(0.2)


def port_number(raw: str) -> int:
    """--port: as PORT (server.env.env_port)."""
    port = port_or_none(raw)
    if port is None:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, not {raw!r}")
    return port


def check_settings(environ: os._Environ | dict[str, str] = os.environ) -> None:
    """Read the settings this command and its workers read (PORT, WEB_WORKERS, the workers'
    own), raising ImproperlyConfigured for the first that cannot be used: `make run` calls it
    (server.stores) before it migrates."""
    worker.check_settings()
    env_port("PORT", DEFAULT_PORT, environ)
    default_workers(environ)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    # PORT is read below, with the other settings: refused, it is named as they are.
    parser.add_argument("--port", type=port_number, default=None, help="default: PORT, else 8000")
    parser.add_argument("--workers", type=int, default=None)
    args, daphne_extra = parser.parse_known_args(argv)
    try:  # what the workers would read, before any starts: a typo is one line, not a traceback
        worker.check_settings()
        importlib.import_module(os.environ.get("DJANGO_SETTINGS_MODULE", "server.settings"))
        port = args.port if args.port is not None else env_port("PORT", DEFAULT_PORT)
        workers = args.workers if args.workers is not None else default_workers()
    except ImproperlyConfigured as exc:
        print(refusal_line(exc), file=sys.stderr)
        return 2
    chosen = args.workers is not None or bool(os.environ.get("WEB_WORKERS"))
    problem = check_workers(workers, args.host, os.environ)
    if problem and not chosen:
        # Only the default asked for more: serve on one worker rather than not at all.
        print(f"{problem} Serving with one worker.", file=sys.stderr)
        workers, problem = 1, None
    if not problem:
        problem = port_taken(args.host, port)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    procs = start_workers(args.host, port, workers, daphne_extra)
    return supervise(procs)


if __name__ == "__main__":
    sys.exit(main())
