"""A group member in its own process (for SIGKILL tests): ``python -m tests.support.child_member CONFIG_JSON TOPIC``.

Prints its agent id on the first line, then polls until killed.
"""
from __future__ import annotations

import json
import sys

from consumer_agent import InstrumentedConsumer


def main() -> None:
    config, topic = json.loads(sys.argv[1]), sys.argv[2]
    consumer = InstrumentedConsumer(config)
    print(consumer.agent_id, flush=True)
    consumer.subscribe([topic])
    while True:
        consumer.poll(0.1)


if __name__ == "__main__":
    main()
