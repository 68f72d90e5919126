#include "engine/stop_checker.h"

#include <gtest/gtest.h>

namespace portllm {
namespace {

TEST(StopChecker, HoldsBackPossiblePrefixesAndMatchesAcrossPieces) {
  StopChecker c({"END", "xyz"});
  EXPECT_EQ(c.push("hello E"), "hello ");  // "E" may start "END"
  EXPECT_EQ(c.push("N"), "");              // "EN" still may
  EXPECT_EQ(c.push("D and more"), "");     // match: nothing after it is emitted
  EXPECT_TRUE(c.matched());
  EXPECT_EQ(c.matched_stop(), "END");
  EXPECT_EQ(c.push("later"), "");
}

TEST(StopChecker, ReleasesFalseStartsAndFlushes) {
  StopChecker c({"END"});
  EXPECT_EQ(c.push("E"), "");
  EXPECT_EQ(c.push("NX"), "ENX");  // not a stop after all
  EXPECT_EQ(c.push("abcEN"), "abc");
  EXPECT_EQ(c.flush(), "EN");
  EXPECT_FALSE(c.matched());
}

TEST(StopChecker, EarliestMatchWinsAndNoStopsPassThrough) {
  StopChecker c({"bc", "ab"});
  EXPECT_EQ(c.push("xabc"), "x");
  EXPECT_EQ(c.matched_stop(), "ab");
  StopChecker none;
  EXPECT_EQ(none.push("anything"), "anything");
  EXPECT_EQ(none.flush(), "");
}

}  // namespace
}  // namespace portllm
