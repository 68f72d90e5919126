# Regenerates cases.json: renders chat_template.jinja with jinja2 (3.1.x) configured exactly as
# transformers' apply_chat_template configures it (ImmutableSandboxedEnvironment, trim_blocks,
# lstrip_blocks, loopcontrols, tojson = json.dumps(ensure_ascii=False), raise_exception).
# Usage: python3 generate_cases.py > cases.json
import json, os
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols
from jinja2.exceptions import TemplateError

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

def raise_exception(message):
    raise TemplateError(message)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
here = os.path.dirname(os.path.abspath(__file__))
template = env.from_string(open(os.path.join(here, "chat_template.jinja")).read())

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get weather — 天气",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
                         "required": ["city"]}}}]
U = lambda c: {"role": "user", "content": c}
A = lambda c: {"role": "assistant", "content": c}
CALL = {"role": "assistant", "content": "Let me check.", "tool_calls": [
    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2, "opts": {"units": ["C", None, 1.5]}}}},
    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}]}
CASES = [
    ([U("Hello!")], {"add_generation_prompt": True}),
    ([{"role": "system", "content": "  Be brief.  "}, U("2+2?"), A("4"), U("And 3+3?")], {"add_generation_prompt": True}),
    ([U("Hi")], {"add_generation_prompt": True, "force_thinking": True}),
    ([U("q"), A("<think>\nstep 1\n</think>\n\nanswer"), U("q2"), {"role": "assistant", "content": "a2", "reasoning_content": " r2 "}], {}),
    ([U("q"), A("<think>\nold\n</think>\n\nold answer"), U("q2")], {"add_generation_prompt": True, "preserve_thinking": True}),
    ([{"role": "system", "content": "sys"}, U("Weather in Paris?")], {"add_generation_prompt": True, "tools": TOOLS}),
    ([U("Weather?"), CALL, {"role": "tool", "content": "{\"temp\": 21}"}, {"role": "tool", "content": "sunny"}, A("21 and sunny."), U("thanks")],
     {"add_generation_prompt": True, "tools": TOOLS}),
    ([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is this?"}, {"type": "video"}]}],
     {"add_generation_prompt": True, "add_vision_id": True}),
    ([], {"add_generation_prompt": True}),
    ([{"role": "system", "content": "only a system message"}], {"add_generation_prompt": True}),
    ([U("a"), {"role": "system", "content": "late system"}], {}),
    ([{"role": "user", "content": [{"type": "audio"}]}], {}),
]
out = []
for messages, kwargs in CASES:
    case = {"messages": messages, "kwargs": kwargs}
    variables = {"messages": messages, "tools": None, "documents": None, "add_generation_prompt": False}
    variables.update(kwargs)
    try:
        case["rendered"] = template.render(**variables)
    except TemplateError as e:
        case["error"] = str(e)
    out.append(case)
print(json.dumps({"source": "chat_template.jinja", "renderer": "jinja2 " + __import__("jinja2").__version__, "chat": out},
                 ensure_ascii=False, indent=1))
