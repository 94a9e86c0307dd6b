"""Templates call functions and macros as Jinja does, the short way (app/html/templating.py,
DirectCallContext): the same text for every kind of callable Jinja passes something to."""

from __future__ import annotations

from typing import Any

import pytest
from jinja2 import Environment, StrictUndefined, pass_context, pass_environment, pass_eval_context
from jinja2.runtime import Context

from app.html.templating import DirectCallContext, environment

SOURCE = """{% macro box(x, y=2) %}[{{ x }}{{ y }}{{ who() }}]{% endmacro %}
{%- macro wrap(x) %}<{{ x }}{{ caller() }}>{% endmacro %}
{%- for x in [1, 2] %}{% set lang = "l" ~ x %}{{ who() }}{{ box(loop.index) }}{% endfor %}
{%- set lang = "it" %}{{ who() }}{{ box(1, y=3) }}{% call wrap(4) %}{{ who() }}{% endcall %}
{{- auto() }}{{ env() }}{{ plain("p", k="w") }}{{ callable_class() }}{{ stops() is defined }}|
{%- block inner %}{% set lang = "es" %}{{ who() }}{% endblock %}"""


@pass_context
def _who(context: Context) -> str:
    return str(context["lang"])


class _Calls:
    @pass_context
    def __call__(self, context: Context) -> str:
        return f"cls:{context['lang']}"


def _stops() -> str:
    raise StopIteration


def _render(context_class: type[Context]) -> str:
    env = Environment(undefined=StrictUndefined, autoescape=True)
    env.context_class = context_class
    env.globals.update(
        who=_who, auto=pass_eval_context(lambda ctx: f"auto:{ctx.autoescape}"),
        env=pass_environment(lambda e: f"env:{e is env}"),
        plain=lambda a, k: f"{a}{k}", callable_class=_Calls(), stops=_stops)
    return env.from_string(SOURCE).render(lang="en")


def test_functions_and_macros_get_what_jinja_passes_them() -> None:
    ours, jinjas = _render(DirectCallContext), _render(Context)
    assert ours == jinjas
    assert "l1" in ours and "l2" in ours and "it" in ours and "es" in ours and "cls:" in ours


def test_functions_and_macros_skip_jinja_s_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The templates' own functions and macros never reach Context.call; other callables do."""
    reached: list[str] = []
    jinja_call = Context.call

    def counted(self: Context, obj: Any, *args: Any, **kwargs: Any) -> Any:
        reached.append(type(obj).__name__)
        return jinja_call(self, obj, *args, **kwargs)

    monkeypatch.setattr(Context, "call", counted)
    _render(DirectCallContext)
    assert reached == ["_Calls"]
    assert environment().context_class is DirectCallContext
