"""The steady record stream a scenario runs on: every partition gets its topic's rate of records per second.

Each record's value is a unique integer id (ASCII), so the ground truth can count
duplicates by id. The stream is paced in 10 ms ticks, so at 50 records/s per partition
consecutive records on a partition are ~20 ms apart and a pause is measured to about
that precision.
"""
from __future__ import annotations

import threading
import time

from confluent_kafka import Producer

from lens_scenarios.spec import TopicSpec

TICK_S = 0.01


class Feeder(threading.Thread):
    def __init__(self, bootstrap: str, topics: tuple[TopicSpec, ...], rate_per_partition: float) -> None:
        super().__init__(daemon=True, name="feeder")
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "1",
                                  "log.connection.close": False})
        # (topic, partition, records per second, records sent)
        self.targets = [[t.name, p, t.rate_per_partition or rate_per_partition, 0]
                        for t in topics for p in range(t.partitions)]
        self.produced = 0
        self.errors = 0
        self._stop_event = threading.Event()

    def _delivered(self, err, _msg) -> None:
        if err is not None:
            self.errors += 1

    def run(self) -> None:
        started = time.monotonic()
        while not self._stop_event.is_set():
            elapsed = time.monotonic() - started
            for target in self.targets:
                topic, partition, rate, sent = target
                due = int(elapsed * rate) + 1
                for _ in range(due - sent):
                    self.producer.produce(topic, value=str(self.produced).encode(), partition=partition,
                                          on_delivery=self._delivered)
                    self.produced += 1
                target[3] = max(sent, due)
            self.producer.poll(0)
            time.sleep(TICK_S)
        self.producer.flush(10)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=15)
