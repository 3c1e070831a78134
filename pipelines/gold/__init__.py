"""Gold: what follows from a group's whole timeline.

``stage.run`` is the gold stage. Per changed group, one pure pass (``group_pass``) builds
the ownership intervals (``ownership``), the handoffs between them and what each cost
(``handoffs``) and the rebalance episodes with their causes (``episodes``); Spark then sums
the metrics (``metrics``). ``costs`` reads per-group totals back for the demo and the checks
against ground truth. Kept free of imports here: Spark's Python workers import the pure
modules of this package.
"""
