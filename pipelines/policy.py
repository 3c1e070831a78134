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
