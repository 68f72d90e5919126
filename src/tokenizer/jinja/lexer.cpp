#include "tokenizer/jinja/lexer.h"

#include <cctype>
#include <cstring>

#include "core/error.h"
#include "tokenizer/jinja/utf8.h"

namespace portllm::tok::jinja {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// jinja2 normalizes every newline sequence to \n and drops one trailing newline.
std::string normalize(const std::string& src) {
  std::string out;
  out.reserve(src.size());
  for (size_t k = 0; k < src.size(); ++k) {
    if (src[k] == '\r') {
      out += '\n';
      if (k + 1 < src.size() && src[k + 1] == '\n') ++k;
    } else {
      out += src[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(const std::string& src, const std::string& name, const LexOptions& opt)
      : s_(normalize(src)), name_(name), opt_(opt) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) {
      size_t start = find_tag(pos_);
      std::string text = s_.substr(pos_, start - pos_);
      int text_line = line_;
      bool text_at_line_start = pos_ == 0 || s_[pos_ - 1] == '\n';
      if (start == s_.size()) {
        emit_text(std::move(text), text_line);
        advance_to(start);
        break;
      }
      char kind = s_[start + 1];  // '{', '%' or '#'
      char mod = start + 2 < s_.size() ? s_[start + 2] : 0;
      if (mod == '-') {
        while (!text.empty() && is_ws(text.back())) text.pop_back();
      } else if (kind != '{' && mod != '+' && opt_.lstrip_blocks) {
        // Strip spaces/tabs between the line start and a block or comment tag.
        size_t l = text.rfind('\n');
        size_t lpos = l == std::string::npos ? 0 : l + 1;
        if (lpos > 0 || text_at_line_start) {
          bool only_ws = true;
          for (size_t k = lpos; k < text.size(); ++k)
            if (text[k] != ' ' && text[k] != '\t') only_ws = false;
          if (only_ws) text.resize(lpos);
        }
      }
      emit_text(std::move(text), text_line);
      advance_to(start + 2 + ((mod == '-' || mod == '+') ? 1 : 0));
      if (kind == '#') {
        lex_comment();
      } else if (kind == '{') {
        out_.push_back({Token::Type::VarBegin, "{{", line_});
        lex_expr("}}", Token::Type::VarEnd);
      } else {
        lex_block();
      }
    }
    out_.push_back({Token::Type::Eof, "", line_});
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& msg) { PL_THROW("{}:{}: {}", name_, line_, msg); }

  size_t find_tag(size_t from) const {
    for (size_t k = from; k + 1 < s_.size(); ++k) {
      if (s_[k] == '{' && (s_[k + 1] == '{' || s_[k + 1] == '%' || s_[k + 1] == '#')) return k;
    }
    return s_.size();
  }

  void advance_to(size_t p) {
    for (size_t k = pos_; k < p && k < s_.size(); ++k)
      if (s_[k] == '\n') ++line_;
    pos_ = p;
  }

  void emit_text(std::string text, int line) {
    if (!text.empty()) out_.push_back({Token::Type::Text, std::move(text), line});
  }

  // After a tag's closing delimiter: `-` eats all following whitespace; trim_blocks eats one \n.
  void after_tag_end(bool minus, bool plus, bool block_like) {
    if (minus) {
      size_t p = pos_;
      while (p < s_.size() && is_ws(s_[p])) ++p;
      advance_to(p);
    } else if (block_like && !plus && opt_.trim_blocks && pos_ < s_.size() && s_[pos_] == '\n') {
      advance_to(pos_ + 1);
    }
  }

  void lex_comment() {
    size_t end = s_.find("#}", pos_);
    if (end == std::string::npos) fail("unterminated comment");
    bool minus = end > pos_ && s_[end - 1] == '-';
    bool plus = end > pos_ && s_[end - 1] == '+';
    advance_to(end + 2);
    after_tag_end(minus, plus, true);
  }

  void lex_block() {
    if (at_raw_tag()) return;
    out_.push_back({Token::Type::BlockBegin, "{%", line_});
    lex_expr("%}", Token::Type::BlockEnd);
  }

  // `{% raw %}`: everything up to endraw is text. jinja2 does not apply trim_blocks to the raw
  // opening tag (only `-%}` strips after it).
  bool at_raw_tag() {
    size_t p = pos_;
    while (p < s_.size() && is_ws(s_[p])) ++p;
    if (s_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < s_.size() && is_ws(s_[p])) ++p;
    bool minus = p < s_.size() && s_[p] == '-';
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
    if (s_.compare(p, 2, "%}") != 0) return false;
    int raw_line = line_;
    advance_to(p + 2);
    if (minus) after_tag_end(true, false, true);
    lex_raw_body(raw_line);
    return true;
  }

  void lex_raw_body(int raw_line) {
    size_t p = pos_;
    while (true) {
      size_t t = s_.find("{%", p);
      if (t == std::string::npos) PL_THROW("{}:{}: 'raw' block is not closed by 'endraw'", name_, raw_line);
      size_t q = t + 2;
      bool minus = q < s_.size() && s_[q] == '-';
      if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ++q;
      while (q < s_.size() && is_ws(s_[q])) ++q;
      if (s_.compare(q, 6, "endraw") != 0) { p = t + 2; continue; }
      q += 6;
      while (q < s_.size() && is_ws(s_[q])) ++q;
      bool end_minus = q < s_.size() && s_[q] == '-';
      bool end_plus = q < s_.size() && s_[q] == '+';
      if (end_minus || end_plus) ++q;
      if (s_.compare(q, 2, "%}") != 0) { p = t + 2; continue; }
      std::string text = s_.substr(pos_, t - pos_);
      if (minus) {
        while (!text.empty() && is_ws(text.back())) text.pop_back();
      } else if (opt_.lstrip_blocks) {
        size_t l = text.rfind('\n');
        if (l != std::string::npos) {
          bool only_ws = true;
          for (size_t k = l + 1; k < text.size(); ++k)
            if (text[k] != ' ' && text[k] != '\t') only_ws = false;
          if (only_ws) text.resize(l + 1);
        }
      }
      emit_text(std::move(text), line_);
      advance_to(q + 2);
      after_tag_end(end_minus, end_plus, true);
      return;
    }
  }

  // Tokens inside {{ }} / {% %} until `end` at bracket depth 0.
  void lex_expr(const char* end, Token::Type end_type) {
    int depth = 0;
    while (true) {
      while (pos_ < s_.size() && is_ws(s_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= s_.size()) fail(std::string("unexpected end of template, expected '") + end + "'");
      if (depth == 0) {
        bool minus = s_[pos_] == '-' && s_.compare(pos_ + 1, 2, end) == 0;
        bool plus = s_[pos_] == '+' && s_.compare(pos_ + 1, 2, end) == 0;
        if (minus || plus || s_.compare(pos_, 2, end) == 0) {
          out_.push_back({end_type, end, line_});
          advance_to(pos_ + 2 + ((minus || plus) ? 1 : 0));
          after_tag_end(minus, plus, end_type == Token::Type::BlockEnd);
          return;
        }
      }
      char c = s_[pos_];
      if (is_name_start(c)) {
        size_t p = pos_;
        while (p < s_.size() && (is_name_start(s_[p]) || is_digit(s_[p]))) ++p;
        out_.push_back({Token::Type::Name, s_.substr(pos_, p - pos_), line_});
        advance_to(p);
      } else if (is_digit(c)) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        static const char* const ops2[] = {"//", "**", "==", "!=", ">=", "<="};
        std::string op;
        for (const char* o : ops2)
          if (s_.compare(pos_, 2, o) == 0) op = o;
        if (op.empty()) {
          if (!std::strchr("+-*/%~<>=()[]{},.:|", c)) fail(std::string("unexpected character '") + c + "'");
          op = std::string(1, c);
          if (c == '(' || c == '[' || c == '{') ++depth;
          if (c == ')' || c == ']' || c == '}') {
            if (depth == 0) fail(std::string("unexpected '") + c + "'");
            --depth;
          }
        }
        out_.push_back({Token::Type::Op, op, line_});
        advance_to(pos_ + op.size());
      }
    }
  }

  void lex_number() {
    size_t p = pos_;
    auto digits = [&] {
      while (p < s_.size() && (is_digit(s_[p]) || s_[p] == '_')) ++p;
    };
    digits();
    bool is_float = false;
    if (p + 1 < s_.size() && s_[p] == '.' && is_digit(s_[p + 1])) {
      is_float = true;
      ++p;
      digits();
    }
    if (p < s_.size() && (s_[p] == 'e' || s_[p] == 'E')) {
      size_t q = p + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && is_digit(s_[q])) {
        is_float = true;
        p = q;
        digits();
      }
    }
    std::string text;
    for (size_t k = pos_; k < p; ++k)
      if (s_[k] != '_') text += s_[k];
    out_.push_back({is_float ? Token::Type::Float : Token::Type::Int, text, line_});
    advance_to(p);
  }

  void lex_string(char q) {
    int start_line = line_;
    size_t p = pos_ + 1;
    std::string v;
    auto hexval = [&](size_t at, size_t n) -> long {
      if (at + n > s_.size()) fail("truncated escape in string literal");
      for (size_t k = at; k < at + n; ++k)
        if (!std::isxdigit(static_cast<unsigned char>(s_[k]))) fail("invalid escape in string literal");
      return std::stol(s_.substr(at, n), nullptr, 16);
    };
    while (true) {
      if (p >= s_.size()) PL_THROW("{}:{}: unterminated string literal", name_, start_line);
      char c = s_[p];
      if (c == q) break;
      if (c != '\\') { v += c; ++p; continue; }
      char e = p + 1 < s_.size() ? s_[p + 1] : 0;
      p += 2;
      switch (e) {
        case 'n': v += '\n'; break;
        case 't': v += '\t'; break;
        case 'r': v += '\r'; break;
        case 'b': v += '\b'; break;
        case 'f': v += '\f'; break;
        case 'v': v += '\v'; break;
        case 'a': v += '\a'; break;
        case '0': v += '\0'; break;
        case '\\': v += '\\'; break;
        case '\'': v += '\''; break;
        case '"': v += '"'; break;
        case '\n': break;  // line continuation
        case 'x': utf8::append(v, static_cast<char32_t>(hexval(p, 2))); p += 2; break;
        case 'u': utf8::append(v, static_cast<char32_t>(hexval(p, 4))); p += 4; break;
        case 'U': utf8::append(v, static_cast<char32_t>(hexval(p, 8))); p += 8; break;
        default: v += '\\'; v += e; break;  // Python keeps unknown escapes verbatim
      }
    }
    out_.push_back({Token::Type::String, std::move(v), start_line});
    advance_to(p + 1);
  }

  std::string s_;
  std::string name_;
  LexOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> lex(const std::string& source, const std::string& name, const LexOptions& opt) {
  return Lexer(source, name, opt).run();
}

}  // namespace portllm::tok::jinja
