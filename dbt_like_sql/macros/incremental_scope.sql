{#
  Incremental marts recompute only their scope: the values of one column (a group, an arrival
  date) found in the rows validated since the last whole SQL build. pipelines/sql_build.py finds
  them once per build and registers them as the sources `build.<column>_scope` (global temporary
  views: each value with its xxhash64 key). A model filters on the keys, integers written into
  its SQL (so Spark runs no join or subquery job for the filter; no value from telemetry is ever
  written into SQL text), and the materialization replaces the same keys' rows. The scope is
  data, read when a model compiles, not a var: dbt parses the project again whenever its vars
  change, and reuses its parse from one build to the next as long as they do not.

  scoped_build(): this model writes its scope only (it exists, and the build does not rebuild
  it whole: macros/rebuild.sql). dbt's is_incremental() asks the same of incremental models only.
#}
{% macro scoped_build() %}
    {%- if not execute -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set relation = adapter.get_relation(this.database, this.schema, this.identifier) -%}
    {{ return(relation is not none and relation.type == 'table' and not should_full_refresh()) }}
{% endmacro %}

{#- A model's filter: on a scoped build, only the rows in the scope. The source is named at parse time too, so dbt
    records the model's dependency on it. -#}
{% macro only_changed(column='group_id') %}
    {%- do source('build', column ~ '_scope') -%}
    {%- if scoped_build() %}
    where {{ in_scope(column) }}
    {%- endif %}
{% endmacro %}

{#- The predicate "column's value is in the build's scope" (false for an empty scope). -#}
{% macro in_scope(column) %}
    {%- set keys = scope_keys(column) -%}
    {{- 'xxhash64(' ~ adapter.quote(column) ~ ') in (' ~ (keys | join(', ')) ~ ')' if keys else 'false' -}}
{% endmacro %}

{#- The keys (xxhash64 of each value) of the scope of `column`: a look at a registered local table, no Spark job. -#}
{% macro scope_keys(column) %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {{ return(run_query('select key from ' ~ build_relation(column ~ '_scope')).columns[0].values() | map('int') | list) }}
{% endmacro %}

{#
  The validation batch the gold tables (and so this build) reflect: gold's stage mark, which
  the build registers in the source build.plan. Each mart row carries it, to say how fresh it
  is; a literal, read when the model compiles.
#}
{% macro built_through_batch() %}
    {%- do source('build', 'plan') -%}
    {%- set found = build_plan()['gold_mark'] -%}
    cast({{ found | int if found is not none else 'null' }} as bigint)
{% endmacro %}

{#- The source build.plan's one row: gold_mark, sync_constraints. -#}
{% macro build_plan() %}
    {%- if not execute -%}
        {{ return({'gold_mark': none, 'sync_constraints': false}) }}
    {%- endif -%}
    {%- set row = run_query('select gold_mark, sync_constraints from ' ~ build_relation('plan')).rows[0] -%}
    {{ return({'gold_mark': row[0], 'sync_constraints': row[1]}) }}
{% endmacro %}
