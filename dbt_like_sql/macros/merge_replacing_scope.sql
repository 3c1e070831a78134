{#
  dbt-spark's merge, extended for marts configured with `replace_scope`: the build's rows
  replace every row of the changed scope (see changed_keys), so a row that is no longer
  produced (an episode merged into another, a recommendation withdrawn) is deleted rather
  than left stale. One MERGE, so a reader sees the old rows or the new ones, never a gap:
  Delta refuses subqueries in DELETE and MERGE conditions, so the rows to delete come in
  through the merge's source, flagged lens_stale. Keys and names stay in the SQL's
  structure; no value is spliced into its text.

  replace_scope: {'column': the scope column, 'within': the model whose new rows define the
  scope (default stg_lens__events)}.

  The merge writes the build's columns (the source's): a column the model gained is in the
  target by now (on_schema_change: append_new_columns adds it before the merge), and one the
  target has beyond them keeps its value (new rows: null).
#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {%- set scope = config.get('replace_scope') -%}
    {%- if scope is none -%}
        {{ return(dbt_spark.spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates)) }}
    {%- endif -%}
    {%- set keys = [unique_key] if unique_key is string else unique_key -%}
    {%- set columns = adapter.get_columns_in_relation(source) | map(attribute='quoted') | list -%}
    merge into {{ target }} as dest
    using (
        select {{ columns | join(', ') }}, false as lens_stale
        from {{ source }}
        union all
        select {% for c in columns %}old.{{ c }}, {% endfor %}true as lens_stale
        from {{ target }} as old
        where
            old.{{ scope['column'] }} in ({{ changed_keys(scope['column'], scope.get('within', 'stg_lens__events')) }})
            and not exists (
                select 1 from {{ source }} as new
                where {% for k in keys %}new.{{ k }} = old.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
            )
    ) as src
    on {% for k in keys %}src.{{ k }} = dest.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
    when matched and src.lens_stale then delete
    when matched then update set {% for c in columns %}{{ c }} = src.{{ c }}{{ ', ' if not loop.last }}{% endfor %}
    when not matched then insert ({{ columns | join(', ') }})
        values ({% for c in columns %}src.{{ c }}{{ ', ' if not loop.last }}{% endfor %})
{% endmacro %}
