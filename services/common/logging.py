"""Structured logs: one JSON object per line; one line per request with its timings."""

import json
import logging
import sys
import time


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line; fields passed as `extra={"fields": {...}}` are merged in."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def setup_logging(level: str = "info", stream=sys.stderr) -> None:
    """Route every logger through one JSON handler on `stream` (idempotent)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "omni_json", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.omni_json = True
    root.addHandler(handler)
    root.setLevel(level.upper())


def log_request(logger: logging.Logger, event: str, **fields) -> None:
    """The one structured line of a finished request: outcome, ids, counts and timings (ms, rounded to µs); a field
    named `*_ts` is a wall-clock time in seconds, rounded to µs like the line's own `ts`."""
    rounded = {k: round(v, 6 if k.endswith("_ts") else 3) if isinstance(v, float) else v for k, v in fields.items()}
    logger.info(event, extra={"fields": rounded})


def request_records(text: str, event: str) -> list[dict]:
    """The `log_request(logger, event, ...)` lines in a log's text, parsed; every other line (another event, plain
    text such as a traceback) is skipped."""
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("msg") == event:
            records.append(record)
    return records


def ms_since(start: float) -> float:
    """Milliseconds elapsed since a time.perf_counter() value."""
    return (time.perf_counter() - start) * 1000.0
