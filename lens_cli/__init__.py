"""The ``rebalance-lens`` command line (``main``) and the demo: the top of the tree, calling the\nscenarios, the pipelines and the runtime; nothing imports it."""
