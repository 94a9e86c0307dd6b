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
{%- for x in [1] %}{{ words.get("a") }}{{ method(x) }}{% endfor %}|
{%- block inner %}{% set lang = "es" %}{{ who() }}{% endblock %}"""


@pass_context
def _who(context: Context) -> str:
    return str(context["lang"])


class _Calls:
    @pass_context
    def __call__(self, context: Context) -> str:
        return f"cls:{context['lang']}"

    @pass_context
    def method(self, context: Context, x: int) -> str:
        return f"m{x}:{context['lang']}"


def _stops() -> str:
    raise StopIteration


def _render(context_class: type[Context]) -> str:
    env = Environment(undefined=StrictUndefined, autoescape=True)
    env.context_class = context_class
    env.globals.update(
        who=_who, auto=pass_eval_context(lambda ctx: f"auto:{ctx.autoescape}"),
        env=pass_environment(lambda e: f"env:{e is env}"),
        plain=lambda a, k: f"{a}{k}", callable_class=_Calls(), stops=_stops,
        words={"a": "A"}, method=_Calls().method)
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


FILTERED = """{% macro box(e) %}[{{ error_text(e) }}|{{ _("Fits") }}]{% endmacro %}
{%- for n in [1, 2] %}{{ _("%(n)s h", n=n) }}{{ box(err) }}{{ _(word) }}{% endfor %}
{{- _("100 %%") }}{{ error_text(none) }}{{ (_("a") ~ _("b"))|upper }}"""


def test_translations_compile_as_filters_and_say_the_same() -> None:
    """``_()`` and ``error_text()`` compile as filters (CallsAsFilters): no Context.call, the
    same text as the calls give in a plain Jinja environment with the same functions."""
    from app.html import templating
    from app.html.forms import FieldError

    ours = environment()
    plain = Environment(undefined=StrictUndefined, autoescape=True,
                        extensions=["jinja2.ext.i18n"])
    plain.globals.update({name: ours.globals[name] for name in ("_", "error_text")})
    values = {"lang": "de", "err": FieldError("No such card in our catalog."), "word": "Fits"}
    compiled = ours.compile(FILTERED, raw=True)
    assert compiled.count("context.call(") == 1  # the macro's call, box(err)
    assert ours.from_string(FILTERED).render(values) == plain.from_string(FILTERED).render(values)
    assert "100 %" in ours.from_string(FILTERED).render(values)
    assert isinstance(ours, templating.SizerEnvironment)


def test_no_template_rebinds_what_the_filters_read() -> None:
    """The filters read ``lang`` from the template's context, as a call does unless a loop or
    block sets it: no template sets ``lang``, ``_`` or ``error_text`` of its own."""
    from jinja2 import nodes

    env = environment()
    for name in env.list_templates(extensions=["html"]):
        tree = env.parse(env.loader.get_source(env, name)[0])  # type: ignore[union-attr]
        stored = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
        assert not stored & {"lang", "_", "error_text"}, name


class _Html:
    def __html__(self) -> str:
        return "<b>html</b>"

    def __str__(self) -> str:
        return "<not used>"


WRITTEN = """{% macro m(x) %}<{{ x }}>{% endmacro %}{{ a }}{{ b }}{{ n }}{{ f }}{{ t }}{{ none }}
{{- h }}{{ m(a) }}{{ m(b) }}{% set s %}{{ a }}{% endset %}{{ s }}
{%- filter upper %}{{ a }}{% endfilter %}
{%- autoescape false %}{{ a }}{% endautoescape %}{{ a ~ b }}{{ [a, b]|join(",") }}"""


def test_output_is_escaped_as_jinja_escapes_it() -> None:
    """``{{ ... }}`` goes through escape_output (OutputCodeGenerator): the text Jinja's own
    escape gives for markup, text with HTML's special characters, numbers, None, booleans and
    objects with ``__html__``, in macros, set blocks, filter blocks and autoescape blocks."""
    from markupsafe import Markup

    ours = environment()
    plain = Environment(undefined=StrictUndefined, autoescape=True)
    values = {"a": "<a href='x'>&\"", "b": Markup("<i>safe</i>"), "n": 12, "f": 1.5,
              "t": True, "h": _Html()}
    assert "escape_output(" in ours.compile(WRITTEN, raw=True)
    written = ours.from_string(WRITTEN).render(values)
    assert written == plain.from_string(WRITTEN).render(values)
    assert "&lt;a href=&#39;x&#39;&gt;&amp;&#34;" in written and "<i>safe</i>" in written


@pytest.mark.parametrize("message", ["%(a)s and %(b)s", "%(n)d of %(a)s", "100 %% %(a)s",
                                     "%(a)r", "%(a)s%(n)5.1f"])
def test_a_message_with_values_is_formatted_as_markup_formats_it(message: str) -> None:
    """``_()`` with values escapes them as Markup's ``%`` does (templating._filled), for the
    messages' ``%(name)s`` and any other conversion."""
    from markupsafe import Markup

    values = {"a": "<x & 'y'>", "b": Markup("<b>ok</b>"), "n": 3}
    written = environment().from_string("{{ _(m, a=a, b=b, n=n) }}").render(
        m=message, lang="en", **values)
    assert written == Markup(message) % values
