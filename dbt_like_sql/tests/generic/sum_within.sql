{#- Each row's columns add up to at most its bound column (a null counts 0): parts of a whole never exceed it. -#}
{% test sum_within(model, columns, bound) %}
select *
from {{ model }}
where {% for c in columns %}coalesce({{ c }}, 0){{ " + " if not loop.last }}{% endfor %} > {{ bound }} + 1e-9
{% endtest %}
