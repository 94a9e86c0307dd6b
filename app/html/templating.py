"""One ``render()`` for every customer page: the full page, or named blocks for htmx.

docs/architecture.md rule 7: one template per page, its fragments are named blocks inside it. A
request made by htmx (``HX-Request: true``) gets only the blocks the route names; any other
request (a browser without JavaScript, a shared link, htmx restoring history) gets the whole
page. Either way the response says ``Vary: HX-Request`` so no cache mixes the two up.

Messages go through gettext with the request's locale (``{% trans %}`` and ``_()`` in
templates); the number filters format for the same locale.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from datetime import date, datetime
from decimal import Decimal
from functools import lru_cache
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any, Final

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import (
    Environment,
    FileSystemLoader,
    StrictUndefined,
    Template,
    nodes,
    pass_context,
    pass_environment,
    pass_eval_context,
    select_autoescape,
)
from jinja2.compiler import CodeGenerator, Frame
from jinja2.environment import TemplateModule
from jinja2.runtime import Context, Macro
from jinja2.utils import missing
from jinja2.visitor import NodeTransformer
from markupsafe import Markup, escape

from app.config import TEMPLATES_DIR, Settings
from app.html import i18n, serving_labels
from app.html.forms import FieldError
from app.html.htmx import is_htmx

VARY = "HX-Request, Accept-Language, Cookie"


@pass_context
def _gettext(context: Context, message: str) -> str:
    return i18n.translations(context["lang"]).gettext(message)


TRANSLATIONS_KEPT = 4096
"""How many (language, message) pairs ``_()`` keeps translated, and as many again formatted
without values: every template's messages in every language are a few thousand at most; the
bound keeps a message made of data from growing it."""


@pass_context
def _translate(context: Context, message: str, /, **variables: Any) -> str:
    """``_()`` in a template, as the i18n extension's newstyle ``_`` gives it (the message in
    the request's language, markup-safe where autoescaping is on, always %-formatted with the
    keyword values, so ``%%`` is a percent sign) in one call where the extension's alias takes
    three: a result fragment asks for about 300 messages, most of them without values, whose
    text is the same on every render (:func:`_translated_alone`)."""
    markup = bool(context.eval_ctx.autoescape)
    if variables:
        return _filled(_translated(context["lang"], message, markup), variables)
    return _translated_alone(context["lang"], message, markup)


def _filled(text: str, variables: dict[str, Any]) -> str:
    """``text % variables`` as :class:`Markup` formats it (each value escaped, the result
    markup) where ``text`` is markup, without Markup's helper object for every value looked
    up: the values escaped first, then formatted as a plain string. Every message names its
    values ``%(name)s``; another conversion (``%(n)d``, ``%(x)r``) goes Markup's own way."""
    if type(text) is not Markup or not _named_strings_only(text):
        return text % variables
    return Markup(str.__mod__(text, {key: escape(value) for key, value in variables.items()}))


_NAMED_STRINGS: Final = re.compile(r"(?:[^%]|%%|%\([^)]*\)s)*", re.DOTALL)


@lru_cache(maxsize=TRANSLATIONS_KEPT)
def _named_strings_only(text: str) -> bool:
    """Whether every conversion in ``text`` is ``%(name)s`` (or ``%%``)."""
    return _NAMED_STRINGS.fullmatch(text) is not None


@lru_cache(maxsize=TRANSLATIONS_KEPT)
def _translated(lang: str, message: str, markup: bool) -> str:
    """``message`` in ``lang`` (the catalog's, read once per process), markup-safe if asked."""
    text = i18n.translations(lang).gettext(message)
    return Markup(text) if markup else text


@lru_cache(maxsize=TRANSLATIONS_KEPT)
def _translated_alone(lang: str, message: str, markup: bool) -> str:
    """:func:`_translated` %-formatted with no values, as ``_()`` without keywords gives it."""
    return _translated(lang, message, markup) % {}


@pass_context
def _ngettext(context: Context, singular: str, plural: str, n: int) -> str:
    return i18n.translations(context["lang"]).ngettext(singular, plural, n)


@pass_context
def _gb(context: Context, value: int | float) -> str:
    return i18n.format_gb(value, context["lang"])


@pass_context
def _number(context: Context, value: int | float) -> str:
    return i18n.format_number(value, context["lang"])


@pass_context
def _eur(context: Context, value: Decimal | int | float) -> str:
    return i18n.format_eur(value, context["lang"])


@pass_context
def _amount(context: Context, value: Decimal | int | float | str) -> str:
    return i18n.format_amount(value, context["lang"])


@pass_context
def _day(context: Context, value: date) -> str:
    return i18n.format_day(value, context["lang"])


@pass_context
def _moment(context: Context, value: datetime) -> str:
    return i18n.format_moment(value, context["lang"])


NUMBERS: Final = (int, float)
"""What :func:`_error_text` formats as a number: a tuple made once, where ``int | float`` in
its ``isinstance`` made a new union object for every value."""


@pass_context
def _error_text(context: Context, error: FieldError | None) -> str:
    """A field error in the request's language, numbers formatted for it."""
    if error is None:
        return ""
    lang = context["lang"]
    message = i18n.translations(lang).gettext(error.message)
    params = {
        key: (i18n.format_gb(value, lang) if key.endswith("_bytes")
              else i18n.format_number(value, lang)) if isinstance(value, NUMBERS)
        else _error_text(context, value) if isinstance(value, FieldError) else value
        for key, value in error.params.items()
    }
    return message % params if params else message


@pass_context
def _message(context: Context, message: str, values: Mapping[str, int | float | str]) -> str:
    """A message (an English msgid) in the request's language with its values in place,
    numbers formatted the locale's way and strings as they are; the message is always
    %-formatted, so it writes a percent sign as ``%%`` like the templates' ``_()``."""
    lang = context["lang"]
    return i18n.translations(lang).gettext(message) % {
        key: value if isinstance(value, str) else i18n.format_number(value, lang)
        for key, value in values.items()
    }


_IMPORTS: ContextVar[list[tuple[Template, dict[str, Any], TemplateModule]] | None] = \
    ContextVar("template_imports", default=None)
"""The templates imported with context during one :func:`render_blocks` (None outside it)."""


class SharedImportsTemplate(Template):
    """A template whose ``{% import ... with context %}`` runs once per htmx answer.

    Jinja runs an imported template's whole body again on every import with context (a
    module of macros: 10-50 µs each), and an htmx answer's blocks each import what they use:
    a fine-tune result imports ``components/result.html`` in its result block and again in
    its verdict bar. Within one :func:`render_blocks`, an import of the same template with
    the same variables (the same context's ``get_all()``, the one dict every block of the
    answer sees) and no local names in its way gets the module made the first time: its
    body is the same text and its macros the same, as they depend on nothing else."""

    def make_module(self, vars: dict[str, Any] | None = None, shared: bool = False,
                    locals: Mapping[str, Any] | None = None) -> TemplateModule:
        kept = _IMPORTS.get()
        if (kept is None or vars is None or not shared
                or any(value is not missing for value in (locals or {}).values())):
            return super().make_module(vars, shared, locals)
        for template, seen_vars, module in kept:
            if template is self and seen_vars is vars:
                return module
        module = super().make_module(vars, shared, locals)
        kept.append((self, vars, module))
        return module


PASSES_CONTEXT = pass_context(lambda: None).jinja_pass_arg  # type: ignore[attr-defined]
PASSES_EVAL_CONTEXT = pass_eval_context(lambda: None).jinja_pass_arg  # type: ignore[attr-defined]
PASSES_ENVIRONMENT = pass_environment(lambda: None).jinja_pass_arg  # type: ignore[attr-defined]
"""What Jinja's ``pass_context``, ``pass_eval_context`` and ``pass_environment`` mark a
function with (its ``jinja_pass_arg``), read from the decorators themselves."""


DIRECT_CALLS: Final = frozenset({FunctionType, Macro, MethodType, BuiltinFunctionType})
"""The callables whose ``__call__`` never wants a context (:class:`DirectCallContext`)."""


class DirectCallContext(Context):
    """Jinja's context, calling a template's functions and macros the short way.

    Every call in a template (``_()``, ``error_text()``, a macro: about 500 in a fine-tune
    result) goes through :meth:`Context.call`, which first asks whether the callable's
    ``__call__`` wants a context (a ``hasattr`` and a bound method made for every call) and
    then the callable itself. A plain function's ``__call__``, a macro's, a bound method's
    and a built-in's (``errors.get``) never do, so for those types the first question is
    skipped; the rest is Jinja 3.1's ``call`` as it stands (the context, derived with loop
    and block variables, for ``pass_context``; the eval context or the environment for the
    other two marks). Any other callable takes Jinja's own path."""

    def call(__self, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        if type(__obj) not in DIRECT_CALLS:
            return super().call(__obj, *args, **kwargs)
        pass_arg = getattr(__obj, "jinja_pass_arg", None)
        if pass_arg is PASSES_CONTEXT:
            context: Context = __self
            if kwargs.get("_loop_vars"):
                context = context.derived(kwargs["_loop_vars"])
            if kwargs.get("_block_vars"):
                context = context.derived(kwargs["_block_vars"])
            args = (context, *args)
        elif pass_arg is PASSES_EVAL_CONTEXT:
            args = (__self.eval_ctx, *args)
        elif pass_arg is PASSES_ENVIRONMENT:
            args = (__self.environment, *args)
        kwargs.pop("_block_vars", None)
        kwargs.pop("_loop_vars", None)
        try:
            return __obj(*args, **kwargs)
        except StopIteration:
            return __self.environment.undefined(
                "value was undefined because a callable raised a StopIteration exception")


FILTER_CALLS = {"_": "translate", "error_text": "error_text"}
"""The template functions whose calls are compiled as calls of the same function as a filter
(:class:`CallsAsFilters`), by the filter's name."""


class CallsAsFilters(NodeTransformer):
    """Compile ``_(message, **values)`` and ``error_text(error)`` as the filters
    ``message|translate(**values)`` and ``error|error_text``: the same function with the same
    context and arguments, called directly by the compiled template, where a call goes through
    :meth:`Context.call` (a fine-tune result makes about 400 such calls). Only a call of
    exactly one positional argument and no ``*``/``**`` arguments is changed; no template
    names a variable ``_`` or ``error_text`` of its own."""

    def visit_Call(self, node: nodes.Call) -> nodes.Node:
        node = self.generic_visit(node)  # type: ignore[assignment]
        callee = node.node
        if (isinstance(callee, nodes.Name) and callee.name in FILTER_CALLS
                and len(node.args) == 1 and node.dyn_args is None
                and node.dyn_kwargs is None):
            return nodes.Filter(node.args[0], FILTER_CALLS[callee.name], [], node.kwargs,
                                None, None, lineno=node.lineno)
        return node


def escape_output(value: Any) -> str:
    """What a template writes for ``{{ value }}`` with autoescaping on: the text of
    :func:`markupsafe.escape`, without making a new :class:`Markup` of what is written (Jinja
    joins the pieces into one string at once): markup as it is, a whole number as its digits,
    anything else escaped."""
    kind = type(value)
    if kind is Markup:
        return value  # type: ignore[no-any-return]
    if kind is int:
        return str(value)
    return escape(value)


class OutputCodeGenerator(CodeGenerator):
    """Jinja's code generator, writing ``{{ ... }}`` through :func:`escape_output` where
    autoescaping is on for the whole template (Jinja's own ``escape`` elsewhere)."""

    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        super().visit_Template(node, frame)
        self.writeline("from app.html.templating import escape_output")

    def _output_child_pre(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        if frame.eval_ctx.volatile or not frame.eval_ctx.autoescape:
            super()._output_child_pre(node, frame, finalize)
            return
        self.write("escape_output(")
        if finalize.src is not None:
            self.write(finalize.src)


class SizerEnvironment(Environment):
    """Jinja's environment with :class:`CallsAsFilters` applied to every template parsed and
    its output written by :class:`OutputCodeGenerator`."""

    code_generator_class = OutputCodeGenerator

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        template = super()._parse(source, name, filename)
        return CallsAsFilters().visit(template)  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja environment: autoescaping on, undefined names are errors, gettext installed.

    ``auto_reload`` is off: checking every template file's mtime on every render was an eighth
    of a result fragment's server time under load; ``sizer serve --reload`` restarts instead."""
    env = SizerEnvironment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        auto_reload=False,
        autoescape=select_autoescape(["html", "svg"]),
        undefined=StrictUndefined,
        extensions=["jinja2.ext.i18n"],
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.template_class = SharedImportsTemplate
    env.context_class = DirectCallContext
    env.install_gettext_callables(  # type: ignore[attr-defined]
        _gettext, _ngettext, newstyle=True
    )
    env.globals["_"] = _translate
    env.filters["translate"] = _translate  # what a template's _() compiles to
    env.filters["gb"] = _gb
    env.filters["number"] = _number
    env.filters["eur"] = _eur
    env.filters["amount"] = _amount
    env.filters["day"] = _day
    env.filters["moment"] = _moment
    env.globals["error_text"] = _error_text
    env.filters["error_text"] = _error_text  # what a template's error_text() compiles to
    env.globals["message"] = _message
    env.globals["translated"] = _gettext  # data worded as a msgid: escaped, never %-formatted
    env.globals["serving_labels"] = serving_labels
    return env


def page_context(request: Request) -> dict[str, Any]:
    """What every page template may use: the request, its locale and the settings."""
    settings: Settings = request.app.state.settings
    return {
        "request": request,
        "lang": request.state.lang,
        "languages": [(code, i18n.LANGUAGE_NAMES.get(code, code))
                      for code in settings.supported_locales],
        "settings": settings,
    }


def render_blocks(template_name: str, blocks: Iterable[str], context: Mapping[str, Any]) -> str:
    """Only the named blocks of a page template, concatenated (an htmx answer)."""
    template = environment().get_template(template_name)
    ctx = template.new_context(dict(context))
    token = _IMPORTS.set([])
    try:
        return "".join("".join(template.blocks[name](ctx)) for name in blocks)
    finally:
        _IMPORTS.reset(token)


def render(
    request: Request,
    template_name: str,
    context: Mapping[str, Any],
    *,
    blocks: Iterable[str] = (),
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """The page, or for an htmx request the named ``blocks`` (the full page if none named)."""
    full_context = {**page_context(request), **context}
    block_names = list(blocks)
    if is_htmx(request) and block_names:
        body = render_blocks(template_name, block_names, full_context)
    else:
        body = environment().get_template(template_name).render(full_context)
    response = HTMLResponse(Markup(body), status_code=status_code, headers=dict(headers or {}))
    response.headers["Vary"] = VARY
    return response
