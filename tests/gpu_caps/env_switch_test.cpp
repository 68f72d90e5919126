#include "backends/gpu/env_switch.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace portllm::gpu {
namespace {

constexpr const char* kVar = "PORTLLM_TEST_ENV_SWITCH";

TEST(EnvSwitch, UnsetOrEmptyGivesTheDefault) {
  ::unsetenv(kVar);
  EXPECT_EQ(env_switch(kVar, {"1", "0", "verbose"}, 0), 0);
  ::setenv(kVar, "", 1);
  EXPECT_EQ(env_switch(kVar, {"1", "0", "verbose"}, 2), 2);
}

TEST(EnvSwitch, AWordGivesItsIndex) {
  ::setenv(kVar, "verbose", 1);
  EXPECT_EQ(env_switch(kVar, {"1", "0", "verbose"}, 0), 2);
  ::setenv(kVar, "0", 1);
  EXPECT_EQ(env_switch(kVar, {"1", "0", "verbose"}, 0), 1);
  ::unsetenv(kVar);
}

TEST(EnvSwitch, AnotherValueNamesTheVariableAndTheWords) {
  ::setenv(kVar, "yes", 1);
  try {
    env_switch(kVar, {"1", "0", "strict"}, 0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("PORTLLM_TEST_ENV_SWITCH=yes"), std::string::npos) << m;
    EXPECT_NE(m.find("1, 0, strict"), std::string::npos) << m;
  }
  ::unsetenv(kVar);
}

}  // namespace
}  // namespace portllm::gpu
