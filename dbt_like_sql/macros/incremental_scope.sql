{#
  Incremental marts recompute only what new data touched: the values of one column (a group,
  an arrival date) found in rows validated after the last whole SQL build. That build's mark
  (the `sql` stage mark: the gold mark it reflected) comes in as the var built_through, an
  integer the build itself wrote; -1 (a first build, --full-refresh) means everything.
  silver/events and the quarantine are laid out by validate_batch, so a literal bound lets
  Delta skip every file of the history: finding the scope reads the new data only. A whole
  build that fails leaves the mark where it was, and the next one recomputes the same
  groups again (a recompute replaces rows, so doing it twice changes nothing).
#}
{% macro changed_keys(column='group_id', within='stg_lens__events') %}
    select distinct {{ column }}
    from {{ ref(within) }}
    where validate_batch > {{ var('built_through', -1) | int }}
{% endmacro %}

{#- A model's filter: on an incremental build, only the rows in the changed scope. -#}
{% macro only_changed(column='group_id', within='stg_lens__events') %}
    {%- if is_incremental() %}
    where {{ column }} in ({{ changed_keys(column, within) }})
    {%- endif %}
{% endmacro %}

{#
  The validation batch the gold tables (and so this build) reflect: gold's stage mark. Each
  mart row carries it, to say how fresh it is.
#}
{% macro built_through_batch() %}
    (select max(last_batch) from {{ ref('stg_lens__stage_progress') }} where stage = 'gold')
{% endmacro %}
