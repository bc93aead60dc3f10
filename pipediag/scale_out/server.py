"""One tf.data service server in its own process, started by `service.LocalService`:

    python -m pipediag.scale_out.server dispatcher PORT
    python -m pipediag.scale_out.server worker DISPATCHER_HOST:PORT

It says `READY <role>` once it listens, and serves until its standard input closes
(docs/design.md, "tf.data service")."""

from __future__ import annotations

import os
import sys

READY = "READY"
DISPATCHER = "dispatcher"
WORKER = "worker"


def serve(role: str, argument: str) -> object:
    """Start the server named by `role`; returns it (it serves while referenced)."""
    import tensorflow as tf

    service = tf.data.experimental.service
    if role == DISPATCHER:
        return service.DispatchServer(service.DispatcherConfig(port=int(argument)))
    # Port 0: the worker picks a free port and registers its address with the dispatcher.
    return service.WorkerServer(service.WorkerConfig(dispatcher_address=argument, port=0))


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in (DISPATCHER, WORKER):
        print(f"usage: {DISPATCHER} PORT | {WORKER} DISPATCHER_ADDRESS", file=sys.stderr)
        return 2
    role, argument = argv
    server = serve(role, argument)
    print(f"{READY} {role}", flush=True)
    sys.stdin.read()  # until the parent closes the pipe, or dies
    sys.stdout.flush()
    # Exit with the server referenced: a worker's stop waits on a task streaming to a client
    # that has gone (5 s, then terminated); exiting closes its sockets at once.
    os._exit(0 if server is not None else 1)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    # Skip TensorFlow's interpreter tear-down (seconds, and nothing left to save).
    os._exit(code)
