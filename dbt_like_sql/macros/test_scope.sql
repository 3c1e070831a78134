{#
  Data tests on an incremental build read only what the build could have changed, so a
  build's time does not grow with history. dbt_project.yml sets every test's `where` to
  `__new_data__`; here it becomes, from the columns the tested relation has:
  - group_id: the groups with events validated after the last whole SQL build (var
    built_through, see incremental_scope.sql);
  - validate_batch (the quarantine): the rows validated after it;
  - neither (stage progress, the per-day quarantine counts): the whole relation, a few rows.
  A first build and every --full-refresh (built_through = -1) test everything.
#}
{% macro spark__get_where_subquery(relation) -%}
    {%- set where = config.get('where', '') -%}
    {%- set after = var('built_through', -1) | int -%}
    {%- if where == '__new_data__' and after < 0 -%}
        {%- set where = '' -%}
    {%- elif where == '__new_data__' -%}
        {%- set columns = adapter.get_columns_in_relation(relation) | map(attribute='name') | list -%}
        {%- if 'group_id' in columns -%}
            {%- set where -%}
                group_id in (select distinct group_id from {{ source('lens', 'events') }} where validate_batch > {{ after }})
            {%- endset -%}
        {%- elif 'validate_batch' in columns -%}
            {%- set where = 'validate_batch > ' ~ after -%}
        {%- else -%}
            {%- set where = '' -%}
        {%- endif -%}
    {%- endif -%}
    {%- if where -%}
        {{ return('(select * from ' ~ relation ~ ' where ' ~ where ~ ') dbt_subquery') }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}
