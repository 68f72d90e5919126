// StreamDecoder: pieces are valid UTF-8 and concatenate exactly to decode(all ids), on every
// oracle case of every fixture tokenizer, with and without skipping special tokens.
#include <gtest/gtest.h>

#include "tok_test_util.h"
#include "tokenizer/utf8.h"

namespace portllm::tok::test {
namespace {

void check_stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip) {
  StreamDecoder sd(tok, skip);
  std::string all;
  for (int32_t id : ids) {
    const std::string piece = sd.push(id);
    EXPECT_TRUE(is_valid_utf8(piece));
    EXPECT_FALSE(ends_with_incomplete_utf8(piece));
    all += piece;
  }
  const std::string tail = sd.finish();
  EXPECT_TRUE(is_valid_utf8(tail));
  all += tail;
  EXPECT_EQ(all, tok.decode(ids, skip));
}

class Stream : public ::testing::TestWithParam<std::string> {};

TEST_P(Stream, PiecesConcatenateToDecode) {
  const auto& tok = load(GetParam());
  const auto cases = read_json(fixture(GetParam()).cases_file);
  std::vector<int32_t> everything;
  for (const auto& c : cases["encode"]) {
    const auto text = c["text"].get<std::string>();
    SCOPED_TRACE(nlohmann::json(text).dump());
    for (bool special : {false, true}) {
      const auto ids = tok.encode(text, special);
      everything.insert(everything.end(), ids.begin(), ids.end());
      for (bool skip : {false, true}) check_stream(tok, ids, skip);
    }
  }
  // One long stream across all cases (exercises the sliding window and id trimming).
  for (bool skip : {false, true}) check_stream(tok, everything, skip);
}

TEST_P(Stream, SplitCharactersAreHeldBack) {
  // Byte-level / byte-fallback tokens of a 4-byte emoji: no piece may end mid-character.
  const auto& tok = load(GetParam());
  const auto ids = tok.encode("🤖🤖 x 你好", false);
  StreamDecoder sd(tok, false);
  for (int32_t id : ids) EXPECT_TRUE(is_valid_utf8(sd.push(id)));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Stream, ::testing::ValuesIn(fixture_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace portllm::tok::test
