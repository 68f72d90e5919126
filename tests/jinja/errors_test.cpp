// Unsupported constructs fail at load with the construct and line; runtime errors name the line;
// raise_exception surfaces the template's own message.
#include <gtest/gtest.h>

#include "core/error.h"
#include "test_helpers.h"
#include "tokenizer/chat_template.h"

namespace portllm::tok::jinja::testing {
namespace {

// The load error message of `src`, or "" if it loads.
std::string load_error(const std::string& src) {
  try {
    Template t(src, "tmpl");
  } catch (const portllm::Error& e) {
    return e.what();
  }
  return "";
}

std::string render_error(const std::string& src, const std::string& vars = "{}") {
  try {
    render(src, vars);
  } catch (const portllm::Error& e) {
    return e.what();
  }
  return "";
}

TEST(LoadErrors, UnsupportedTagNamesTagAndLine) {
  EXPECT_EQ(load_error("hello\n\n{% extends 'base.html' %}"), "tmpl:3: unsupported tag 'extends'");
  EXPECT_EQ(load_error("{% include 'x' %}"), "tmpl:1: unsupported tag 'include'");
  EXPECT_EQ(load_error("a\n{% block body %}{% endblock %}"), "tmpl:2: unsupported tag 'block'");
}

TEST(LoadErrors, UnknownFilterTestMethodFunction) {
  EXPECT_EQ(load_error("{{ x }}\n{{ x | frobnicate }}"), "tmpl:2: unsupported filter 'frobnicate'");
  EXPECT_EQ(load_error("\n\n{% if x is prime %}{% endif %}"), "tmpl:3: unsupported test 'prime'");
  EXPECT_EQ(load_error("{{ s.frob() }}"), "tmpl:1: unsupported method 'frob'");
  EXPECT_EQ(load_error("{{ lipsum(2) }}"), "tmpl:1: unsupported function 'lipsum'");
  EXPECT_EQ(load_error("{% for x in xs recursive %}{% endfor %}"), "tmpl:1: unsupported: recursive for loops");
  EXPECT_EQ(load_error("{{ '%s!' % name }}"), "tmpl:1: unsupported: printf-style '%' string formatting");
  EXPECT_EQ(load_error("{{ x | format(1) }}"), "tmpl:1: unsupported filter 'format'");
}

TEST(LoadErrors, MacrosAndBoundNamesAreCallable) {
  EXPECT_EQ(load_error("{% macro m() %}{{ caller() }}{% endmacro %}{{ m() }}{{ range(2) }}"), "");
}

TEST(LoadErrors, SyntaxErrors) {
  EXPECT_EQ(load_error("{% if x %}\nunclosed"), "tmpl:1: block opened here is not closed (expected 'elif' or 'else' or 'endif' before end of template)");
  EXPECT_EQ(load_error("x\n{% endfor %}"), "tmpl:2: unexpected 'endfor' (no open block it closes)");
  EXPECT_EQ(load_error("{% break %}"), "tmpl:1: 'break' outside of a for loop");
  EXPECT_EQ(load_error("{{ 'abc }}"), "tmpl:1: unterminated string literal");
  EXPECT_EQ(load_error("{{ 1 + }}"), "tmpl:1: unexpected end of expression '}}' in expression");
  EXPECT_EQ(load_error("{# open comment"), "tmpl:1: unterminated comment");
}

TEST(LoadErrors, ChatTemplateFailsAtConstruction) {
  EXPECT_THROW(ChatTemplate::from_string("{% import 'x' as y %}", "", "", "t"), portllm::Error);
}

TEST(RuntimeErrors, NameTheLine) {
  EXPECT_EQ(render_error("ok\n{{ 'a' + 1 }}"), "test:2: unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_EQ(render_error("{{ 1 // 0 }}"), "test:1: division by zero");
  EXPECT_EQ(render_error("{% for x in none %}{% endfor %}"), "test:1: 'NoneType' object is not iterable");
  EXPECT_EQ(render_error("{% set x = 1 %}{% set x.y = 2 %}"), "test:1: cannot assign attribute 'y' on 'x': not a namespace()");
}

TEST(RuntimeErrors, LimitsInsteadOfCrashes) {
  // Python would print a big int; 64-bit overflow is reported instead of wrapping.
  EXPECT_EQ(render_error("{{ 2 ** 64 }}"), "test:1: integer overflow (result exceeds 64 bits)");
  EXPECT_EQ(render("{{ 2 ** 62 }}"), "4611686018427387904");
  EXPECT_EQ(render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
            "test:1: macro 'f': maximum recursion depth exceeded");
  // Nesting past the parser's bound is refused at load (tests/robustness nests 50,000 deep).
  const std::string deep = std::string(200, '(') + "1" + std::string(200, ')');
  EXPECT_EQ(load_error("{{ " + deep + " }}"), "tmpl:1: expressions and blocks nest deeper than 1024 levels");
  EXPECT_EQ(load_error("{{ " + std::string(20, '(') + "1" + std::string(20, ')') + " }}"), "");
}

TEST(RuntimeErrors, ContainersThatHoldThemselves) {
  // Printed as Python prints them: the container met again inside itself is elided.
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns }}"), "<Namespace {'a': <Namespace {...}>}>");
  EXPECT_EQ(render("{% set l = [1] %}{{ l.append(l) or '' }}{{ l }}"), "[1, [...]]");
  EXPECT_EQ(render("{% set d = {} %}{{ d.update({'k': d}) or '' }}{{ d }}"), "{'k': {...}}");
  // json.dumps refuses them; comparisons stop where Python's RecursionError would.
  EXPECT_EQ(render_error("{% set l = [1] %}{{ l.append(l) or '' }}{{ l | tojson }}"), "test:1: Circular reference detected");
  EXPECT_EQ(render_error("{% set a = [1] %}{% set b = [1] %}{{ a.append(a) or '' }}{{ b.append(b) or '' }}{{ a == b }}"),
            "test:1: maximum recursion depth exceeded in comparison");
}

TEST(RuntimeErrors, RaiseExceptionCarriesTemplateMessage) {
  EXPECT_EQ(render_error("{% if messages | length == 0 %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}",
                         R"({"messages": []})"),
            "Conversation roles must alternate user/assistant/user/assistant/...");
  auto ct = ChatTemplate::from_string(
      "{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}"
      "{{ raise_exception('Unknown role: ' + m.role) }}{% endif %}{% endfor %}",
      "", "", "t");
  try {
    ct.render(nlohmann::ordered_json::parse(R"([{"role": "robot", "content": "x"}])"), nlohmann::ordered_json::object());
    FAIL() << "expected an exception";
  } catch (const portllm::Error& e) {
    EXPECT_STREQ(e.what(), "Unknown role: robot");
  }
}

}  // namespace
}  // namespace portllm::tok::jinja::testing
