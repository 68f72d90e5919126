// A read-only memory-mapped file. Weights are read through mmap so loading a model does not
// copy it into anonymous memory; the CPU backend uses the mapped bytes directly.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace portllm {

class MappedFile {
 public:
  static std::shared_ptr<MappedFile> open(const std::string& path);  // throws Error naming path
  ~MappedFile();
  const uint8_t* data() const { return static_cast<const uint8_t*>(data_); }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

std::string read_text_file(const std::string& path);  // throws Error naming path

}  // namespace portllm
