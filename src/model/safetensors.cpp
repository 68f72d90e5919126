#include "model/safetensors.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace portllm {

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto f = std::make_shared<SafetensorsFile>();
  f->file_ = MappedFile::open(path);
  const size_t size = f->file_->size();
  if (size < 8) PL_THROW("{}: not a safetensors file (only {} bytes)", path, size);
  uint64_t header_len = 0;
  std::memcpy(&header_len, f->file_->data(), 8);
  if (header_len > size - 8) PL_THROW("{}: header length {} runs past the end of the file ({} bytes)", path, header_len, size);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(f->file_->data() + 8, f->file_->data() + 8 + header_len);
  } catch (const nlohmann::json::parse_error& e) {
    PL_THROW("{}: malformed header JSON: {}", path, e.what());
  }
  if (!header.is_object()) PL_THROW("{}: header is not a JSON object", path);
  const size_t data_start = 8 + header_len, data_size = size - data_start;
  std::vector<std::pair<size_t, size_t>> ranges;
  for (auto& [name, e] : header.items()) {
    if (name == "__metadata__") continue;
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      PL_THROW("{}: tensor '{}': entry needs dtype, shape and data_offsets", path, name);
    SafetensorsEntry en;
    en.name = name;
    if (!e["dtype"].is_string()) PL_THROW("{}: tensor '{}': dtype must be a string", path, name);
    auto dt = dtype_from_safetensors(e["dtype"].get<std::string>());
    if (!dt) PL_THROW("{}: tensor '{}': unknown dtype '{}'", path, name, e["dtype"].get<std::string>());
    en.dtype = *dt;
    if (!e["shape"].is_array()) PL_THROW("{}: tensor '{}': shape must be an array", path, name);
    uint64_t numel = 1;
    for (auto& d : e["shape"]) {
      // A dimension past 2^48 or a product past 2^62 elements would wrap the byte count below
      // and could match a short data range.
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t(1) << 48) ||
          (d.get<int64_t>() > 0 && numel > (uint64_t(1) << 62) / uint64_t(d.get<int64_t>())))
        PL_THROW("{}: tensor '{}': bad shape {}", path, name, e["shape"].dump());
      en.shape.push_back(d.get<int64_t>());
      numel *= uint64_t(d.get<int64_t>());
    }
    auto& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      PL_THROW("{}: tensor '{}': data_offsets must be [begin, end]", path, name);
    const uint64_t b = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (b > end || end > data_size)
      PL_THROW("{}: tensor '{}': data_offsets [{}, {}] out of range (data section is {} bytes)", path, name, b, end, data_size);
    if (end - b != numel * dtype_size(en.dtype))
      PL_THROW("{}: tensor '{}': shape {} of {} needs {} bytes but data_offsets give {}", path, name,
               e["shape"].dump(), dtype_name(en.dtype), numel * dtype_size(en.dtype), end - b);
    en.offset = data_start + b;
    en.bytes = end - b;
    if (en.bytes) ranges.emplace_back(b, end);
    f->entries_.emplace(name, std::move(en));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      PL_THROW("{}: tensors overlap in the data section (bytes {}..{} and {}..{})", path, ranges[i - 1].first,
               ranges[i - 1].second, ranges[i].first, ranges[i].second);
  return f;
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

Tensor SafetensorsFile::tensor(const std::string& name) const {
  const SafetensorsEntry* e = find(name);
  if (!e) PL_THROW("{}: no tensor named '{}'", path(), name);
  void* p = const_cast<uint8_t*>(file_->data() + e->offset);
  return Tensor::view_of(p, e->dtype, e->shape, DeviceKind::CPU, 0, file_);
}

Checkpoint Checkpoint::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  Checkpoint c;
  c.dir_ = dir;
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  std::vector<std::string> files;
  if (fs::exists(index_path)) {
    nlohmann::json idx;
    try {
      idx = nlohmann::json::parse(read_text_file(index_path.string()));
    } catch (const nlohmann::json::parse_error& e) {
      PL_THROW("{}: invalid JSON: {}", index_path.string(), e.what());
    }
    if (!idx.contains("weight_map") || !idx["weight_map"].is_object())
      PL_THROW("{}: missing object 'weight_map'", index_path.string());
    for (auto& [name, file] : idx["weight_map"].items()) {
      if (!file.is_string()) PL_THROW("{}: weight_map['{}'] must be a file name", index_path.string(), name);
      if (std::find(files.begin(), files.end(), file.get<std::string>()) == files.end()) files.push_back(file.get<std::string>());
    }
  } else if (fs::exists(fs::path(dir) / "model.safetensors")) {
    files.push_back("model.safetensors");
  } else {
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors" && e.path().filename() != "reference.safetensors")
        files.push_back(e.path().filename().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) PL_THROW("{}: no model.safetensors or model.safetensors.index.json found", dir);
  }
  for (auto& name : files) {
    auto f = SafetensorsFile::open((fs::path(dir) / name).string());
    const size_t fi = c.files_.size();
    c.files_.push_back(f);
    for (auto& [tname, e] : f->entries()) {
      if (c.index_.count(tname))
        PL_THROW("{}: tensor '{}' also appears in {}", f->path(), tname, c.files_[c.index_[tname]]->path());
      c.index_[tname] = fi;
    }
  }
  return c;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> v;
  for (auto& [n, i] : index_) v.push_back(n);
  return v;
}

size_t Checkpoint::file_index(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) PL_THROW("{}: missing tensor '{}'", dir_, name);
  return it->second;
}

const SafetensorsEntry& Checkpoint::entry(const std::string& name) const { return *files_[file_index(name)]->find(name); }

Tensor Checkpoint::tensor(const std::string& name) const { return files_[file_index(name)]->tensor(name); }

const std::string& Checkpoint::file_of(const std::string& name) const { return files_[file_index(name)]->path(); }

}  // namespace portllm
