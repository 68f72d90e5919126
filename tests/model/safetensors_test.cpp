// Corrupt and malformed safetensors files give one clear error naming the file and the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "model/safetensors.h"

using namespace portllm;
namespace fs = std::filesystem;

namespace {
std::string write_st(const std::string& name, const std::string& header, size_t data_bytes,
                     int64_t declared_len = -1) {
  const fs::path dir = fs::temp_directory_path() / "portllm_st_test";
  fs::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream f(path, std::ios::binary);
  uint64_t n = declared_len >= 0 ? uint64_t(declared_len) : header.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << header;
  f << std::string(data_bytes, '\0');
  return path;
}

std::string error_of(const std::string& path) {
  try {
    SafetensorsFile::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Safetensors, ReadsAValidFile) {
  auto p = write_st("ok.safetensors",
                    R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
                    R"("b":{"dtype":"F32","shape":[],"data_offsets":[12,16]}})", 16);
  auto f = SafetensorsFile::open(p);
  ASSERT_EQ(f->entries().size(), 2u);
  Tensor a = f->tensor("a");
  EXPECT_EQ(a.dtype, DType::BF16);
  EXPECT_EQ(a.shape_vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f->tensor("b").numel(), 1);
}

TEST(Safetensors, RejectsCorruptFiles) {
  struct Case { std::string name, header; size_t data; int64_t declared; std::string expect; };
  const std::vector<Case> cases = {
      {"hdr.safetensors", R"({"a":1})", 0, 1000, "header length 1000 runs past the end"},
      {"json.safetensors", R"({"a": [)", 0, -1, "malformed header JSON"},
      {"dtype.safetensors", R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", 1, -1, "unknown dtype 'Q4'"},
      {"range.safetensors", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8, -1, "out of range"},
      {"size.safetensors", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16, -1, "needs 12 bytes"},
      {"overlap.safetensors",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, -1, "overlap"},
      {"shape.safetensors", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, -1, "bad shape"},
      {"fields.safetensors", R"({"a":{"dtype":"F32"}})", 0, -1, "needs dtype, shape and data_offsets"},
  };
  for (const auto& c : cases) {
    const std::string path = write_st(c.name, c.header, c.data, c.declared);
    const std::string err = error_of(path);
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.name << ": " << err;
    EXPECT_NE(err.find(c.name), std::string::npos) << "error must name the file: " << err;
  }
  EXPECT_NE(error_of("/nonexistent/model.safetensors").find("cannot open"), std::string::npos);
  const std::string tiny = (fs::temp_directory_path() / "portllm_st_test" / "short.safetensors").string();
  std::ofstream(tiny) << "abc";
  EXPECT_NE(error_of(tiny).find("not a safetensors file"), std::string::npos);
}
