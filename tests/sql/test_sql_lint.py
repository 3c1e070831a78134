"""The SQL models lint clean under sqlfluff (sparksql dialect, jinja templater with dbt's
builtins and the project's macros; dbt_like_sql/.sqlfluff says which rules are off and why)."""
from __future__ import annotations

from pathlib import Path

from sqlfluff.core import FluffConfig, Linter

PROJECT = Path(__file__).resolve().parents[2] / "dbt_like_sql"


def test_every_model_lints_clean():
    config = FluffConfig.from_path(str(PROJECT))
    result = Linter(config=config).lint_path(str(PROJECT / "models"))
    files = result.files
    assert len(files) >= 20  # every .sql model was linted
    problems = [f"{Path(f.path).name}:{v.line_no} {v.rule_code()} {v.desc()}"
                for f in files for v in f.get_violations()]
    assert problems == []
