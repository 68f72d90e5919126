#include "tokenizer/decoder.h"

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace portllm::tok {

namespace {

// Byte-level tokens back to bytes, then to (lossy) UTF-8 text. Tokens holding characters
// outside the byte map (added tokens like "<｜end▁of▁sentence｜>") are copied as-is.
class ByteLevelDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens)
      if (!byte_level_decode(t, bytes)) bytes += t;
    tokens.assign(1, is_valid_utf8(bytes) ? std::move(bytes) : to_valid_utf8(bytes));
  }
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(const std::string& pattern, std::string content, const std::string& where)
      : re_(pattern, where), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) {
      std::string out;
      size_t last = 0;
      re_.for_each_match(t, [&](size_t s, size_t e) {
        out.append(t, last, s - last);
        out += content_;
        last = e;
      });
      out.append(t, last, std::string::npos);
      t.swap(out);
    }
  }

 private:
  Regex re_;
  std::string content_;
};

// <0xE4><0xBD><0xA0> -> "你"; a run of byte tokens that is not valid UTF-8 becomes one U+FFFD
// per byte (HF's rule).
class ByteFallbackDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;
    size_t run_len = 0;
    auto flush = [&] {
      if (!run_len) return;
      if (is_valid_utf8(run)) {
        out.push_back(run);
      } else {
        for (size_t k = 0; k < run_len; ++k) out.emplace_back(kReplacementChar);
      }
      run.clear();
      run_len = 0;
    };
    for (auto& t : tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
          std::isxdigit(static_cast<unsigned char>(t[3])) &&
          std::isxdigit(static_cast<unsigned char>(t[4])))
        byte = std::stoi(t.substr(3, 2), nullptr, 16);
      if (byte >= 0) {
        run.push_back(static_cast<char>(byte));
        ++run_len;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }
};

class FuseDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character from each token.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    const size_t n = content_.size();
    for (auto& t : tokens) {
      size_t b = 0, e = t.size();
      for (size_t k = 0; k < start_ && e - b >= n && t.compare(b, n, content_) == 0; ++k) b += n;
      for (size_t k = 0; k < stop_ && e - b >= n && t.compare(e - n, n, content_) == 0; ++k) e -= n;
      t = t.substr(b, e - b);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string rep, bool strip_first) : rep_(std::move(rep)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const auto& t = tokens[i];
      for (size_t p = 0; p < t.size();) {
        if (t.compare(p, rep_.size(), rep_) == 0) {
          out.push_back(' ');
          p += rep_.size();
        } else {
          out.push_back(t[p++]);
        }
      }
      if (i == 0 && strip_first_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
      tokens[i].swap(out);
    }
  }

 private:
  std::string rep_;
  bool strip_first_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Replace")
    return std::make_unique<ReplaceDecoder>(
        json_pattern(json_get<nlohmann::json>(j, "pattern", where), where),
        json_get<std::string>(j, "content", where), where);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    const auto content = json_get<std::string>(j, "content", where);
    if (content.empty()) PL_THROW("{}: field 'content' must not be empty", where);
    return std::make_unique<StripDecoder>(content, json_get_or<size_t>(j, "start", 0, where),
                                          json_get_or<size_t>(j, "stop", 0, where));
  }
  if (type == "Metaspace") {
    bool strip_first = true;
    if (j.contains("prepend_scheme"))
      strip_first = json_get<std::string>(j, "prepend_scheme", where) != "never";
    else
      strip_first = json_get_or<bool>(j, "add_prefix_space", true, where);
    return std::make_unique<MetaspaceDecoder>(
        json_get_or<std::string>(j, "replacement", "\u2581", where), strip_first);
  }
  if (type == "Sequence") {
    const auto list = json_get<nlohmann::json>(j, "decoders", where);
    if (!list.is_array()) PL_THROW("{}: field 'decoders' must be an array", where);
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto d = make_decoder(list[i], fmt::format("{}.decoders[{}]", where, i));
      if (d) parts.push_back(std::move(d));
    }
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  PL_THROW("{}: unknown decoder type '{}'", where, type);
}

}  // namespace portllm::tok
