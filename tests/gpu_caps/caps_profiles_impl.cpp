// The capability profiles are pure C++ in the GPU tree, which is only built with a GPU toolkit.
// Without it (CI), compile the profiles into this test so they are checked on every machine.
#if !defined(PORTLLM_HAVE_GPU)
#include "backends/gpu/caps_profiles.cpp"  // NOLINT(bugprone-suspicious-include)
#endif
