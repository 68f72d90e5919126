// Builtin filters and tests, with HF's tojson (json.dumps, ensure_ascii=False).
#include <gtest/gtest.h>

#include "test_helpers.h"

namespace portllm::tok::jinja::testing {
namespace {

const Case kCases[] = {
    {"trim", R"J([{{ '  a b \n' | trim }}][{{ 'xxaxx' | trim('x') }}])J", R"V({})V", R"E([a b][a])E"},
    {"length_count", R"J({{ [1, 2] | length }} {{ 'abc' | count }} {{ {'a': 1} | length }})J", R"V({})V", R"E(2 3 1)E"},
    {"tojson_order_and_unicode", R"J({{ v | tojson }})J", R"V({"v": {"z": 1, "a": "é\"\n\\", "list": [1, 2.5, null, true], "empty": {}, "e2": []}})V", R"E({"z": 1, "a": "é\"\n\\", "list": [1, 2.5, null, true], "empty": {}, "e2": []})E"},
    {"tojson_indent", R"J({{ v | tojson(indent=2) }})J", R"V({"v": {"a": [1, {"b": null}], "c": {}}})V", "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": {}\n}"},
    {"tojson_options", R"J({{ v | tojson(ensure_ascii=true) }} {{ v | tojson(sort_keys=true) }} {{ v | tojson(separators=(',', ':')) }})J", R"V({"v": {"b": "日", "a": 1}})V", R"E({"b": "\u65e5", "a": 1} {"a": 1, "b": "日"} {"b":"日","a":1})E"},
    {"tojson_scalars", R"J({{ 'x<y>&' | tojson }} {{ 3 | tojson }} {{ 1.0 | tojson }} {{ none | tojson }} {{ '\t\x01' | tojson }})J", R"V({})V", R"E("x<y>&" 3 1.0 null "\t\u0001")E"},
    {"items_filter", R"J({% for k, v in d | items %}{{ k }}{{ v }}{% endfor %})J", R"V({"d": {"x": 1, "y": 2}})V", R"E(x1y2)E"},
    {"selectattr_rejectattr", R"J({{ m | selectattr('role', 'equalto', 'user') | map(attribute='c') | join(',') }} {{ m | rejectattr('role', '==', 'user') | map(attribute='c') | list }} {{ m | selectattr('x') | list | length }})J", R"V({"m": [{"role": "user", "c": "a"}, {"role": "bot", "c": "b", "x": 1}, {"role": "user", "c": "c"}]})V", R"E(a,c ['b'] 1)E"},
    {"select_reject", R"J({{ range(6) | select('odd') | list }} {{ range(6) | reject('divisibleby', 3) | list }} {{ [0, 1, '', 'a'] | select | list }})J", R"V({})V", R"E([1, 3, 5] [1, 2, 4, 5] [1, 'a'])E"},
    {"map", R"J({{ ['a', 'b'] | map('upper') | join }} {{ l | map(attribute='f.n') | list }} {{ l | map(attribute='z', default='-') | list }})J", R"V({"l": [{"f": {"n": 1}}, {"f": {"n": 2}}]})V", R"E(AB [1, 2] ['-', '-'])E"},
    {"join", R"J({{ [1, 2, 3] | join('-') }} {{ l | join(', ', attribute='n') }})J", R"V({"l": [{"n": "x"}, {"n": "y"}]})V", R"E(1-2-3 x, y)E"},
    {"default", R"J({{ missing | default('d') }} {{ none | default('d') }} {{ '' | default('d', true) }} {{ 0 | d('z', boolean=true) }} {{ 'v' | d('z') }})J", R"V({})V", R"E(d None d z v)E"},
    {"string_case", R"J({{ 5 | string ~ 'x' }} {{ 'AbC' | lower }} {{ 'AbC' | upper }} {{ 'hello wORLD-foo(bar' | title }} {{ 'hELLO world' | capitalize }})J", R"V({})V", R"E(5x abc ABC Hello World-Foo(Bar Hello world)E"},
    {"first_last", R"J({{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | first }} {{ 'abc' | last }} [{{ [] | first }}])J", R"V({})V", R"E(1 3 a c [])E"},
    {"replace", R"J({{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }})J", R"V({})V", R"E(bbb bba)E"},
    {"indent", R"J([{{ 'a\nb\n\nc' | indent(2) }}][{{ 'a\nb' | indent(2, true) }}][{{ 'a\n\nb' | indent(2, blank=true) }}][{{ 'x\n' | indent }}])J", R"V({})V", "[a\n  b\n\n  c][  a\n  b][a\n  \n  b][x\n]"},
    {"list_unique_reverse", R"J({{ 'ab' | list }} {{ [3, 1, 3, 'A', 'a'] | unique | list }} {{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }})J", R"V({})V", R"E(['a', 'b'] [3, 1, 'A'] [3, 2, 1] cba)E"},
    {"sort", R"J({{ [3, 1, 2] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} {{ l | sort(attribute='n') | map(attribute='n') | list }})J", R"V({"l": [{"n": 2}, {"n": 1}]})V", R"E([1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] ['A', 'b', 'c'] [1, 2])E"},
    {"dictsort", R"J({{ d | dictsort }} {{ d | dictsort(by='value') }} {{ d | dictsort(reverse=true) }})J", R"V({"d": {"b": 1, "a": 3, "c": 2}})V", R"E([('a', 3), ('b', 1), ('c', 2)] [('b', 1), ('c', 2), ('a', 3)] [('c', 2), ('b', 1), ('a', 3)])E"},
    {"numbers", R"J({{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 2 | float }} {{ -3 | abs }} {{ -2.5 | abs }} {{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ 2.1 | round(method='ceil') }} {{ 7 | round }})J", R"V({})V", R"E(42 4 0 7 3 2.5 2.0 3 2.5 2.0 3.14 3.0 7)E"},
    {"batch_center_wordcount", R"J({{ range(5) | batch(2) | list }} {{ range(3) | batch(2, 'x') | list }} [{{ 'ab' | center(6) }}] {{ 'hello big-world, ok' | wordcount }})J", R"V({})V", R"E([[0, 1], [2, 3], [4]] [[0, 1], [2, 'x']] [  ab  ] 4)E"},
    {"safe_escape", R"J({{ '<a href="x">&\'' | e }} {{ '<b>' | safe }} {{ '<i>' | escape }})J", R"V({})V", R"E(&lt;a href=&#34;x&#34;&gt;&amp;&#39; <b> &lt;i&gt;)E"},
    {"min_max_sum", R"J({{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ [1, 2, 3] | sum }} {{ l | sum(attribute='n') }})J", R"V({"l": [{"n": 1.5}, {"n": 2}]})V", R"E(1 3 6 3.5)E"},
    {"type_tests", R"J({% for v in [none, true, 1, 1.5, 'a', [1], {'a': 1}] %}{{ v is none }}{{ v is boolean }}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is string }}{{ v is mapping }}{{ v is iterable }}{{ v is sequence }}|{% endfor %})J", R"V({})V", R"E(TrueFalseFalseFalseFalseFalseFalseFalseFalse|FalseTrueTrueFalseFalseFalseFalseFalseFalse|FalseFalseTrueTrueFalseFalseFalseFalseFalse|FalseFalseTrueFalseTrueFalseFalseFalseFalse|FalseFalseFalseFalseFalseTrueFalseTrueTrue|FalseFalseFalseFalseFalseFalseFalseTrueTrue|FalseFalseFalseFalseFalseFalseTrueTrueTrue|)E"},
    {"value_tests", R"J({{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'a' is in ['a'] }} {{ 2 is equalto 2 }} {{ 2 is eq(3) }} {{ none is sameas none }} {{ range is callable }} {{ 'x' is callable }})J", R"V({})V", R"E(True False True False True True True False True True True True False True True False)E"},
    {"enable_thinking_false_test", R"J({% if enable_thinking is defined and enable_thinking is false %}no-think{% endif %})J", R"V({"enable_thinking": false})V", R"E(no-think)E"},
};

class Filters : public ::testing::TestWithParam<Case> {};

TEST_P(Filters, RendersLikeJinja2) {
  const Case& c = GetParam();
  EXPECT_EQ(render(c.tmpl, c.vars), c.expected) << "template: " << c.tmpl;
}

INSTANTIATE_TEST_SUITE_P(Jinja, Filters, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace portllm::tok::jinja::testing
