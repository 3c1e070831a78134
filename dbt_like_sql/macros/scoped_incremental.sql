{#
  The marts' materialization: a Delta table at its path in the lake whose rows a build replaces
  by scope, in one write, and whose rules Delta enforces on every write.

  - Whole (the mart does not exist yet, or the build rebuilds it: macros/rebuild.sql; a mart
    without `replace_scope` is always whole): one CREATE OR REPLACE TABLE ... AS SELECT, its
    rules declared in the same commit, so a first build's rows are checked as they are written.
  - Scoped (config `replace_scope: {column: ...}`): the model's rows (it filters itself to the
    scope: only_changed()) replace every row of the scope in one INSERT OVERWRITE with Delta's
    replaceWhere, by the xxhash64 keys of the scope's values (macros/incremental_scope.sql): a
    row the model no longer produces (an episode merged into another, a recommendation
    withdrawn) goes, a reader sees the old rows or the new ones, never a gap, and Delta refuses a
    written row outside the scope. The keys are integers the build computed from the data; no
    value from telemetry is written into SQL text. An empty scope writes nothing (no commit).
    Columns the model gained are appended first (dbt's on_schema_change: append_new_columns);
    a column the model no longer selects is written null.

  Why not MERGE (what this replaced): a MERGE that deletes the scope's stale rows joins the
  model's rows with the target's and rewrites the files it touches, several Spark jobs per
  mart however few rows changed; replaceWhere deletes by file statistics and deletion vectors
  and appends: one job and one commit.

  The rules (macros/mart_constraints.sql) are the model's YAML constraints: not_null columns and
  check expressions (accepted values from pipelines/vocabulary.py, ranges), Delta CHECK
  constraints: a row that breaks one fails the write, naming the rule.
#}
{% materialization scoped_incremental, adapter='spark' %}
    {%- set scope = config.get('replace_scope') -%}
    {%- set existing = load_relation(this) -%}
    {%- set target = this.incorporate(type='table') -%}
    {{ run_hooks(pre_hooks) }}
    {%- if scope is none or existing is none or should_full_refresh() -%}
        {%- call statement('main') -%}
            {{ create_mart(target, compiled_code) }}
        {%- endcall -%}
    {%- else -%}
        {{ replace_scope(target, scope['column'], compiled_code) }}
    {%- endif -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}

{% macro create_mart(target, compiled_code) %}
    create or replace table {{ target }}
    using delta
    {{ location_clause() }}
    tblproperties (
        'delta.enableDeletionVectors' = 'true'
        {%- for name, expression in mart_constraints().items() %},
        {{ sql_string('delta.constraints.' ~ name) }} = {{ sql_string(expression) }}
        {%- endfor %}
    )
    as
    {{ compiled_code }}
{% endmacro %}

{% macro replace_scope(target, column, compiled_code) %}
    {%- set keys = scope_keys(column) -%}
    {%- if build_plan()['sync_constraints'] -%}
        {% do sync_constraints(target) %}
    {%- endif -%}
    {%- if not keys -%}
        {%- call noop_statement('main', 'NOTHING IN SCOPE') -%}{%- endcall -%}
        {{ return('') }}
    {%- endif -%}
    {%- set staged = this.incorporate(path={'identifier': this.identifier ~ '__lens_scope'})
        .include(database=false, schema=false) -%}
    {%- call statement('stage') -%}
        {{ create_temporary_view(staged, compiled_code) }}
    {%- endcall -%}
    {%- set columns = columns_to_write(staged, target) -%}
    {%- call statement('main') -%}
        insert overwrite {{ target }} with ('replaceWhere' = {{ sql_string(in_scope(column)) }})
        select {{ columns | join(', ') }} from {{ staged }}
    {%- endcall -%}
{% endmacro %}

{#- The target's columns in its order, as the staged rows give them, after appending the columns only the model has;
    a column only the target has is written null. -#}
{% macro columns_to_write(staged, target) %}
    {%- set have = adapter.get_columns_in_relation(target) -%}
    {%- set new = adapter.get_columns_in_relation(staged) -%}
    {%- set have_names = have | map(attribute='name') | list -%}
    {%- set new_names = new | map(attribute='name') | list -%}
    {%- set added = new | rejectattr('name', 'in', have_names) | list -%}
    {%- if added -%}
        {%- call statement('append_columns') -%}
            alter table {{ target }} add columns (
                {%- for c in added %}{{ adapter.quote(c.name) }} {{ c.data_type }}{{ ', ' if not loop.last }}{% endfor -%}
            )
        {%- endcall -%}
    {%- endif -%}
    {%- set out = [] -%}
    {%- for c in have -%}
        {%- do out.append(adapter.quote(c.name) if c.name in new_names
            else 'cast(null as ' ~ c.data_type ~ ') as ' ~ adapter.quote(c.name)) -%}
    {%- endfor -%}
    {%- for c in added -%}
        {%- do out.append(adapter.quote(c.name)) -%}
    {%- endfor -%}
    {{ return(out) }}
{% endmacro %}

{#- text as a Spark SQL string literal (backslash escapes: the session's default reading). Our own text only: the
    rules and the key lists, never a value from telemetry. -#}
{% macro sql_string(text) -%}
    '{{ text | replace("\\", "\\\\") | replace("'", "\\'") }}'
{%- endmacro %}
