"""Assignment simulator: pure-Python models of Kafka's partition assignors, to predict what a
rebalance moves before it happens. ``assignors.assign`` runs librdkafka's classic-protocol
assignors (``range``, ``roundrobin``, ``cooperative-sticky``) and the broker's KIP-848 ones
(``uniform``, ``range``) over plain data (``group``), with the member and topic orders the
real code iterates in (``java_order`` for the broker); ``handoff`` says what a new
assignment revokes and moves under the eager and the cooperative protocols. Each model is
checked against the real client and broker in ``tests/simulator``.
"""
