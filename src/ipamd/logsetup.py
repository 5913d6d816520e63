"""JSON-lines logging to stderr (supervisor keeps the files)."""

from __future__ import annotations

import json
import logging
import sys
import time


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        message = record.getMessage()
        if record.name == "ipamd.access" and message.startswith("{"):
            entry.update(json.loads(message))
        else:
            entry["msg"] = message
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, separators=(",", ":"), default=str)


def configure(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # hypercorn logs its own access lines and startup banner; ours are enough.
    logging.getLogger("hypercorn.access").disabled = True
    logging.getLogger("hypercorn.error").setLevel("WARNING")
    # httpx logs every request with its full URL (webhook URLs may carry credentials).
    logging.getLogger("httpx").setLevel("WARNING")
    logging.getLogger("httpcore").setLevel("WARNING")
