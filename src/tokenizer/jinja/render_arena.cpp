#include "tokenizer/jinja/render_arena.h"

#include <unordered_set>

namespace portllm::tok::jinja {

namespace {
thread_local RenderArena* current = nullptr;
thread_local size_t collected_last = 0;

// Marks every list and dict reachable from v (iteratively: a deep structure must not recurse).
void mark(const Value& root, std::unordered_set<const void*>& seen) {
  std::vector<const Value*> todo{&root};
  while (!todo.empty()) {
    const Value* v = todo.back();
    todo.pop_back();
    if (v->is_list() && seen.insert(v->list.get()).second)
      for (const Value& x : *v->list) todo.push_back(&x);
    if (v->is_dict() && seen.insert(v->dict.get()).second)
      for (const auto& kv : v->dict->items) todo.push_back(&kv.second);
  }
}
}  // namespace

RenderArena::RenderArena(const std::vector<std::pair<std::string, Value>>& roots) : roots_(roots), outer_(current) {
  current = this;
}

RenderArena::~RenderArena() {
  current = outer_;
  collect();
}

void RenderArena::track(const std::shared_ptr<List>& l) {
  if (current) current->lists_.push_back(l);
}
void RenderArena::track(const std::shared_ptr<Dict>& d) {
  if (current) current->dicts_.push_back(d);
}

void track_container(const std::shared_ptr<List>& l) { RenderArena::track(l); }
void track_container(const std::shared_ptr<Dict>& d) { RenderArena::track(d); }

size_t RenderArena::last_collected() { return collected_last; }

void RenderArena::collect() {
  collected_last = 0;
  std::unordered_set<const void*> reached;
  bool marked = false;
  auto reachable = [&](const void* p) {
    if (!marked) {
      for (const auto& kv : roots_) mark(kv.second, reached);
      marked = true;
    }
    return reached.count(p) > 0;
  };
  // Emptying one container may free others; each is locked while it is emptied, and its contents
  // are destroyed after it is released from the container (swap), so nothing is freed mid-clear.
  for (const auto& w : lists_)
    if (auto l = w.lock(); l && !reachable(l.get())) {
      List gone;
      gone.swap(*l);
      ++collected_last;
    }
  for (const auto& w : dicts_)
    if (auto d = w.lock(); d && !reachable(d.get())) {
      std::vector<std::pair<std::string, Value>> gone;
      gone.swap(d->items);
      ++collected_last;
    }
}

}  // namespace portllm::tok::jinja
