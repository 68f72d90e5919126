// env_switch is pure C++ in the GPU tree, which is only built with a GPU toolkit. Without it,
// compile it into this test so it is checked on every machine.
#if !defined(PORTLLM_HAVE_GPU)
#include "backends/gpu/env_switch.cpp"  // NOLINT(bugprone-suspicious-include)
#endif
