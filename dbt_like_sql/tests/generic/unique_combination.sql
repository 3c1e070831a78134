{#- A model's grain holds: no two rows share these columns (dbt_utils has one; the hub is not reachable here). -#}
{% test unique_combination(model, columns) %}
select {{ columns | join(', ') }}, count(*) as copies
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1
{% endtest %}
