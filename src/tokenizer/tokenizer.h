// Hugging Face tokenizer.json support: encode/decode with the exact behaviour of the
// `tokenizers` library for BPE models (byte-level and SentencePiece-style), plus the few
// tokenizer_config.json fields the engine needs (bos/eos, chat template string).
//
// Pipeline of encode(): repair invalid UTF-8 -> extract raw added tokens -> normalize ->
// extract normalized added tokens -> pre-tokenize into words -> BPE per word (word cache) ->
// post-process (special tokens) when add_special_tokens.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace portllm::tok {

class AddedVocab;
class BpeModel;
class Normalizer;
class PreTokenizer;
class PostProcessor;
class Decoder;

class Tokenizer {
 public:
  // Reads DIR/tokenizer.json and, when present, DIR/tokenizer_config.json (and
  // DIR/chat_template.jinja as a fallback chat template). Throws portllm::Error naming the file
  // and field on any problem.
  static std::unique_ptr<Tokenizer> from_dir(const std::string& dir);
  // `source_name` is used in error messages (e.g. the path of tokenizer.json).
  static std::unique_ptr<Tokenizer> from_json(const nlohmann::json& tokenizer_json,
                                              const nlohmann::json& tokenizer_config,
                                              std::string source_name);
  ~Tokenizer();

  // Thread-safe. Invalid UTF-8 in `text` is replaced by U+FFFD.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  // The token's vocabulary string ("Ġthe", "<|im_end|>"); empty for unknown ids.
  std::string id_to_token(int32_t id) const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // One past the largest id (model vocabulary and added tokens).
  int32_t vocab_size() const;
  bool is_special(int32_t id) const;

  // From tokenizer_config.json bos_token / eos_token (the engine adds generation_config ids).
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::vector<int32_t> eos_ids() const { return eos_ids_; }
  // tokenizer_config.json add_bos_token, when set (informational: encode() follows the
  // post_processor of tokenizer.json, as HF tokenizers does).
  std::optional<bool> add_bos_token() const { return add_bos_token_; }
  // The chat template source (tokenizer_config.json chat_template, the "default" entry of a
  // list of named templates, or chat_template.jinja); empty when there is none.
  const std::string& chat_template() const { return chat_template_; }
  // tokenizer_config.json contents ({} when absent).
  const nlohmann::json& config() const { return config_; }
  const std::string& source_name() const { return source_; }

 private:
  Tokenizer();
  void encode_plain(std::string& text, bool at_start, std::vector<int32_t>& ids) const;
  void encode_words(std::string& text, bool at_start, std::vector<int32_t>& ids) const;
  std::optional<int32_t> config_token_id(const nlohmann::json& v, const char* field) const;

  std::string source_;
  nlohmann::json config_;
  std::unique_ptr<AddedVocab> added_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  bool stream_pre_ = false;  // pre_tokenizer_ can hand out words as views
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  int32_t vocab_size_ = 0;
  std::optional<int32_t> bos_id_;
  std::vector<int32_t> eos_ids_;
  std::optional<bool> add_bos_token_;
  std::string chat_template_;
};

// Incremental detokenization for streaming: push() returns the text that the new token adds,
// never a partial UTF-8 character, and the concatenation of all push() results and finish()
// equals tokenizer.decode(all ids). It decodes a short window of previous tokens together with
// the new ones so that context-dependent decoders (SentencePiece's leading-space strip, byte
// fallback runs, multi-token characters) give the same text as a full decode.
class StreamDecoder {
 public:
  StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens);
  std::string push(int32_t id);
  // Flushes text held back (e.g. a trailing incomplete character, emitted as U+FFFD).
  std::string finish();

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;  // window start: ids before it are fully emitted and not needed
  size_t read_offset_ = 0;    // ids before it have been emitted
  std::string prefix_text_;   // decode(ids_[prefix_offset_, read_offset_))
};

}  // namespace portllm::tok
