# The GPU tree (src/backends/gpu): one source tree, built for CUDA now (MUSA: cmake/musa.cmake).
set(PORTLLM_HAVE_GPU OFF)
if(PORTLLM_GPU STREQUAL "auto" OR PORTLLM_GPU STREQUAL "cuda")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(PORTLLM_HAVE_GPU ON)
  elseif(PORTLLM_GPU STREQUAL "cuda")
    message(FATAL_ERROR "PORTLLM_GPU=cuda but no CUDA compiler was found (set CUDACXX or PATH)")
  endif()
endif()

file(GLOB_RECURSE PORTLLM_GPU_SOURCES CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/src/backends/gpu/*.cu ${CMAKE_SOURCE_DIR}/src/backends/gpu/*.cpp)
if(PORTLLM_GPU STREQUAL "musa")
  include(${CMAKE_SOURCE_DIR}/cmake/musa.cmake)  # MUSA SDK or its CUDA emulation (issue 10)
elseif(PORTLLM_HAVE_GPU AND PORTLLM_GPU_SOURCES)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  find_package(CUDAToolkit REQUIRED)
  add_library(portllm_backends_gpu STATIC ${PORTLLM_GPU_SOURCES})
  # C++20 like the rest of the tree (CMake < 3.26 does not know nvcc's C++20 flag).
  set_target_properties(portllm_backends_gpu PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON CUDA_EXTENSIONS OFF)
  target_include_directories(portllm_backends_gpu PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_compile_definitions(portllm_backends_gpu PUBLIC PORTLLM_HAVE_GPU=1 PORTLLM_GPU_CUDA=1)
  target_compile_options(portllm_backends_gpu PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wno-unused-parameter>)
  # The CUDA runtime is linked statically: it loads the driver (libcuda.so) lazily, so the binary
  # starts, and the CPU backend works, on machines with the toolkit but no GPU or driver (CI).
  # cuBLASLt: the block-scaled FP8 (W8A8) GEMM of matmul_fp8_w8a8.cpp, the tuned GEMM of matmul_lt_tuned.cpp.
  target_link_libraries(portllm_backends_gpu PUBLIC portllm_ops CUDA::cudart_static CUDA::cublas CUDA::cublasLt)
  list(APPEND PORTLLM_AREA_TARGETS portllm_backends_gpu)
  message(STATUS "portllm: GPU backend ON (CUDA ${CMAKE_CUDA_COMPILER_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "portllm: GPU backend OFF")
endif()

add_library(portllm_all INTERFACE)
target_link_libraries(portllm_all INTERFACE ${PORTLLM_AREA_TARGETS})
