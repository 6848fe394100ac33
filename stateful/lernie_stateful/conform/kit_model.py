"""The kit's deterministic command model (the JSON of docs/models.md, both ways).

An implementation without a scripted model of its own points its model command
at ``<python> -m lernie_stateful.conform.kit_model`` (the adapter's ``{kit_model}``).
It never calls a tool: it answers the newest delivered message with
``kit reply: <first body line>``, and anything else with ``kit done``. A body line
``@sleep <seconds>`` makes the call take that long (for stop scenarios).
"""

from __future__ import annotations

import json
import sys
import time


def answer(request: dict[str, object]) -> dict[str, object]:
    messages = request.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else {}
    text = "kit done"
    if isinstance(last, dict) and last.get("role") == "user":
        blocks = last.get("content")
        body = blocks[-1].get("text", "") if isinstance(blocks, list) and blocks and \
            isinstance(blocks[-1], dict) else ""
        body = str(body).split("\n---\n", 1)[-1]
        for line in body.splitlines():
            word, _, secs = line.strip().partition(" ")
            if word == "@sleep" and secs.strip().replace(".", "", 1).isdigit():
                time.sleep(float(secs))
        text = "kit reply: " + (body.splitlines()[0] if body.splitlines() else "")
    return {"content": [{"type": "text", "text": text}]}


def main() -> None:
    json.dump(answer(json.load(sys.stdin)), sys.stdout)


if __name__ == "__main__":
    main()
