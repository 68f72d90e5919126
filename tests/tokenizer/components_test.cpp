// Component behaviours on tiny synthetic tokenizers. Expected values come from the Hugging Face
// tokenizers documentation/tests (split behaviours on "the-final--countdown", Metaspace
// prepend schemes), not from running this code.
#include <gtest/gtest.h>

#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace portllm::tok {
namespace {

using json = nlohmann::json;

std::vector<std::string> pre(const json& j, const std::string& text, bool at_start = true) {
  auto p = make_pre_tokenizer(j, "test");
  std::vector<Piece> pieces{{text, at_start}};
  p->pre_tokenize(pieces);
  std::vector<std::string> out;
  for (auto& x : pieces) out.push_back(x.text);
  return out;
}

json split(const char* behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior},
          {"invert", invert}};
}

using V = std::vector<std::string>;

TEST(SplitBehaviors, TheFinalCountdown) {
  const std::string t = "the-final--countdown";
  EXPECT_EQ(pre(split("Removed"), t), (V{"the", "final", "countdown"}));
  EXPECT_EQ(pre(split("Isolated"), t), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(pre(split("MergedWithPrevious"), t), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(pre(split("MergedWithNext"), t), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(pre(split("Contiguous"), t), (V{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(pre(split("MergedWithPrevious"), "--the-final--countdown--"),
            (V{"-", "-", "the-", "final-", "-", "countdown-", "-"}));
  EXPECT_EQ(pre(split("MergedWithNext"), "--the-final--countdown"),
            (V{"-", "-the", "-final", "-", "-countdown"}));
  // invert: the pattern marks what to keep.
  EXPECT_EQ(pre(split("Removed", true), t), (V{"-", "-", "-"}));
}

TEST(SplitBehaviors, RegexPatternIsUnicodeAware) {
  json j = {{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}{1,3}"}}}, {"behavior", "Isolated"}};
  EXPECT_EQ(pre(j, "ab1234５６"), (V{"ab", "123", "4５６"}));
}

TEST(SplitBehaviors, NelIsWhitespaceAsInOniguruma) {
  // HF's Oniguruma treats U+0085 as \s (in and outside character classes); PCRE2 alone does not.
  json j = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+|[^\\s]+"}}}, {"behavior", "Isolated"}};
  EXPECT_EQ(pre(j, "a\u0085b"), (V{"a", "\u0085", "b"}));
  json k = {{"type", "Split"}, {"pattern", {{"Regex", "\\S+"}}}, {"behavior", "Removed"}};
  EXPECT_EQ(pre(k, "a\u0085b [x]"), (V{"\u0085", " "}));
}

TEST(PreTokenizers, DigitsWhitespacePunctuation) {
  EXPECT_EQ(pre({{"type", "Digits"}, {"individual_digits", true}}, "a123b"),
            (V{"a", "1", "2", "3", "b"}));
  EXPECT_EQ(pre({{"type", "Digits"}, {"individual_digits", false}}, "a123b"), (V{"a", "123", "b"}));
  EXPECT_EQ(pre({{"type", "Whitespace"}}, "Hey friend!  How are you?!?"),
            (V{"Hey", "friend", "!", "How", "are", "you", "?!?"}));
  EXPECT_EQ(pre({{"type", "WhitespaceSplit"}}, "Hey friend!  How"), (V{"Hey", "friend!", "How"}));
  EXPECT_EQ(pre({{"type", "Punctuation"}}, "Hey friend!?"), (V{"Hey friend", "!", "?"}));
}

TEST(PreTokenizers, MetaspacePrependSchemes) {
  const std::string sp = "\u2581";
  json always = {{"type", "Metaspace"}, {"replacement", sp}, {"prepend_scheme", "always"},
                 {"split", true}};
  EXPECT_EQ(pre(always, "Hey friend"), (V{sp + "Hey", sp + "friend"}));
  EXPECT_EQ(pre(always, "Hey", false), (V{sp + "Hey"}));
  json first = always;
  first["prepend_scheme"] = "first";
  EXPECT_EQ(pre(first, "Hey", true), (V{sp + "Hey"}));
  EXPECT_EQ(pre(first, "Hey", false), (V{"Hey"}));  // not at the start of the input
  json never = always;
  never["prepend_scheme"] = "never";
  never["split"] = false;
  EXPECT_EQ(pre(never, "Hey friend"), (V{"Hey" + sp + "friend"}));
}

TEST(PreTokenizers, ByteLevelPrefixSpaceAndRegex) {
  json j = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  // GPT-2 regex, space shown as "Ġ".
  EXPECT_EQ(pre(j, "Hello world"), (V{"\u0120Hello", "\u0120world"}));
}

std::string norm(const json& j, std::string s) {
  make_normalizer(j, "test")->normalize(s);
  return s;
}

TEST(Normalizers, UnicodeForms) {
  const std::string decomposed = "e\u0301";  // e + combining acute
  EXPECT_EQ(norm({{"type", "NFC"}}, decomposed), "\u00e9");
  EXPECT_EQ(norm({{"type", "NFD"}}, "\u00e9"), decomposed);
  EXPECT_EQ(norm({{"type", "NFKC"}}, "\uFB01"), "fi");  // ligature
  EXPECT_EQ(norm({{"type", "NFKD"}}, "\u2460"), "1");   // circled digit one
  EXPECT_EQ(norm({{"type", "NFC"}}, "\u1100\u1161"), "\uAC00");  // Hangul jamo compose
}

TEST(Normalizers, OthersAndSequence) {
  EXPECT_EQ(norm({{"type", "Lowercase"}}, "HeLLo ÀÉ"), "hello àé");
  EXPECT_EQ(norm({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, "  a b \n"), "a b");
  EXPECT_EQ(norm({{"type", "Prepend"}, {"prepend", "_"}}, "ab"), "_ab");
  EXPECT_EQ(norm({{"type", "Prepend"}, {"prepend", "_"}}, ""), "");
  EXPECT_EQ(norm({{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}},
                 "a \t\n b"),
            "a b");
  json seq = {{"type", "Sequence"},
              {"normalizers",
               {{{"type", "Replace"}, {"pattern", {{"String", "."}}}, {"content", "!"}},
                {{"type", "Lowercase"}}}}};
  EXPECT_EQ(norm(seq, "A.b.C"), "a!b!c");  // "." is literal, not a regex wildcard
}

std::string dec(const json& j, std::vector<std::string> tokens) {
  make_decoder(j, "test")->decode_chain(tokens);
  std::string out;
  for (auto& t : tokens) out += t;
  return out;
}

TEST(Decoders, ByteFallbackInvalidRunIsOneReplacementPerByte) {
  json bf = {{"type", "ByteFallback"}};
  EXPECT_EQ(dec(bf, {"<0xE4>", "<0xBD>", "<0xA0>", "a"}), "\u4f60a");
  EXPECT_EQ(dec(bf, {"<0xE4>", "<0xBD>", "a"}), "\uFFFD\uFFFDa");
  EXPECT_EQ(dec(bf, {"<0x61>"}), "a");
}

TEST(Decoders, MetaspaceAndStrip) {
  json ms = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}};
  EXPECT_EQ(dec(ms, {"\u2581Hey", "\u2581friend"}), "Hey friend");
  json strip = {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}};
  EXPECT_EQ(dec(strip, {"  a "}), " a ");
}

// A minimal BPE tokenizer.json with a non-byte-level vocab, to exercise unk and merges.
json tiny_bpe() {
  return {{"model",
           {{"type", "BPE"},
            {"vocab", {{"<unk>", 0}, {"a", 1}, {"b", 2}, {"ab", 3}, {"c", 4}, {"abc", 5}}},
            {"merges", {"a b", json::array({"ab", "c"})}},
            {"unk_token", "<unk>"},
            {"fuse_unk", true}}},
          {"added_tokens", json::array()}};
}

TEST(BpeModel, MergesInBothFormatsAndFusedUnk) {
  auto t = Tokenizer::from_json(tiny_bpe(), json::object(), "tiny");
  EXPECT_EQ(t->encode("abc", false), (std::vector<int32_t>{5}));
  EXPECT_EQ(t->encode("abxyc", false), (std::vector<int32_t>{3, 0, 4}));  // xy fused into one unk
  auto j = tiny_bpe();
  j["model"]["fuse_unk"] = false;
  EXPECT_EQ(Tokenizer::from_json(j, json::object(), "tiny")->encode("abxyc", false),
            (std::vector<int32_t>{3, 0, 0, 4}));
}

TEST(AddedTokens, LstripRstripSingleWord) {
  auto j = tiny_bpe();
  j["added_tokens"] = {
      {{"id", 6}, {"content", "<m>"}, {"special", true}, {"lstrip", true}, {"rstrip", true},
       {"normalized", false}, {"single_word", false}},
      {{"id", 7}, {"content", "ab"}, {"special", false}, {"lstrip", false}, {"rstrip", false},
       {"normalized", false}, {"single_word", true}}};
  j["model"]["vocab"][" "] = 8;
  auto t = Tokenizer::from_json(j, json::object(), "tiny");
  // lstrip/rstrip swallow the spaces around <m>.
  EXPECT_EQ(t->encode("c  <m>  c", false), (std::vector<int32_t>{4, 6, 4}));
  // single_word: "ab" alone is the added token, inside "abc" it is not.
  EXPECT_EQ(t->encode("ab", false), (std::vector<int32_t>{7}));
  EXPECT_EQ(t->encode("abc", false), (std::vector<int32_t>{5}));
}

}  // namespace
}  // namespace portllm::tok
