// One registration function per file in model/archs/ (called from model/arch_registry.cpp).
#pragma once

namespace portllm {

void register_llama_archs();  // LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MistralForCausalLM
void register_qwen3_moe_archs();  // Qwen3MoeForCausalLM
void register_deepseek_archs();   // DeepseekV2ForCausalLM, DeepseekV3ForCausalLM
void register_qwen3_next_archs();  // Qwen3NextForCausalLM, Qwen3_5[Moe]ForCausalLM, Qwen3_5[Moe]ForConditionalGeneration

}  // namespace portllm
