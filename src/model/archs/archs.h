// One registration function per file in model/archs/ (called from model/arch_registry.cpp).
#pragma once

namespace portllm {

void register_llama_archs();  // LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM

}  // namespace portllm
