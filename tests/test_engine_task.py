"""`stop_engine_task`: the engines' shared stop (cancel the loop task, wait for it, shut the step executor down)."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from omni.services.common.engine_task import stop_engine_task


def test_stop_cancels_the_loop_waits_for_it_and_lets_the_running_step_finish():
    async def scenario() -> tuple[asyncio.Task, list[str]]:
        executor = ThreadPoolExecutor(max_workers=1)
        step_started, release_step = threading.Event(), threading.Event()
        events: list[str] = []

        def step() -> None:
            step_started.set()
            release_step.wait()
            events.append("step done")

        async def loop() -> None:
            try:
                await asyncio.get_running_loop().run_in_executor(executor, step)
            finally:
                events.append("loop ended")

        task = asyncio.create_task(loop())
        while not step_started.is_set():
            await asyncio.sleep(0.001)
        threading.Timer(0.05, release_step.set).start()  # the step ends after the cancel, while stop waits
        await stop_engine_task(task, executor)
        events.append("stopped")
        with pytest.raises(RuntimeError):  # the executor is shut down: no further step can be submitted
            executor.submit(step)
        return task, events

    task, events = asyncio.run(scenario())
    assert task.cancelled()
    assert events == ["loop ended", "step done", "stopped"]


def test_stop_of_an_engine_never_started_only_shuts_the_executor_down():
    executor = ThreadPoolExecutor(max_workers=1)
    asyncio.run(stop_engine_task(None, executor))
    with pytest.raises(RuntimeError):
        executor.submit(print)


def test_a_loop_that_failed_raises_its_error_from_stop():
    async def scenario() -> None:
        async def loop() -> None:
            raise ValueError("engine loop failed")

        task = asyncio.create_task(loop())
        await asyncio.sleep(0)
        await stop_engine_task(task, ThreadPoolExecutor(max_workers=1))

    with pytest.raises(ValueError, match="engine loop failed"):
        asyncio.run(scenario())
