"""Waiting for a service subprocess to report SERVING on gRPC health, as a startup probe would."""

import asyncio
import subprocess
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


async def wait_serving(channel: grpc.aio.Channel, service: str, proc: subprocess.Popen, timeout_s: float = 240) -> None:
    """Poll `service`'s health until SERVING; fail if the process exits or `timeout_s` passes.

    The budget is generous because startup (imports, model load) is slow on a loaded 2-core machine.
    """
    health = health_pb2_grpc.HealthStub(channel)
    request = health_pb2.HealthCheckRequest(service=service)
    status = None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            status = (await health.Check(request, timeout=1)).status
        except grpc.aio.AioRpcError:
            status = None
        if status == health_pb2.HealthCheckResponse.SERVING:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{service} not SERVING (last status {status}, process exit code {proc.poll()})")
