"""Run one Firn trigger the way the triggerer does, in a fresh interpreter, and report whether
it ever blocked the event loop (run by tests/firn_airflow/triggers/test_event_loop.py).

``python -m tests.firn_airflow.triggers.loop_probe '<json>'`` with ``classpath``, ``kwargs``,
``events`` (how many events to wait for), ``catalog_delay`` (seconds every table load sleeps
first: a slow catalog) and ``blocking`` (a control: poll in the loop itself, as a badly
written trigger would). Prints one JSON line: the events' payloads, every asyncio
slow-callback warning, and which heavy modules were imported by the time the trigger was built.

Like the triggerer, the probe has Airflow's trigger base loaded, then imports the trigger's
module and builds the trigger inside the running loop, with asyncio debug mode on and
``slow_callback_duration`` small, so an import, a constructor or a poll that holds the loop
shows up as a warning.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import sys
import time
from typing import Any

import airflow.triggers.base  # noqa: F401  (loaded before any trigger, as in the triggerer)

# The triggerer's own warning threshold ([triggerer] blocked_main_thread_warning_threshold,
# default 0.2 s). A poll or an import of the library held in the loop takes 1-3 s here, and the
# slow catalog adds catalog_delay; a tenth of a second is reached by the OS scheduler alone on
# the loaded 2-core VM (load average 10), which is not what this checks.
SLOW_CALLBACK_S = 0.2
HEAVY = ("firn.core", "firn.catalog", "firn.maintenance", "pyarrow", "firn_airflow.hooks.firn")


class Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def probe(spec: dict[str, Any]) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = SLOW_CALLBACK_S
    module_name, _, class_name = spec["classpath"].rpartition(".")
    module = importlib.import_module(module_name)  # in the loop, as the triggerer does
    trigger = getattr(module, class_name)(**spec["kwargs"])
    heavy_at_build = sorted(m for m in HEAVY if m in sys.modules)

    from firn_airflow.triggers import reader as reader_module

    load = reader_module.TableReader.load
    delay = float(spec.get("catalog_delay", 0))

    def slow_load(self: Any) -> Any:
        time.sleep(delay)  # a slow catalog: the time a remote lookup takes
        return load(self)

    reader_module.TableReader.load = slow_load  # type: ignore[method-assign]
    if spec.get("blocking"):
        # A badly written trigger: a poll made in the loop itself.
        reader_module.TableReader("firn_sensor_test", spec["kwargs"]["table"]).load()
    events = []
    run = trigger.run()
    try:
        async with asyncio.timeout(90):
            async for event in run:
                events.append(event.payload)
                if len(events) >= spec.get("events", 1):
                    break
    finally:
        await run.aclose()
    return {"events": events, "heavy_at_build": heavy_at_build}


def main() -> None:
    spec = json.loads(sys.argv[1])
    warnings = Warnings()
    logging.getLogger("asyncio").addHandler(warnings)
    logging.getLogger("asyncio").setLevel(logging.WARNING)
    result = asyncio.run(probe(spec), debug=True)
    slow = [m for m in warnings.messages if "took" in m and "seconds" in m]
    print(json.dumps({**result, "slow_callbacks": slow}, default=str))


if __name__ == "__main__":
    main()
