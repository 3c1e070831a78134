{#
  The point figure a dashboard sums, by the rule of pipelines/measures.py (point_figure, its
  Python twin): the figure where it is known (exact), else its lower bound. Gold stores each
  handoff's figures by that rule already; the staging models apply it once more with 0 as the
  lower bound of a figure gold does not know yet (a pause or duplicates surely were at least
  0), so a sum counts it 0. The one place the SQL writes the rule out.
#}
{% macro point_figure(exact, lower) -%}
    coalesce({{ exact }}, {{ lower }})
{%- endmacro %}
