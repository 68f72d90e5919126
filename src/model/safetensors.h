// Safetensors files, memory-mapped and validated: the header must fit in the file, every entry
// needs a known dtype, a shape whose byte size equals its data range, and ranges that stay inside
// the data section without overlapping. Sharded checkpoints are read through
// model.safetensors.index.json.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace portllm {

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  size_t offset = 0;  // from the start of the file
  size_t bytes = 0;
};

class SafetensorsFile {
 public:
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);
  const std::string& path() const { return file_->path(); }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  const SafetensorsEntry* find(const std::string& name) const;
  Tensor tensor(const std::string& name) const;  // host view into the mapping (keeps it alive)

 private:
  std::shared_ptr<MappedFile> file_;
  std::map<std::string, SafetensorsEntry> entries_;
};

// All tensors of a checkpoint directory (single file or sharded), by name.
class Checkpoint {
 public:
  static Checkpoint open_dir(const std::string& dir);
  std::vector<std::string> names() const;
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  const SafetensorsEntry& entry(const std::string& name) const;
  Tensor tensor(const std::string& name) const;
  const std::string& file_of(const std::string& name) const;

 private:
  size_t file_index(const std::string& name) const;  // throws naming the directory
  std::string dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> index_;  // tensor name -> files_ index
};

}  // namespace portllm
