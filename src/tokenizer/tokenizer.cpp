#include "tokenizer/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "tokenizer/added_vocab.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/json_util.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/utf8.h"

namespace portllm::tok {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) PL_THROW("{}: cannot open file", path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::json parse_json_file(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    PL_THROW("{}: invalid JSON: {}", path, e.what());
  }
}

// tokenizer_config.json writes special tokens as "<s>" or {"content": "<s>", ...}.
std::optional<std::string> token_content(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return std::nullopt;
}

// Byte-level BPE ends its pre-tokenizer with ByteLevel(add_prefix_space=false), which only maps
// bytes to characters (after splitting with the GPT-2 regex when use_regex). Returns the
// pre-tokenizer without that mapping (the BPE model then maps raw bytes itself, see
// BpeModel::enable_byte_level_input), or nullopt when the pre-tokenizer has another shape.
std::optional<nlohmann::json> without_trailing_byte_level(const nlohmann::json& pre) {
  // The replacement of a mapping-only ByteLevel: nothing, or the GPT-2 split.
  auto replacement = [](const nlohmann::json& e) -> std::optional<nlohmann::json> {
    if (!e.is_object() || !e.contains("type") || e["type"] != "ByteLevel") return std::nullopt;
    const auto aps = e.find("add_prefix_space");
    if (aps == e.end() || !aps->is_boolean() || aps->get<bool>()) return std::nullopt;
    const auto ur = e.find("use_regex");
    const bool use_regex = ur == e.end() || !ur->is_boolean() || ur->get<bool>();
    if (!use_regex) return nlohmann::json(nullptr);
    return nlohmann::json{{"type", "Split"},
                          {"pattern", {{"Regex", kGpt2SplitPattern}}},
                          {"behavior", "Isolated"},
                          {"invert", false}};
  };
  if (auto r = replacement(pre)) return r;
  if (!pre.is_object() || !pre.contains("type") || pre["type"] != "Sequence" ||
      !pre.contains("pretokenizers") || !pre["pretokenizers"].is_array() ||
      pre["pretokenizers"].empty())
    return std::nullopt;
  auto r = replacement(pre["pretokenizers"].back());
  if (!r) return std::nullopt;
  nlohmann::json out = pre;
  auto& list = out["pretokenizers"];
  if (r->is_null()) list.erase(list.size() - 1);
  else list.back() = std::move(*r);
  return out;
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string tj = (fs::path(dir) / "tokenizer.json").string();
  if (!fs::exists(tj)) PL_THROW("{}: file not found (a Hugging Face tokenizer.json is required)", tj);
  const nlohmann::json j = parse_json_file(tj);
  nlohmann::json config = nlohmann::json::object();
  const std::string cj = (fs::path(dir) / "tokenizer_config.json").string();
  if (fs::exists(cj)) config = parse_json_file(cj);
  if (!config.is_object()) PL_THROW("{}: expected a JSON object", cj);
  auto tok = from_json(j, config, tj);
  const auto jinja = fs::path(dir) / "chat_template.jinja";
  if (tok->chat_template_.empty() && fs::exists(jinja)) tok->chat_template_ = read_file(jinja.string());
  return tok;
}

std::unique_ptr<Tokenizer> Tokenizer::from_json(const nlohmann::json& j,
                                                const nlohmann::json& config,
                                                std::string source_name) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->source_ = std::move(source_name);
  const std::string& src = t->source_;
  if (!j.is_object()) PL_THROW("{}: expected a JSON object at the top level", src);
  if (!j.contains("model") || j["model"].is_null()) PL_THROW("{}: missing field 'model'", src);
  t->config_ = config.is_object() ? config : nlohmann::json::object();

  t->model_ = std::make_unique<BpeModel>(j["model"], src);
  auto field = [&](const char* k) { return j.contains(k) ? j[k] : nlohmann::json(); };
  t->normalizer_ = make_normalizer(field("normalizer"), src + ": normalizer");
  nlohmann::json pre = field("pre_tokenizer");
  if (auto fast = without_trailing_byte_level(pre); fast && t->model_->enable_byte_level_input())
    pre = std::move(*fast);
  t->pre_tokenizer_ = make_pre_tokenizer(pre, src + ": pre_tokenizer");
  t->stream_pre_ = t->pre_tokenizer_ && t->pre_tokenizer_->can_stream();
  t->post_processor_ = make_post_processor(field("post_processor"), src + ": post_processor");
  t->decoder_ = make_decoder(field("decoder"), src + ": decoder");
  t->added_ = std::make_unique<AddedVocab>(field("added_tokens"), src);
  t->added_->build(t->normalizer_.get());

  t->vocab_size_ = t->model_->id_limit();
  for (const auto& a : t->added_->tokens()) t->vocab_size_ = std::max(t->vocab_size_, a.id + 1);

  const auto& c = t->config_;
  if (c.contains("bos_token")) t->bos_id_ = t->config_token_id(c["bos_token"], "bos_token");
  if (c.contains("eos_token")) {
    const auto& e = c["eos_token"];
    if (e.is_array()) {
      for (const auto& x : e)
        if (auto id = t->config_token_id(x, "eos_token")) t->eos_ids_.push_back(*id);
    } else if (auto id = t->config_token_id(e, "eos_token")) {
      t->eos_ids_.push_back(*id);
    }
  }
  if (c.contains("add_bos_token") && c["add_bos_token"].is_boolean())
    t->add_bos_token_ = c["add_bos_token"].get<bool>();
  if (c.contains("chat_template")) {
    const auto& ct = c["chat_template"];
    if (ct.is_string()) {
      t->chat_template_ = ct.get<std::string>();
    } else if (ct.is_array()) {  // [{"name": "default", "template": "..."}, ...]
      for (const auto& e : ct) {
        if (!e.is_object() || !e.contains("template") || !e["template"].is_string()) continue;
        if (t->chat_template_.empty() || e.value("name", "") == "default")
          t->chat_template_ = e["template"].get<std::string>();
      }
    }
  }
  return t;
}

std::optional<int32_t> Tokenizer::config_token_id(const nlohmann::json& v,
                                                  const char* field) const {
  if (v.is_null()) return std::nullopt;
  const auto content = token_content(v);
  if (!content) PL_THROW("tokenizer_config.json: field '{}' must be a string or an object with 'content'", field);
  auto id = token_to_id(*content);
  if (!id)
    PL_THROW("tokenizer_config.json: {} '{}' is not a token of {}", field, *content, source_);
  return id;
}

void Tokenizer::encode_plain(std::string& text, bool at_start, std::vector<int32_t>& ids) const {
  if (normalizer_) normalizer_->normalize(text);
  if (!added_->has_normalized()) return encode_words(text, at_start, ids);
  std::vector<Segment> segs;
  added_->split_normalized(text, at_start, segs);
  for (auto& s : segs) {
    if (s.id >= 0) ids.push_back(s.id);
    else encode_words(s.text, s.at_start, ids);
  }
}

void Tokenizer::encode_words(std::string& text, bool at_start, std::vector<int32_t>& ids) const {
  if (!pre_tokenizer_) return model_->tokenize(text, ids);
  if (stream_pre_) {  // fast path: words are views into `text`, no strings built
    pre_tokenizer_->stream(text, at_start,
                           [&](std::string_view w, bool) { model_->tokenize(w, ids); });
    return;
  }
  std::vector<Piece> pieces;
  pieces.push_back({std::move(text), at_start});
  pre_tokenizer_->pre_tokenize(pieces);
  for (const auto& p : pieces) model_->tokenize(p.text, ids);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::string clean = is_valid_utf8(text) ? std::string(text) : to_valid_utf8(text);
  if (!added_->has_raw()) {
    encode_plain(clean, true, ids);
    if (add_special_tokens && post_processor_) post_processor_->process(ids);
    return ids;
  }
  std::vector<Segment> segs;
  added_->split_raw(clean, true, segs);
  for (auto& s : segs) {
    if (s.id >= 0) ids.push_back(s.id);
    else encode_plain(s.text, s.at_start, ids);
  }
  if (add_special_tokens && post_processor_) post_processor_->process(ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const AddedToken* a = added_->find_id(id)) {
      if (!(skip_special_tokens && a->special)) tokens.push_back(a->content);
    } else if (const std::string* s = model_->id_to_token(id)) {
      tokens.push_back(*s);
    }
    // Ids outside the vocabulary are skipped, as HF does.
  }
  if (decoder_) decoder_->decode_chain(tokens);
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!decoder_ && i > 0) out.push_back(' ');  // HF joins with spaces when there is no decoder
    out += tokens[i];
  }
  return out;
}

std::string Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* a = added_->find_id(id)) return a->content;
  if (const std::string* s = model_->id_to_token(id)) return *s;
  return {};
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* a = added_->find_content(token)) return a->id;
  return model_->token_to_id(token);
}

int32_t Tokenizer::vocab_size() const { return vocab_size_; }

bool Tokenizer::is_special(int32_t id) const {
  const AddedToken* a = added_->find_id(id);
  return a && a->special;
}

}  // namespace portllm::tok
