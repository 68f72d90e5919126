#include "tokenizer/post_processor.h"

#include "core/error.h"
#include "tokenizer/json_util.h"

namespace portllm::tok {

namespace {

// A fixed list of ids before and after the sequence.
class Wrap : public PostProcessor {
 public:
  Wrap(std::vector<int32_t> before, std::vector<int32_t> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  void process(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }

 private:
  std::vector<int32_t> before_, after_;
};

class Identity : public PostProcessor {
 public:
  void process(std::vector<int32_t>&) const override {}
};

class SequencePost : public PostProcessor {
 public:
  explicit SequencePost(std::vector<std::unique_ptr<PostProcessor>> parts)
      : parts_(std::move(parts)) {}
  void process(std::vector<int32_t>& ids) const override {
    for (const auto& p : parts_) p->process(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

// TemplateProcessing "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}]
std::unique_ptr<PostProcessor> make_template(const nlohmann::json& j, const std::string& where) {
  const auto single = json_get<nlohmann::json>(j, "single", where);
  const auto specials = json_get_or<nlohmann::json>(j, "special_tokens", nlohmann::json::object(),
                                                    where);
  if (!single.is_array()) PL_THROW("{}: field 'single' must be an array", where);
  std::vector<int32_t> before, after;
  bool seen_a = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const auto& item = single[i];
    const std::string w = fmt::format("{}.single[{}]", where, i);
    if (item.contains("Sequence")) {
      if (seen_a) PL_THROW("{}: sequence A appears twice", w);
      seen_a = true;
    } else if (item.contains("SpecialToken")) {
      const auto name = json_get<std::string>(item["SpecialToken"], "id", w);
      if (!specials.contains(name))
        PL_THROW("{}: special token '{}' is missing from special_tokens", w, name);
      const auto ids = json_get<std::vector<int32_t>>(specials[name], "ids", w);
      auto& dst = seen_a ? after : before;
      dst.insert(dst.end(), ids.begin(), ids.end());
    } else {
      PL_THROW("{}: expected 'Sequence' or 'SpecialToken'", w);
    }
  }
  return std::make_unique<Wrap>(std::move(before), std::move(after));
}

// RobertaProcessing / BertProcessing: {"cls": ["<s>", 0], "sep": ["</s>", 2]}
std::unique_ptr<PostProcessor> make_cls_sep(const nlohmann::json& j, const std::string& where) {
  auto id_of = [&](const char* key) {
    const auto v = json_get<nlohmann::json>(j, key, where);
    if (!v.is_array() || v.size() != 2 || !v[1].is_number_integer())
      PL_THROW("{}: field '{}' must be [token, id]", where, key);
    return v[1].get<int32_t>();
  };
  return std::make_unique<Wrap>(std::vector<int32_t>{id_of("cls")},
                                std::vector<int32_t>{id_of("sep")});
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j,
                                                   const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, where);
  if (type == "TemplateProcessing") return make_template(j, where);
  if (type == "ByteLevel") return std::make_unique<Identity>();  // only adjusts offsets
  if (type == "RobertaProcessing" || type == "BertProcessing") return make_cls_sep(j, where);
  if (type == "Sequence") {
    const auto list = json_get<nlohmann::json>(j, "processors", where);
    if (!list.is_array()) PL_THROW("{}: field 'processors' must be an array", where);
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto p = make_post_processor(list[i], fmt::format("{}.processors[{}]", where, i));
      if (p) parts.push_back(std::move(p));
    }
    return std::make_unique<SequencePost>(std::move(parts));
  }
  PL_THROW("{}: unknown post_processor type '{}'", where, type);
}

}  // namespace portllm::tok
