#include "engine/engine.h"

#include "engine/engine_impl.h"

namespace portllm {

std::unique_ptr<Engine> Engine::create(const EngineConfig& cfg) { return std::make_unique<EngineImpl>(cfg); }

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
    case FinishReason::Error: return "error";
  }
  return "?";
}

}  // namespace portllm
