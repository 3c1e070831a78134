"""Recommendations: what to change in a group's consumer configuration, priced and explained.

``stage.run`` is the recommend stage. Per changed group, one pure pass (``group_pass``)
fits the cost model to the group's gold rows, replays its membership timeline under
every candidate configuration (``candidates``, ``what_if``; the simulator is
``pipelines.simulator``) and lets each rule (``rules``) name the change its evidence
supports, with its price, rollout and confidence. What each config-change kind is (its
title, settings, effort, rollback wording and simulator effect) is declared once in
``kinds``. Kept free of imports here: Spark's Python workers import the pure modules of
this package.
"""
