{#
  The marts a build writes whole while the others write their scope: the ones that do not exist
  yet, the ones whose columns an upgrade renamed (pipelines/migrations.py), every one under
  --full-refresh. pipelines/sql_build.py decides and registers their names as the source
  build.whole (data, not a var: dbt's parse of the project is reused from build to build).
  Otherwise dbt's own rule: the model's full_refresh config, else the --full-refresh flag.
  (Overrides dbt's should_full_refresh, which the materializations and is_incremental() ask.)
#}
{% macro should_full_refresh() %}
    {%- set config_full_refresh = config.get('full_refresh') -%}
    {%- if config_full_refresh is none -%}
        {%- set config_full_refresh = flags.FULL_REFRESH or this.identifier in whole_marts() -%}
    {%- endif -%}
    {{ return(config_full_refresh) }}
{% endmacro %}

{#- The marts this build writes (and tests) whole: the source build.whole, a local table (no Spark job). -#}
{% macro whole_marts() %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {{ return(run_query('select name from ' ~ build_relation('whole')).columns[0].values() | list) }}
{% endmacro %}

{#- The relation of the source build.<name> (what pipelines/sql_build.py registers), at execution. -#}
{% macro build_relation(name) %}
    {{ return(graph.sources['source.' ~ project_name ~ '.build.' ~ name].relation_name) }}
{% endmacro %}
