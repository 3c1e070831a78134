{#
  A mart the build must rebuild whole while the others stay incremental: one whose columns an
  upgrade renamed (pipelines/migrations.py finds them; pipelines/sql_build.py passes their
  names as the var `rebuild`). Otherwise dbt's own rule: the model's full_refresh config, else
  the --full-refresh flag. (Overrides dbt's should_full_refresh, which the incremental
  materialization and is_incremental() both ask.)
#}
{% macro should_full_refresh() %}
    {%- set config_full_refresh = config.get('full_refresh') -%}
    {%- if config_full_refresh is none -%}
        {%- set config_full_refresh = flags.FULL_REFRESH or this.identifier in var('rebuild', []) -%}
    {%- endif -%}
    {{ return(config_full_refresh) }}
{% endmacro %}
