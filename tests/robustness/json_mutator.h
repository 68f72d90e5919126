// Seeded structural mutations of a JSON document, for the tests that feed loaders and request
// parsers malformed input. Byte flips mostly yield JSON that does not parse, which the parsers
// reject in one place; the interesting failures are well-formed documents with a field of the
// wrong kind, out of range, missing or moved, so the mutations work on the tree.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace portllm::robustness {

// Serializes j for a file or a request body; invalid UTF-8 (one of the replacements) becomes
// U+FFFD instead of throwing, as the bytes could not reach a parser unchanged anyway.
template <class J>
std::string dump(const J& j, int indent = -1) {
  return j.dump(indent, ' ', false, J::error_handler_t::replace);
}

class JsonMutator {
 public:
  explicit JsonMutator(uint64_t seed) : rng_(seed) {}

  // A copy of doc with `count` mutations, each at a node found by a random descent from the
  // root that stops at each level with probability 1/3, so the structure near the root is hit
  // as often as the leaves of a 150k-entry vocabulary. J: nlohmann::json or ordered_json.
  template <class J>
  J mutate(const J& doc, int count) {
    log_.clear();
    J out = doc;
    for (int i = 0; i < count; ++i) mutate_once(out);
    return out;
  }

  // Keys other documents of the same kind have (with a value they have there, as JSON text):
  // a quarter of the mutations then add one to a random object of the document, with that
  // value or a replacement, so fields the document lacks are tried too (a config without
  // partial_rotary_factor meets one).
  void set_donors(std::vector<std::pair<std::string, std::string>> donors) { donors_ = std::move(donors); }

  // What the last mutate() did, one "path: operation" per line, for failure messages.
  const std::string& log() const { return log_; }
  std::mt19937_64& rng() { return rng_; }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  template <class J>
  void mutate_once(J& root) {
    if (!donors_.empty() && pick(4) == 0) return add_donor(root);
    // Descend: parent and the key or index of the chosen child.
    J* node = &root;
    J* parent = nullptr;
    std::string key, path;
    size_t index = 0;
    while ((node->is_object() || node->is_array()) && !node->empty() && (parent == nullptr || pick(3) != 0)) {
      parent = node;
      index = pick(node->size());
      if (node->is_object()) {
        auto it = node->begin();
        std::advance(it, long(index));
        key = it.key();
        path += "/" + key;
        node = &*it;
      } else {
        key.clear();
        path += "/" + std::to_string(index);
        node = &(*node)[index];
      }
    }
    const size_t op = parent ? pick(8) : 0;
    if (op == 1) {  // remove the node from its parent
      log_ += path + ": removed\n";
      if (parent->is_object()) parent->erase(key);
      else parent->erase(index);
    } else if (op == 2 && parent->is_array()) {  // duplicate an array element
      log_ += path + ": duplicated\n";
      J copy = *node;
      parent->insert(parent->begin() + long(index), copy);
    } else {
      J r = replacement(root);
      log_ += path + ": replaced by " + dump(r).substr(0, 80) + "\n";
      *node = std::move(r);
    }
  }

  // A value of some other kind: the edges of the integer and float ranges, empty and odd
  // strings and containers, or a copy of another node of the same document (a value that is
  // plausible somewhere, which tends to pass the first type check and fail deeper).
  template <class J>
  J replacement(const J& root) {
    switch (pick(22)) {
      case 0: return J(nullptr);
      case 1: return J(true);
      case 2: return J(false);
      case 3: return J(0);
      case 4: return J(-1);
      case 5: return J(1);
      case 6: return J(int64_t(1) << 31);
      case 7: return J(-(int64_t(1) << 31) - 1);
      case 8: return J(int64_t(1) << 62);
      case 9: return J(uint64_t(1) << 63);
      case 10: return J(1e308);
      case 11: return J(-0.5);
      case 12: return J(3.5);
      case 13: return J("");
      case 14: return J("x");
      case 15: return J(std::string(5000, 'a'));
      case 16: return J::array();
      case 17: return J::array({1, "x", nullptr});
      case 18: return J::object();
      case 19: return J::object({{"a", 1}});
      case 20: return J("\xff\xfe invalid utf-8");
      default: {  // a copy of a random node of the document
        const J* n = &root;
        while ((n->is_object() || n->is_array()) && !n->empty() && pick(3) != 0) {
          auto it = n->begin();
          std::advance(it, long(pick(n->size())));
          n = &*it;
        }
        return *n;
      }
    }
  }

  // Adds a donor key to an object found by the same descent as mutate_once (the root if none).
  template <class J>
  void add_donor(J& root) {
    J* target = root.is_object() ? &root : nullptr;
    std::string path, target_path;
    J* node = &root;
    while ((node->is_object() || node->is_array()) && !node->empty() && pick(3) != 0) {
      auto it = node->begin();
      const size_t index = pick(node->size());
      std::advance(it, long(index));
      path += "/" + (node->is_object() ? it.key() : std::to_string(index));
      node = &*it;
      if (node->is_object()) {
        target = node;
        target_path = path;
      }
    }
    if (!target) return;
    const auto& [key, value] = donors_[pick(donors_.size())];
    J v = pick(2) ? J::parse(value) : replacement(root);
    log_ += target_path + "/" + key + ": added " + dump(v).substr(0, 80) + "\n";
    (*target)[key] = std::move(v);
  }

  std::mt19937_64 rng_;
  std::string log_;
  std::vector<std::pair<std::string, std::string>> donors_;
};

// Text-level mutations for inputs that are not JSON (chat templates): deletes, duplicates or
// moves a random slice, or inserts one of the template language's delimiters.
std::string mutate_text(const std::string& text, std::mt19937_64& rng, int count);

}  // namespace portllm::robustness
