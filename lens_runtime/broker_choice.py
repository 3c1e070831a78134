"""Which Kafka broker a command uses: one rule, for every command that talks to Kafka.

1. ``--bootstrap HOST:PORT`` when the command is given one;
2. else ``LENS_KAFKA_BOOTSTRAP`` (the telemetry cluster's setting: the pipeline reads it, so a
   scenario writes there too);
3. else the broker ``rebalance-lens kafka up`` recorded, while it is alive;
4. else what the command can do without one (``Fallback``):
   - ``scenario run`` starts the ``kafka up`` broker itself (``LOCAL``): the telemetry it writes
     is what the next ``pipeline run`` reads, so the broker must outlive the command
     (``rebalance-lens kafka down`` stops it);
   - the demo and ``recommend --verify`` start one for their own duration (``OWN``): their
     topics and lake are theirs alone, read before they end;
   - ``pipeline run`` starts none (``NONE``): a new broker holds no telemetry, so it stops with
     one line naming the three ways to give it one.

Why one rule: ``scenario run`` used to start a private broker unless given ``--bootstrap``,
even with ``kafka up``'s running, while ``pipeline run`` read ``kafka up``'s: the README's
recipe ran a scenario into a broker that was gone before the pipeline looked. Every command
says in one line which broker it uses and why (``Broker.line``).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum

from lens_runtime.errors import LensError

BOOTSTRAP_ENV = "LENS_KAFKA_BOOTSTRAP"
NO_BROKER = (f"no Kafka bootstrap servers: pass --bootstrap HOST:PORT, set {BOOTSTRAP_ENV}, "
             "or start the local broker with `rebalance-lens kafka up`")


class Fallback(Enum):
    """What a command does when no broker is given or running (step 4)."""

    NONE = "none"  # stop with NO_BROKER
    LOCAL = "local"  # start the `kafka up` broker, which outlives the command
    OWN = "own"  # start a broker for the command's duration


@dataclass(frozen=True)
class Broker:
    """The broker a command uses, and why that one."""

    bootstrap_servers: str
    why: str
    # Started by rebalance-lens (`kafka up`'s or the command's own): its KIP-848 group timings are
    # the embedded broker's (``kafka_broker.FAST_TEST_SETTINGS``), not a cluster's defaults.
    embedded: bool
    own: bool = False  # started for this command and stopped at its end

    def line(self) -> str:
        return f"Kafka: {self.bootstrap_servers} ({self.why})"


def find_broker(given: str | None = None, environ: Mapping[str, str] | None = None) -> Broker | None:
    """Steps 1-3 of the rule: the broker given or running, or None."""
    from lens_runtime.kafka_broker import local_state

    environ = os.environ if environ is None else environ
    if given:
        return Broker(given, "--bootstrap", embedded=False)
    if environ.get(BOOTSTRAP_ENV):
        return Broker(environ[BOOTSTRAP_ENV], BOOTSTRAP_ENV, embedded=False)
    local = local_state().load()
    if local is not None and local.alive():
        return Broker(local.bootstrap_servers, "the broker of `rebalance-lens kafka up`", embedded=True)
    return None


@contextmanager
def broker_for(given: str | None, fallback: Fallback, say: Callable[[str], object],
               environ: Mapping[str, str] | None = None) -> Iterator[Broker]:
    """The broker a command uses for the block, by the rule above; ``say`` gets the one line
    naming it. A broker started for the command (``OWN``) is stopped when the block ends."""
    from lens_runtime.kafka_broker import EmbeddedKafka, local_state

    found = find_broker(given, environ)
    if found is not None:
        say(found.line())
        yield found
        return
    if fallback is Fallback.NONE:
        raise LensError(NO_BROKER)
    if fallback is Fallback.LOCAL:
        local = local_state().up(port=None, timeout_s=90.0)
        started = Broker(local.bootstrap_servers, "none given or running: started the local broker as "
                         "`rebalance-lens kafka up` does; it keeps the telemetry for `pipeline run` after this "
                         "command, `rebalance-lens kafka down` stops it", embedded=True)
        say(started.line())
        yield started
        return
    with EmbeddedKafka() as own:
        started = Broker(own.bootstrap_servers, "none given or running: started for this command, stopped at "
                         "its end", embedded=True, own=True)
        say(started.line())
        yield started
