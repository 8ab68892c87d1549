# Reference renderer for llm's chat-template test: renders templates with
# Jinja2 the way Hugging Face's apply_chat_template does (an immutable
# sandboxed environment with trim_blocks, lstrip_blocks, loop controls and
# the {% generation %} block;
# raise_exception; a tojson that is json.dumps with ensure_ascii=False and
# the key order kept; strftime_now at a given time).
#
# stdin: a JSON list of {"template": str, "vars": {...}, "now": seconds}
# stdout: a JSON list of {"out": str} or {"error": str}, one per case.
import datetime
import json
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationBlock(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}, which apply_chat_template
    accepts (it marks the assistant's tokens); here it renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def render(case):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    now = datetime.datetime.fromtimestamp(case["now"], tz=datetime.timezone.utc)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols, GenerationBlock])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: now.strftime(fmt)
    try:
        return {"out": env.from_string(case["template"]).render(**case["vars"])}
    except Exception as e:  # the template's own errors (raise_exception) included
        return {"error": "%s: %s" % (type(e).__name__, e)}


json.dump([render(c) for c in json.load(sys.stdin)], sys.stdout, ensure_ascii=False)
