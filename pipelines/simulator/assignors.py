"""Every modelled assignor by name, and ``assign`` to run one.

Names are ``<group.protocol>:<assignor>``, so classic ``range`` (librdkafka, client side)
and KIP-848 ``range`` (broker side) cannot be confused: the prefix is the consumer's
``group.protocol`` and the rest its ``partition.assignment.strategy`` (classic) or
``group.remote.assignor`` (consumer). ``pipelines.vocabulary.ASSIGNORS`` declares the names and
each one's hand-over protocol; this module gives each its model.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pipelines import vocabulary
from pipelines.simulator.broker_assignors import broker_range_assign, uniform_assign
from pipelines.simulator.classic_assignors import range_assign, roundrobin_assign
from pipelines.simulator.group import Assignment, Member
from pipelines.simulator.sticky_assignor import cooperative_sticky_assign

RebalanceProtocol = Literal["eager", "cooperative"]


@dataclass(frozen=True)
class AssignorModel:
    run: Callable[[list[Member], dict[str, int], Assignment | None, dict[str, uuid.UUID] | None], Assignment]
    rebalance_protocol: RebalanceProtocol  # how the client hands partitions over (see handoff)
    sticky: bool  # whether ``previous`` can change the result


def _classic(run: Callable[[list[Member], dict[str, int], Assignment | None], Assignment]):
    """Classic assignors run in the client and never see topic ids."""
    return lambda members, partitions, previous, topic_ids: run(members, partitions, previous)


def _model(name: str, run: Callable[..., Assignment], sticky: bool) -> tuple[str, AssignorModel]:
    """The model of a declared assignor (``pipelines.vocabulary``: its name and hand-over protocol)."""
    return name, AssignorModel(run, vocabulary.assignor(name).rebalance_protocol, sticky)


ASSIGNORS: dict[str, AssignorModel] = dict((
    _model("classic:range", _classic(range_assign), sticky=False),
    _model("classic:roundrobin", _classic(roundrobin_assign), sticky=False),
    _model("classic:cooperative-sticky", _classic(cooperative_sticky_assign), sticky=True),
    # KIP-848: the broker assigns and the client always reconciles incrementally.
    _model("consumer:uniform", uniform_assign, sticky=True),
    _model("consumer:range", broker_range_assign, sticky=False),
))


def assign(assignor: str, members: list[Member], partitions: dict[str, int],
           previous: Assignment | None = None, topic_ids: dict[str, uuid.UUID] | None = None) -> Assignment:
    """The assignment ``assignor`` computes: every member id -> the (topic, partition)s it gets.

    ``partitions``: topic -> partition count; ``previous``: what members own now (KIP-848: the
    previous target); ``topic_ids``: the topics' ids, which decide the KIP-848 topic order.
    The classic models do not depend on the order of ``members`` or ``partitions``; the
    KIP-848 ones take it for keys sharing a Java hash bucket, and for topics without ids.
    """
    return ASSIGNORS[assignor].run(members, partitions, previous, topic_ids)
