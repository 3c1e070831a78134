"""The judgement's thresholds and defaults that several parts read, declared once.

The recommend stage, the closed loop, the pipeline's settings and the report all read these;
none of them owns them. Imports nothing, so the report reads the coverage floor without the
recommender, the simulator or Spark (``pip install 'rebalance-lens[report]'``).
"""
from __future__ import annotations

# The window a group is judged on (``pipelines.recommend.window``; ``recommend_window_h``): 7 days,
# every daily deploy and weekday of the group's recent life.
DEFAULT_WINDOW_H = 168.0

# A change pays when the what-if predicts a saving of at least MIN_SAVING of what the group's
# rebalances cost now in one figure (duplicates or paused partition-seconds), without making the
# other worse by more than MAX_WORSE (a stated trade-off excepted).
MIN_SAVING = 0.10
MAX_WORSE = 0.10
# Below these a saving is not worth a rollout, whatever its share: a few records or a second of one
# partition. The closed loop holds a predicted change below them to the same floor.
MIN_DUPLICATES = 10
MIN_PAUSE_S = 1.0

# Below this share of partition-time run by members with the agent, no change is priced: the what-if
# replays the group's membership through assignor models, and the members without the agent are
# missing from it (their partitions, joins and leaves), so a replay at 80% would misassign a fifth
# of the partitions it prices. The report says it beside a group's coverage.
MIN_COVERAGE = 0.9

# How far a measured figure may lie from a prediction and the prediction still hold: the closed
# loop's judgement of a rerun, the rules' confidence in a model that reproduces the measured costs,
# and a plan step's rollback criteria (roll back beyond it).
TOLERANCE = 0.25

# "Instrument this group" (``pipelines.recommend.instrument``): a group's figures are bounds too wide to choose
# between changes when the part of them only the broker saw (its log's bounds) leaves the figure's midpoint (what
# a prediction is anchored to: ``measured_``) further from the truth than a prediction may be and hold. With a
# figure known to lie in [lower, upper], its midpoint is off by at most (upper - lower) / (upper + lower) of
# itself; past TOLERANCE, a predicted saving could fail the closed loop on the bounds alone, and two changes
# whose savings differ by less than the bounds' width cannot be ranked.
INSTRUMENT_SPREAD = TOLERANCE
# ... and the possible saving is large: the least change that pays (MIN_SAVING of the cost, at the bounds'
# upper end) would save ten times the rollout floor (MIN_DUPLICATES, MIN_PAUSE_S), since running the agent is
# itself a rollout on every member before the change it prices: 10% of 1,000 records is 10 x 10 records, 10% of
# 100 partition-s is 10 x 1 s.
INSTRUMENT_FLOOR_MULTIPLE = 10
INSTRUMENT_MIN_DUPLICATES = round(INSTRUMENT_FLOOR_MULTIPLE * MIN_DUPLICATES / MIN_SAVING)  # 1,000 records
INSTRUMENT_MIN_PAUSE_S = INSTRUMENT_FLOOR_MULTIPLE * MIN_PAUSE_S / MIN_SAVING  # 100 partition-seconds
