"""``lake.sql_literal`` (the one place a value from telemetry, a group id, is written into SQL
text: Delta's replaceWhere takes its predicate only as text) turns any text into one Spark
SQL literal that reads back as that text: quotes, backslashes, escapes Spark knows (``\\u0027``,
octal), ``${...}`` (which Spark's variable substitution rewrote inside quotes until the session
turned it off), comment and statement syntax, control characters, any Unicode. Drawn with
hypothesis (fixed seed), checked in one query on the session."""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from pipelines.lake import LITERAL_SETTINGS, sql_literal

FIXED = ["a'b", "a\\'b", "\\", "\\\\'", "'", "''", "\\u0027", "\\047", "x\x00y", "\n\r\t\x1b", "'; DROP TABLE t; --",
         "/* c */", "--", "${x}", "a${spark.sql.shuffle.partitions}", "${env:HOME}", ":group_id", "?", "é😀\u202e",
         "\\'; SELECT 1; --", "'||'", ""]


def _drawn(examples: int) -> list[str]:
    found: list[str] = []

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(st.text(), st.text(alphabet="'\"\\`;-/*\n\x00ux0123456789", max_size=30)))
    def collect(text: str) -> None:
        found.append(text)

    collect()
    return found


def test_any_text_reads_back_as_itself(spark):
    texts = FIXED + _drawn(300)
    query = "SELECT " + ", ".join(f"{sql_literal(t)} AS c{i}" for i, t in enumerate(texts))
    assert list(spark.sql(query).first()) == texts
    assert {k: spark.conf.get(k) for k in LITERAL_SETTINGS} == LITERAL_SETTINGS


def test_a_literal_in_a_predicate_matches_only_its_own_text(spark):
    texts = FIXED + _drawn(50)
    rows = spark.createDataFrame([(t,) for t in texts], "group_id string")
    for t in ("a'b", "\\'; SELECT 1; --", "x\x00y", "'||'"):
        assert [r.group_id for r in rows.where(f"`group_id` IN ({sql_literal(t)})").collect()] == [t]
