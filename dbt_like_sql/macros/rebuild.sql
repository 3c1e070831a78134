{#
  The marts a build writes whole while the others write their scope: the ones that do not exist
  yet, the ones whose columns an upgrade renamed (pipelines/migrations.py), every one under
  --full-refresh. pipelines/sql_build.py decides and passes their names as the var `whole`
  (empty on an ordinary hourly build, so dbt's parse of the project is reused). Otherwise dbt's
  own rule: the model's full_refresh config, else the --full-refresh flag. (Overrides dbt's
  should_full_refresh, which the materializations and is_incremental() ask.)
#}
{% macro should_full_refresh() %}
    {%- set config_full_refresh = config.get('full_refresh') -%}
    {%- if config_full_refresh is none -%}
        {%- set config_full_refresh = flags.FULL_REFRESH or this.identifier in var('whole', []) -%}
    {%- endif -%}
    {{ return(config_full_refresh) }}
{% endmacro %}
