// Expressions, values and Python semantics: operators, printing, undefined, methods, slicing.
#include <gtest/gtest.h>

#include "test_helpers.h"

namespace portllm::tok::jinja::testing {
namespace {

const Case kCases[] = {
    {"print_scalars", R"J({{ none }}|{{ true }}|{{ false }}|{{ 1 }}|{{ 1.0 }}|{{ 2.5e-5 }}|{{ 1e20 }}|{{ 0.1 + 0.2 }}|{{ -0.0 }})J", R"V({})V", R"E(None|True|False|1|1.0|2.5e-05|1e+20|0.30000000000000004|-0.0)E"},
    {"print_containers", R"J({{ [1, 'a', none, true, 1.5] }}|{{ {'k': "it's", 'n': {'x': []}} }})J", R"V({})V", R"E([1, 'a', None, True, 1.5]|{'k': "it's", 'n': {'x': []}})E"},
    {"json_values_print", R"J({{ v }}|{{ v.a }}|{{ v.b }}|{{ v.c }}|{{ v.d }})J", R"V({"v": {"a": 3, "b": 3.0, "c": null, "d": false}})V", R"E({'a': 3, 'b': 3.0, 'c': None, 'd': False}|3|3.0|None|False)E"},
    {"undefined", R"J([{{ missing }}][{{ obj.nope }}][{{ obj['nope'] }}][{{ lst[10] }}]{{ missing is defined }}{{ missing is undefined }}{{ obj.a is defined }})J", R"V({"obj": {"a": 1}, "lst": [1]})V", R"E([][][][]FalseTrueTrue)E"},
    {"undefined_iterates_empty", R"J({% for x in missing %}x{% else %}none{% endfor %}{{ missing | length }}{{ missing | default('d') }})J", R"V({})V", R"E(none0d)E"},
    {"arithmetic", R"J({{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1 + 2.0 }} {{ 7.5 // 2 }} {{ 3 * 'ab' }} {{ [0] * 3 }})J", R"V({})V", R"E(3 -4 1 2 3.5 2.0 1024 0.5 3.0 3.0 ababab [0, 0, 0])E"},
    {"precedence", R"J({{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 'a' ~ 2 * 3 }} {{ not 1 == 2 }})J", R"V({})V", R"E(7 9 64 4 a6 True)E"},
    {"concat_tilde", R"J({{ 'a' ~ 1 ~ none ~ true ~ missing ~ [1] }})J", R"V({})V", R"E(a1NoneTrue[1])E"},
    {"comparisons", R"J({{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'abc' < 'abd' }} {{ 1 == 1.0 }} {{ true == 1 }} {{ [1, 2] == [1, 2] }} {{ none == none }} {{ 'a' != 'b' }} {{ 2 >= 2 }})J", R"V({})V", R"E(True False True True True True True True True)E"},
    {"in_not_in", R"J({{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'x' not in 'abc' }} {{ 3 not in [3] }})J", R"V({})V", R"E(True True True True False)E"},
    {"and_or_values", R"J({{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }}| {{ none or [] }} {{ not [] }})J", R"V({})V", R"E(x b | [] True)E"},
    {"truthiness", R"J({% for v in [0, 1, '', 'a', [], [0], {}, none, 0.0] %}{{ 'T' if v else 'F' }}{% endfor %})J", R"V({})V", R"E(FTFTFTFFF)E"},
    {"ternary", R"J({{ 'y' if true else 'n' }}{{ 'y' if false else 'n' }}[{{ 'y' if false }}]{{ 'a' if false else 'b' if true else 'c' }})J", R"V({})V", R"E(yn[]b)E"},
    {"is_not", R"J({{ x is not none }} {{ y is not none }} {{ x is not defined }} {{ not x is none }})J", R"V({"x": 1, "y": null})V", R"E(True False False True)E"},
    {"subscript_and_attr", R"J({{ m[0].role }} {{ m[-1]['content'] }} {{ m.0.role }} {{ d['a-b'] }})J", R"V({"m": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "yo"}], "d": {"a-b": 5}})V", R"E(user yo user 5)E"},
    {"slicing", R"J({{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[5:] }} {{ 'héllo'[1:3] }} {{ '日本語'[::-1] }} {{ 'abc'[-1] }})J", R"V({"l": [1, 2, 3, 4]})V", R"E([2, 3, 4] [1, 2, 3] [4, 3, 2, 1] [1, 3] [3, 4] [] él 語本日 c)E"},
    {"list_and_dict_literals", R"J({% set d = {'a': 1, 'b': [1, 2,], } %}{{ d.b[1] }}{{ (1, 2)[0] }}{{ [] | length }}{{ () | length }})J", R"V({})V", R"E(2100)E"},
    {"str_methods", R"J({{ s.startswith('He') }} {{ s.endswith(('x', 'd')) }} {{ s.upper() }} {{ s.lower() }} {{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 1) }} {{ s.find('o') }} {{ s.find('z') }} {{ s.count('l') }} {{ 'a b'.title() }})J", R"V({"s": "Hello World"})V", R"E(True True HELLO WORLD hello world HeLLo WorLd HeLlo World 4 -1 3 A B)E"},
    {"str_split_strip", R"J({{ '  a  b '.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} [{{ '  x  '.strip() }}] [{{ '\n\nx\n'.lstrip('\n') }}] [{{ 'xyyx'.rstrip('x') }}] [{{ 'xyyx'.strip('x') }}])J", R"V({})V", R"E(['a', 'b'] ['a', 'b', '', 'c'] ['a', 'b,c'] ['a,b', 'c'] [x] [x
] [xyy] [yy])E"},
    {"qwen_think_split", R"J({% set c = m.split('</think>')[-1].lstrip('\n') %}{% set r = m.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}[{{ r }}][{{ c }}])J", R"V({"m": "<think>\nreasoning here\n</think>\n\nThe answer."})V", R"E([reasoning here][The answer.])E"},
    {"str_format_join", R"J({{ '{} + {} = {}'.format(1, 2, 3) }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{x}!'.format(x='hi') }} {{ ', '.join(['a', 'b']) }})J", R"V({})V", R"E(1 + 2 = 3 aba hi! a, b)E"},
    {"dict_methods", R"J({% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %} {{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'def') }})J", R"V({"d": {"b": 2, "a": 1}})V", R"E(b2a1 ['b', 'a'] [2, 1] 1 None def)E"},
    {"unicode_length_and_case", R"J({{ 'héllo' | length }} {{ 'ÄÖÜ' | lower }} {{ 'éa' | upper }} {{ '你好' | length }})J", R"V({})V", R"E(5 äöü ÉA 2)E"},
    {"global_functions", R"J({{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }} {{ dict(a=1, b=2) }} {{ namespace(x=1).x }})J", R"V({})V", R"E([0, 1, 2] [1, 3, 5] [3, 2, 1] {'a': 1, 'b': 2} 1)E"},
};

class Expressions : public ::testing::TestWithParam<Case> {};

TEST_P(Expressions, RendersLikeJinja2) {
  const Case& c = GetParam();
  EXPECT_EQ(render(c.tmpl, c.vars), c.expected) << "template: " << c.tmpl;
}

// Deliberate extensions over HF's environment (which raises for these); expectations follow
// Python semantics. Templates that render in HF render identically here.
TEST(ExpressionsExtension, AttributeOfUndefinedIsUndefined) {
  EXPECT_EQ(render("[{{ missing.attr }}][{{ missing.a.b }}]{{ missing.attr is defined }}"), "[][]False");
}

TEST(ExpressionsExtension, ListMutation) {
  EXPECT_EQ(render("{% set l = [1] %}{% set _ = l.append(2) %}{% set _ = l.extend([3, 4]) %}{% set p = l.pop() %}"
                   "{{ l }} {{ p }} {{ l.pop(0) }} {{ l }}"),
            "[1, 2, 3] 4 1 [2, 3]");
}

INSTANTIATE_TEST_SUITE_P(Jinja, Expressions, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace portllm::tok::jinja::testing
