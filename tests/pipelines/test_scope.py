"""A stage's pending check on a quiet run: no validation batch since its mark means no group
to recompute, found without a Spark job (the session passed here is None)."""
from __future__ import annotations

from pipelines.config import PipelineConfig
from pipelines.scope import changed_groups


def test_no_batch_since_the_mark_is_no_group_without_a_scan():
    config = PipelineConfig(lake_path="/nonexistent/lake")
    assert changed_groups(None, config, after_batch=7, upto_batch=7) == []  # type: ignore[arg-type]
