"""The client of :mod:`tests.docs.forkserver`, run as ``python -I -S forkclient.py (ltr|script)
ARGS...`` for each ``ltr`` command of a page: it sends its arguments, folder, environment and
descriptors 0-2 to the server and exits with the command's code.

It imports only what the interpreter has built in (``_socket``, ``marshal``), a command's
start-up being paid once per command: no ``socket``, ``json`` or ``subprocess`` module.
"""

import _socket
import marshal
import os
import sys

#: The client's environment variable that asks for a run's figures in the command's process
#: (:data:`tests.docs.forkserver.INLINE_FIGURES`), not passed on to the command.
INLINE_FIGURES = "LTR_DOCS_INLINE_FIGURES"
#: The server's address (``@name``: Linux's abstract namespace), not passed on to the command.
ADDRESS = "LTR_DOCS_FORKSERVER"
#: A file for the command's process id: set in a client's environment (not passed on), the command
#: runs in a session of its own (``setsid``, as ``start_new_session`` starts one) and writes its
#: id there first, so a caller can find what the command left in its session.
PIDFILE = "LTR_DOCS_PIDFILE"


def request(argv: list[str], *, script: bool) -> bytes:
    """The request for ``argv`` from this process: a length (8 bytes, big-endian) and the
    marshalled request (:func:`tests.docs.forkserver.serve` reads it)."""
    env = {k: v for k, v in os.environ.items() if k not in {ADDRESS, INLINE_FIGURES, PIDFILE}}
    body = marshal.dumps({
        "argv": argv, "cwd": os.getcwd(), "env": env, "script": script, "inline_figures": os.environ.get(INLINE_FIGURES) == "1",
        "pidfile": os.environ.get(PIDFILE, ""),
    })  # fmt: skip
    return len(body).to_bytes(8, "big") + body


def main(argv: list[str]) -> int:
    """Send ``argv[1:]`` (a command's arguments; ``argv[0]`` ``script``: a Python script and its
    arguments) with descriptors 0-2 to the server; return the command's exit code."""
    name = os.environ[ADDRESS]
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.connect("\0" + name[1:] if name.startswith("@") else name)
    fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))  # an int array
    conn.sendmsg([b"r"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    conn.sendall(request(argv[1:], script=argv[0] == "script"))
    answer = b""
    while chunk := conn.recv(16):
        answer += chunk
    return int(answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
