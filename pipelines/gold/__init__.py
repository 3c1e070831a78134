"""Gold: who owned which partition when, what each handoff cost, and why the group rebalanced.

``stage.run`` is the gold stage. ``facts`` cuts the new events into per-partition facts;
``ownership`` folds each partition's facts, from the state the last run kept, into ownership
intervals, and ``handoffs`` prices the handoffs between them; ``group_pass`` gives each
handoff its cause (``causes``) and episode (``episodes``) and builds the members
(``members``); Spark then sums the metrics (``metrics``). ``costs`` reads per-group totals
back for the demo and the checks against ground truth. Kept free of imports here: Spark's
Python workers import the pure modules of this package.
"""
