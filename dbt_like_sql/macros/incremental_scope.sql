{#
  Incremental marts recompute only what new data touched. The scope of a build is the
  values of one column (a group, an arrival date) found in rows validated since the mart was
  last built: silver/events and the quarantine prune by validate_batch, so a build reads the
  new data to find its scope, not the history. Each mart row carries built_through_batch
  (built_through_batch() below), the mark the next build starts after.
#}
{% macro changed_keys(column='group_id', within='stg_lens__events') %}
    select distinct {{ column }}
    from {{ ref(within) }}
    where validate_batch > (select coalesce(max(built_through_batch), -1) from {{ this }})
{% endmacro %}

{#- A model's filter: on an incremental build, only the rows in the changed scope. -#}
{% macro only_changed(column='group_id', within='stg_lens__events') %}
    {%- if is_incremental() %}
    where {{ column }} in ({{ changed_keys(column, within) }})
    {%- endif %}
{% endmacro %}

{#
  The validation batch the gold tables (and so this build) reflect: gold's stage mark.
#}
{% macro built_through_batch() %}
    (select max(last_batch) from {{ ref('stg_lens__stage_progress') }} where stage = 'gold')
{% endmacro %}
