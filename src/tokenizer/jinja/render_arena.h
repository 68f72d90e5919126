// The lists and dicts a render makes, collected when it ends. Values share containers by
// reference counts, which cannot free a cycle: `{% set ns.x = ns %}` or a list appended to
// itself would leak its containers on every render, and a server renders a template per request.
// While a RenderArena is alive on a thread, every list and dict made on it is tracked (weakly);
// when the arena ends (after the render's scopes are gone), the tracked containers still alive
// that the caller's variables do not reach are held only by cycles, and are emptied, which frees
// them. What the caller's variables reach (a dict a template appended to `messages`) is kept.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace portllm::tok::jinja {

class RenderArena {
 public:
  explicit RenderArena(const std::vector<std::pair<std::string, Value>>& roots);
  ~RenderArena();
  RenderArena(const RenderArena&) = delete;
  RenderArena& operator=(const RenderArena&) = delete;

  // Called where lists and dicts are made (value.h: track_container); no-op without an arena on
  // this thread.
  static void track(const std::shared_ptr<List>& l);
  static void track(const std::shared_ptr<Dict>& d);

  // Containers emptied by the last arena that ended on this thread (tests).
  static size_t last_collected();

 private:
  void collect();

  const std::vector<std::pair<std::string, Value>>& roots_;
  std::vector<std::weak_ptr<List>> lists_;
  std::vector<std::weak_ptr<Dict>> dicts_;
  RenderArena* outer_;
};

}  // namespace portllm::tok::jinja
