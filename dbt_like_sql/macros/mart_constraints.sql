{#
  A mart's rules as Delta CHECK constraints, from its YAML: a column's `not_null` constraint is
  `not_null_<column>`; a `check` constraint (a column's or the model's) keeps its name and
  expression. The accepted values in those expressions are written from pipelines/vocabulary.py
  (`python -m pipelines.vocabulary_yaml --write`). Delta checks every row of every write
  against them (a NULL result fails too, unlike a dbt test: an expression over a column that may
  be null says so), and the error names the rule:

    [DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint accepted_values_cause (...) violated by row with values: ...

  Returns {name: expression}.
#}
{% macro mart_constraints() %}
    {%- set found = {} -%}
    {%- for column in model.columns.values() -%}
        {%- for c in column.constraints -%}
            {%- if c.type == 'not_null' -%}
                {%- do found.update({'not_null_' ~ column.name: adapter.quote(column.name) ~ ' is not null'}) -%}
            {%- else -%}
                {%- do found.update({check_name(c, model.name ~ '.' ~ column.name): c.expression}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- for c in model.constraints -%}
        {%- do found.update({check_name(c, model.name): c.expression}) -%}
    {%- endfor -%}
    {{ return(found) }}
{% endmacro %}

{% macro check_name(constraint, where) %}
    {%- if constraint.type != 'check' or not constraint.name or not constraint.expression -%}
        {{ exceptions.raise_compiler_error(where ~ ': a mart rule is a not_null constraint or a check with a name '
            ~ 'and an expression (got ' ~ constraint ~ ')') }}
    {%- endif -%}
    {{ return(constraint.name) }}
{% endmacro %}

{#
  Bring an existing mart's rules to its YAML's: the build asks for it (build.plan's
  sync_constraints) when the project changed since the last build (an upgrade). A changed or dropped rule is dropped,
  a new one added: Delta checks the table's rows against it then, and refuses it, naming it,
  when a row breaks it.
#}
{% macro sync_constraints(target) %}
    {%- set wanted = mart_constraints() -%}
    {%- set prefix = 'delta.constraints.' -%}
    {%- set have = {} -%}
    {%- for row in fetch_tbl_properties(target) if row[0].startswith(prefix) -%}
        {%- do have.update({row[0][prefix | length:]: row[1]}) -%}
    {%- endfor -%}
    {%- for name, expression in have.items() if wanted.get(name) != expression -%}
        {%- call statement('drop_rule') -%}
            alter table {{ target }} drop constraint {{ name }}
        {%- endcall -%}
    {%- endfor -%}
    {%- for name, expression in wanted.items() if have.get(name) != expression -%}
        {%- call statement('add_rule') -%}
            alter table {{ target }} add constraint {{ name }} check ({{ expression }})
        {%- endcall -%}
    {%- endfor -%}
{% endmacro %}
