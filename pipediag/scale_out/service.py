"""tf.data service for the what-if copy: local servers, a dispatcher probe and reads with a
deadline; TensorFlow imported inside the functions only (docs/design.md, "tf.data service")."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from pipediag.bench.pipeline import BatchTiming, time_iterator
from pipediag.bench.teardown import TearDown, owned
from pipediag.clock import MONOTONIC, Clock
from pipediag.report.reasons import Reason, ReasonedError, ServiceFailure
from pipediag.report.vocabulary import ProcessingMode
from pipediag.scale_out.server import DISPATCHER, READY, WORKER

T = TypeVar("T")

# Each worker makes the whole dataset: any source can be read, and rates add up per worker.
PROCESSING_MODE: ProcessingMode = "parallel_epochs"
# A start is TensorFlow's import: 4.7 s for three servers on 2 idle cores, more when loaded.
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0  # after its input closes, a server still there is terminated, then killed
PROBE_TIMEOUT_S = 2.0  # a dispatcher that answers at all answers GetWorkers in milliseconds
REGISTER_POLL_S = 0.05
# One timed read (phase 1's size, shorter: the service starts up too), and the transfer ceiling's.
READ_MAX_SECONDS = 2.0
READ_MAX_BATCHES = 200
TRANSFER_MAX_SECONDS = 1.0
TRANSFER_MAX_BATCHES = 400
READ_GRACE_S = 20.0  # past its budget, a read not returned is abandoned (a stalled service)
SIZE_SAMPLE_BATCHES = 8  # batches averaged for the bytes per batch
ERROR_TAIL_CHARS = 300  # of a failed server's error output, in the one-line error

_DISPATCHER_METHOD = "/tensorflow.data.DispatcherService/GetWorkers"
_THREAD_NAME = "pipediag-service-read"


class ServiceError(ReasonedError):
    """The service could not be started, reached or read."""

    def __init__(
        self,
        code: ServiceFailure,
        *,
        detail: str = "",
        value: float | None = None,
        limit: float | None = None,
        because: Reason | None = None,
    ) -> None:
        super().__init__(Reason(code, detail=detail, value=value, limit=limit, because=because))


def parse_address(text: str) -> str:
    """`grpc://HOST:PORT` or `HOST:PORT` -> `HOST:PORT`; ValueError for anything else."""
    match = re.fullmatch(r"(?:grpc://)?(\[[0-9a-fA-F:.]+\]|[\w.-]+):(\d{1,5})", text.strip())
    if match is None or not 0 < int(match.group(2)) < 65536:
        raise ValueError(f"expected grpc://HOST:PORT, got {text!r}")
    return f"{match.group(1)}:{match.group(2)}"


def probe_dispatcher(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> list[str]:
    """The addresses of the workers of the tf.data dispatcher at `address` (HOST:PORT);
    ServiceError if nothing answered within `timeout_s`, or what answered is no dispatcher."""
    try:
        import grpc
    except ImportError:  # pragma: no cover - TensorFlow depends on grpcio
        raise ServiceError("no-grpcio") from None
    channel = grpc.insecure_channel(address)
    try:
        call = channel.unary_unary(
            _DISPATCHER_METHOD, request_serializer=bytes, response_deserializer=bytes
        )
        reply = call(b"", timeout=timeout_s)
    except grpc.RpcError as exc:
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        if code == grpc.StatusCode.UNIMPLEMENTED:
            raise ServiceError("not-a-dispatcher", detail=address) from None
        status = Reason("grpc-status", detail=getattr(code, "name", ""))
        raise ServiceError(
            "no-dispatcher-answer", detail=address, limit=timeout_s, because=status
        ) from None
    finally:
        channel.close()
    # GetWorkersResponse { repeated WorkerInfo workers = 1; }, WorkerInfo { string address = 1; }
    return [
        b"".join(length_delimited(info, 1)).decode(errors="replace")
        for info in length_delimited(reply, 1)
    ]


def length_delimited(data: bytes, number: int) -> list[bytes]:
    """Protobuf field `number`'s values (wire type 2): TF ships no classes for these messages."""
    found: list[bytes] = []
    position = 0
    while position < len(data):
        key, position = read_varint(data, position)
        if (wire := key & 7) == 0:
            _, position = read_varint(data, position)
        elif wire == 1:
            position += 8
        elif wire == 5:
            position += 4
        elif wire == 2:
            size, position = read_varint(data, position)
            if key >> 3 == number:
                found.append(data[position : position + size])
            position += size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return found


def read_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(data):
            raise ValueError("truncated protobuf varint")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


@dataclass
class _Server:
    role: str
    process: subprocess.Popen[bytes]
    errors: IO[bytes]
    output: bytes = b""
    ready: bool = False


class LocalService:
    """A tf.data dispatcher and `workers` workers on this host, each its own process."""

    def __init__(
        self, workers: int, *, clock: Clock = MONOTONIC, start_timeout_s: float = START_TIMEOUT_S
    ) -> None:
        self.workers = workers
        self.address = ""
        self.startup_s: float | None = None
        self._clock, self._start_timeout_s = clock, start_timeout_s
        self._servers: list[_Server] = []

    def __enter__(self) -> LocalService:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def target(self) -> str:
        """The address `distribute(service=...)` takes."""
        return f"grpc://{self.address}"

    def start(self) -> None:
        """Start every server at once (their TF imports overlap); ServiceError, all stopped."""
        began, deadline = self._clock.now(), time.monotonic() + self._start_timeout_s
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("localhost", 0))  # free now: the dispatcher binds it a moment later
            port = int(probe.getsockname()[1])
        self.address = f"localhost:{port}"
        try:
            self._spawn(DISPATCHER, str(port))
            for _ in range(self.workers):
                self._spawn(WORKER, self.address)
            self._wait_ready(deadline)
            self._wait_registered(deadline)
        except BaseException:
            self.stop()
            raise
        self.startup_s = self._clock.now() - began

    def stop(self) -> None:
        """Close every server's input, then terminate or kill what still runs; one still
        starting reads its input only once TensorFlow is imported, so is terminated at once."""
        for server in self._servers:
            with contextlib.suppress(OSError):
                if server.process.stdin is not None:
                    server.process.stdin.close()
                if not server.ready:
                    server.process.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for server in self._servers:
            _end(server.process, max(0.1, deadline - time.monotonic()))
            for stream in (server.process.stdout, server.errors):
                with contextlib.suppress(OSError):
                    if stream is not None:
                        stream.close()
        self._servers = []

    def _spawn(self, role: str, argument: str) -> None:
        package_root = str(Path(__file__).resolve().parents[2])
        paths = [package_root, *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(paths),
            "TF_CPP_MIN_LOG_LEVEL": "3",
            # tf.data only (CPU ops): the GPU's memory stays the training's.
            "CUDA_VISIBLE_DEVICES": "",
        }
        # Closed in stop(): the file outlives this call, as the process does.
        errors = tempfile.TemporaryFile()  # noqa: SIM115
        process = subprocess.Popen(
            [sys.executable, "-m", "pipediag.scale_out.server", role, argument],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=env,
            cwd=package_root,
            # A Ctrl-C at the terminal goes to the user's script; pipediag stops the servers.
            start_new_session=True,
        )
        self._servers.append(_Server(role, process, errors))

    def _wait_ready(self, deadline: float) -> None:
        with selectors.DefaultSelector() as selector:
            for server in self._servers:
                assert server.process.stdout is not None
                selector.register(server.process.stdout, selectors.EVENT_READ, server)
            while not all(s.ready for s in self._servers):
                if (left := deadline - time.monotonic()) <= 0:
                    raise ServiceError("servers-not-started", limit=self._start_timeout_s)
                for key, _ in selector.select(timeout=min(left, 0.5)):
                    server = key.data
                    if not (chunk := os.read(key.fd, 4096)):
                        selector.unregister(key.fileobj)
                        raise self._failure(server)
                    server.output += chunk
                    if f"{READY} {server.role}".encode() in server.output:
                        server.ready = True
                        selector.unregister(key.fileobj)

    def _wait_registered(self, deadline: float) -> None:
        while True:
            if len(registered := probe_dispatcher(self.address)) >= self.workers:
                return
            if time.monotonic() >= deadline:
                raise ServiceError(
                    "workers-not-registered",
                    value=len(registered),
                    limit=self.workers,
                    because=Reason("start-timeout", limit=self._start_timeout_s),
                )
            time.sleep(REGISTER_POLL_S)

    def _failure(self, server: _Server) -> ServiceError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.process.wait(timeout=1.0)
        server.errors.seek(0)
        lines = server.errors.read().decode(errors="replace").strip().splitlines()
        said = Reason("no-error-output")
        if lines:
            said = Reason("exception", detail=lines[-1][-ERROR_TAIL_CHARS:])
        return ServiceError("server-failed-to-start", detail=server.role, because=said)

    def worker_cpu_s(self) -> float | None:
        """CPU seconds the worker processes have used so far (None if psutil cannot say)."""
        try:
            import psutil

            workers = [s.process for s in self._servers if s.role == WORKER]
            times = [psutil.Process(process.pid).cpu_times() for process in workers]
            return sum((t.user + t.system for t in times), 0.0)
        except Exception:
            return None


def _end(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Wait for `process` to exit, then terminate it, then kill it."""
    for signal_it in (None, process.terminate, process.kill):
        if signal_it is not None:
            with contextlib.suppress(OSError):
                signal_it()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=timeout_s if signal_it is None else STOP_TIMEOUT_S)
            return


@dataclass
class ServiceRead:
    """One timed read through a service, and what its batches held."""

    timing: BatchTiming
    bytes_per_batch: float | None = None
    sample: Any = None  # the first batch, for the transfer ceiling
    worker_cpu_s: float | None = None


def distributed(dataset: Any, target: str) -> Any:
    """`dataset` read through the service at `target` (grpc://HOST:PORT), parallel epochs."""
    import tensorflow as tf

    return dataset.apply(
        tf.data.experimental.service.distribute(processing_mode=PROCESSING_MODE, service=target)
    )


def read_through(
    dataset: Any,
    target: str,
    *,
    max_batches: int = READ_MAX_BATCHES,
    max_seconds: float = READ_MAX_SECONDS,
    clock: Clock = MONOTONIC,
    teardown: TearDown | None = None,
    worker_cpu: Callable[[], float | None] | None = None,
) -> ServiceRead:
    """Time a read of `dataset` through the service at `target`, on a fresh iterator, with
    what making and sending the batches cost the workers (`worker_cpu`: local servers)."""
    kept: list[Any] = []
    with owned(teardown) as releaser:
        raw = iter(distributed(dataset, target))
        cpu_before = worker_cpu() if worker_cpu else None
        try:
            sampled = _keeping(raw, kept, SIZE_SAMPLE_BATCHES)
            timing = time_iterator(
                sampled, max_batches=max_batches, max_seconds=max_seconds, clock=clock
            )
        finally:
            cpu_after = worker_cpu() if worker_cpu else None
            releaser.discard(raw)
            del raw
    sizes = [size for size in (batch_bytes(b) for b in kept) if size is not None]
    return ServiceRead(
        timing=timing,
        bytes_per_batch=sum(sizes) / len(sizes) if sizes else None,
        sample=kept[0] if kept else None,
        worker_cpu_s=(
            cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
        ),
    )


def transfer_ceiling(
    batch: Any, target: str, *, clock: Clock = MONOTONIC, teardown: TearDown | None = None
) -> BatchTiming:
    """One batch already made, sent again and again: the most this consumer can receive."""
    import tensorflow as tf

    return read_through(
        tf.data.Dataset.from_tensors(batch).repeat(),
        target,
        max_batches=TRANSFER_MAX_BATCHES,
        max_seconds=TRANSFER_MAX_SECONDS,
        clock=clock,
        teardown=teardown,
    ).timing


def _keeping(iterator: Iterator[Any], kept: list[Any], count: int) -> Iterator[Any]:
    for batch in iterator:
        if len(kept) < count:
            kept.append(batch)
        yield batch


def batch_bytes(batch: Any) -> int | None:
    """Bytes a worker serialises per batch, before compression (strings: lengths), or None."""
    try:
        import tensorflow as tf

        values = [t.numpy() for t in tf.nest.flatten(batch, expand_composites=True)]
        return sum(sum(map(len, x.ravel())) if x.dtype == object else x.nbytes for x in values)
    except Exception:
        return None


def bounded(work: Callable[[], T], timeout_s: float) -> T:
    """`work` on a helper thread, ServiceError past `timeout_s`: TF's client has no timeout."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=target, name=_THREAD_NAME, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise ServiceError("service-stalled", limit=timeout_s)
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def tf_error_text(exc: BaseException) -> str:
    """The line of a tf.data error that says what failed, without the plumbing around it."""
    message = str(getattr(exc, "message", exc)).strip()
    inner = re.search(r"Failed to get element: (.*)", message)
    text = inner.group(1) if inner else message.splitlines()[0] if message else type(exc).__name__
    text = re.sub(r"\{\{[^}]*\}\}\s*", "", text)
    return f"{type(exc).__name__}: {text}"[:200]
