{#
  The data tests that need a query (uniqueness, relationships: the rules a row cannot check on
  its own, which Delta's constraints check on write: macros/mart_constraints.sql) read only what
  the build wrote, so a build's time does not grow with history. dbt_project.yml sets every
  test's `where` to `__new_data__`; here it becomes, from the tested model's config:
  - a mart the build wrote by scope (`replace_scope: {column: c}`, not in the source build.whole): its
    rows whose c is in the build's scope (the keys of the source build.<c>_scope);
  - anything else (a mart written whole, the staging views, which only the whole suite tests):
    the whole relation.
  The daily whole suite (pipelines/sql_build.check) registers every mart in build.whole.
#}
{% macro spark__get_where_subquery(relation) -%}
    {%- set where = config.get('where', '') -%}
    {%- if where == '__new_data__' -%}
        {%- set where = '' -%}
        {%- set tested = graph.nodes.get(model.attached_node) if execute and model.attached_node else none -%}
        {%- set scope = tested.config.get('replace_scope') if tested else none -%}
        {%- if scope and tested.name not in whole_marts() -%}
            {%- set where = in_scope(scope['column']) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if where -%}
        {{ return('(select * from ' ~ relation ~ ' where ' ~ where ~ ') dbt_subquery') }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}
