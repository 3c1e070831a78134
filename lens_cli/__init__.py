"""The ``rebalance-lens`` command line (``main``) and the demo: the top of the tree, calling the
scenarios, the pipelines and the runtime; nothing imports it."""
