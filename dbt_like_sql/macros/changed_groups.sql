{#
  An incremental mart's filter: on an incremental build, only the groups with events
  validated since the mart was last built (silver/events prunes by validate_batch), so a
  build reads the new data, not the history. The mart carries built_through_batch
  (built_through_batch() below) to know where it stopped.
#}
{% macro changed_groups(column='group_id') %}
    {%- if is_incremental() %}
    where {{ column }} in (
        select distinct group_id
        from {{ ref('stg_lens__events') }}
        where validate_batch > (select coalesce(max(built_through_batch), -1) from {{ this }})
    )
    {%- endif %}
{% endmacro %}

{#
  The validation batch the gold tables (and so this build) reflect: gold's stage mark.
#}
{% macro built_through_batch() %}
    (select max(last_batch) from {{ ref('stg_lens__stage_progress') }} where stage = 'gold')
{% endmacro %}
