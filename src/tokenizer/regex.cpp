#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include <cctype>

#include "core/error.h"

namespace portllm::tok {

namespace {

// Per-thread match state: match data (only group 0 is read) and a JIT stack large enough for
// patterns such as \s+(?!\S) on very long whitespace runs. Shared by all Regex objects, so
// encode() can run concurrently on several threads without locks.
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* ctx = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(1, nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    ctx = pcre2_match_context_create(nullptr);
    pcre2_jit_stack_assign(ctx, nullptr, stack);
  }
  ~ThreadMatchState() {
    pcre2_match_context_free(ctx);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState& match_state() {
  thread_local ThreadMatchState s;
  return s;
}

// Oniguruma (what HF tokenizers uses) counts U+0085 (NEL) as \s; PCRE2's \s under UCP is the
// Z categories plus \t\n\v\f\r only. Rewrites \s and \S so both agree.
std::string onig_compat(const std::string& p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  size_t class_start = 0;  // index in p just after '[' or '[^'
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      ++i;
      if (n == 's') {
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      } else if (n == 'S' && !in_class) {
        out += "[^\\s\\x{85}]";
      } else {
        out.push_back('\\');
        out.push_back(n);
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      class_start = i + 1;
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      const size_t e = p.find(":]", i + 2);
      if (e != std::string::npos) {
        out.append(p, i, e + 2 - i);
        i = e + 1;
        continue;
      }
    }
    if (in_class && c == ']' && i != class_start) in_class = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& source_pattern, const std::string& where) {
  const std::string pattern = onig_compat(source_pattern);
  int err = 0;
  PCRE2_SIZE err_off = 0;
  auto* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                             PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    PL_THROW("{}: invalid regex '{}': {} at offset {}", where, source_pattern,
             reinterpret_cast<const char*>(msg), err_off);
  }
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

bool Regex::find(std::string_view text, size_t from, size_t& start, size_t& end) const {
  auto& st = match_state();
  auto* code = static_cast<pcre2_code*>(code_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = jit_ ? pcre2_jit_match(code, subject, text.size(), from, 0, st.data, st.ctx)
                : pcre2_match(code, subject, text.size(), from, PCRE2_NO_UTF_CHECK, st.data,
                              st.ctx);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof(msg));
    PL_THROW("tokenizer regex match failed: {}", reinterpret_cast<const char*>(msg));
  }
  // rc == 0 only means the 1-pair ovector was too small for the groups; group 0 is still set.
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
  start = ov[0];
  end = ov[1];
  return true;
}

std::string Regex::quote(std::string_view literal) {
  // \Q...\E breaks if the literal itself contains \E, so escape byte by byte instead.
  std::string out;
  for (char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u) && c != '_' && u >= 0x20) out.push_back('\\');
    if (u < 0x20) {
      out += fmt::format("\\x{{{:02x}}}", u);
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace portllm::tok
