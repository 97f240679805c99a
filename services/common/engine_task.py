"""Stopping an engine: the asyncio task that runs its loop and the executor thread that runs its model steps."""

import asyncio
from concurrent.futures import Executor


async def stop_engine_task(task: asyncio.Task | None, executor: Executor) -> None:
    """Cancel `task` (None: never started) and wait for it to end, then shut `executor` down once its step is done."""
    if task is not None:
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
    executor.shutdown(wait=True)
