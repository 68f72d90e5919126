# The GPU tree built for Moore Threads MUSA GPUs (included from cmake/gpu.cmake when
# PORTLLM_GPU=musa). Same sources (PORTLLM_GPU_SOURCES), same target (portllm_backends_gpu) as the
# CUDA build; the vendor layer switches to src/backends/gpu/vendor/musa.h via PORTLLM_GPU_MUSA.
#
# Two ways to build:
#  - MUSA SDK (MUSA_PATH / MUSA_HOME / /usr/local/musa): every GPU source is compiled as MUSA by the
#    SDK's clang (-x musa -mtgpu --cuda-gpu-arch=mp_XX per MUSA_ARCHITECTURES). The SDK's clang must
#    be the project's C++ compiler (configure with -DCMAKE_CXX_COMPILER=$MUSA_PATH/bin/clang++), as
#    CMake has one C++ compiler per project; links musart, mublas (+ mublasLt, mccl when present).
#  - Emulation (-DPORTLLM_MUSA_EMULATE=ON, tests only): the MUSA headers come from
#    tests/musa_emulation/include and map onto CUDA, so nvcc compiles the MUSA code path and it runs
#    on an NVIDIA GPU under the profile PORTLLM_MUSA_ARCH selects (docs/backends/musa.md).
option(PORTLLM_MUSA_EMULATE "Build the MUSA code path over CUDA with test-only MUSA headers" OFF)
set(MUSA_ARCHITECTURES "22;31" CACHE STRING "MUSA archs: 21 (MTT S80/S3000), 22 (S4000), 31 (S5000)")

if(NOT PORTLLM_GPU_SOURCES)
  message(FATAL_ERROR "PORTLLM_GPU=musa: no GPU sources under ${CMAKE_SOURCE_DIR}/src/backends/gpu")
endif()

if(PORTLLM_MUSA_EMULATE)
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "PORTLLM_MUSA_EMULATE=ON needs a CUDA compiler (nvcc): set CUDACXX or PATH")
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  find_package(CUDAToolkit REQUIRED)
  add_library(portllm_backends_gpu STATIC ${PORTLLM_GPU_SOURCES})
  set_target_properties(portllm_backends_gpu PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON CUDA_EXTENSIONS OFF)
  # The emulation headers come first so <musa_runtime.h> etc. resolve to them.
  target_include_directories(portllm_backends_gpu BEFORE PUBLIC
    ${CMAKE_SOURCE_DIR}/tests/musa_emulation/include)
  target_compile_definitions(portllm_backends_gpu PUBLIC PORTLLM_MUSA_EMULATE=1)
  target_compile_options(portllm_backends_gpu PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wno-unused-parameter>)
  target_link_libraries(portllm_backends_gpu PUBLIC CUDA::cudart_static CUDA::cublas)
  set(_musa_what "emulated over CUDA ${CMAKE_CUDA_COMPILER_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES}")
else()
  # Find the SDK.
  set(_musa_root "")
  foreach(_c "${MUSA_PATH}" "$ENV{MUSA_PATH}" "$ENV{MUSA_HOME}" "/usr/local/musa")
    if(_c AND EXISTS "${_c}/include/musa_runtime.h")
      set(_musa_root "${_c}")
      break()
    endif()
  endforeach()
  if(NOT _musa_root)
    message(FATAL_ERROR "PORTLLM_GPU=musa: no MUSA SDK found (looked for include/musa_runtime.h under "
                        "MUSA_PATH, MUSA_HOME and /usr/local/musa). Install the SDK and set MUSA_PATH, "
                        "or use -DPORTLLM_MUSA_EMULATE=ON to build the MUSA code path over CUDA (tests).")
  endif()
  set(MUSA_PATH "${_musa_root}" CACHE PATH "MUSA SDK root" FORCE)
  get_filename_component(_cxx_dir "${CMAKE_CXX_COMPILER}" DIRECTORY)
  get_filename_component(_cxx_dir "${_cxx_dir}" REALPATH)
  get_filename_component(_sdk_bin "${MUSA_PATH}/bin" REALPATH)
  if(NOT _cxx_dir STREQUAL _sdk_bin)
    message(FATAL_ERROR "PORTLLM_GPU=musa: the GPU tree is compiled by the MUSA SDK's clang; configure with "
                        "-DCMAKE_C_COMPILER=${MUSA_PATH}/bin/clang -DCMAKE_CXX_COMPILER=${MUSA_PATH}/bin/clang++ "
                        "(found ${CMAKE_CXX_COMPILER})")
  endif()
  # One warp size per binary: kernels' host launch code and device code share kWarpSize.
  # MP21/MP22 run 128-wide warps; an MP31-only build uses 32. GpuDevice refuses a device whose
  # reported warp size differs, naming this option.
  set(_ws 32)
  foreach(_a ${MUSA_ARCHITECTURES})
    if(NOT _a MATCHES "^(21|22|31)$")
      message(FATAL_ERROR "MUSA_ARCHITECTURES: unknown arch '${_a}' (known: 21, 22, 31)")
    endif()
    if(_a LESS 31)
      set(_ws 128)
    endif()
  endforeach()
  set(PORTLLM_MUSA_WARP_SIZE ${_ws} CACHE STRING "warp size the MUSA kernels are compiled for")
  set(_flags -fsigned-char -x musa -mtgpu)
  foreach(_a ${MUSA_ARCHITECTURES})
    list(APPEND _flags --cuda-gpu-arch=mp_${_a})
  endforeach()
  set_source_files_properties(${PORTLLM_GPU_SOURCES} PROPERTIES LANGUAGE CXX)
  add_library(portllm_backends_gpu STATIC ${PORTLLM_GPU_SOURCES})
  target_compile_options(portllm_backends_gpu PRIVATE ${_flags} -Wno-unused-parameter)
  target_include_directories(portllm_backends_gpu SYSTEM PUBLIC ${MUSA_PATH}/include)
  target_compile_definitions(portllm_backends_gpu PUBLIC PORTLLM_MUSA_WARP_SIZE=${PORTLLM_MUSA_WARP_SIZE})
  target_link_directories(portllm_backends_gpu PUBLIC ${MUSA_PATH}/lib)
  target_link_libraries(portllm_backends_gpu PUBLIC musart mublas)
  foreach(_lib mublasLt mccl)
    find_library(PORTLLM_MUSA_${_lib} ${_lib} PATHS ${MUSA_PATH}/lib NO_DEFAULT_PATH)
    if(PORTLLM_MUSA_${_lib})
      target_link_libraries(portllm_backends_gpu PUBLIC ${PORTLLM_MUSA_${_lib}})
    endif()
  endforeach()
  set(_musa_what "MUSA SDK ${MUSA_PATH}, archs ${MUSA_ARCHITECTURES}, warp size ${PORTLLM_MUSA_WARP_SIZE}")
endif()

set_target_properties(portllm_backends_gpu PROPERTIES CXX_STANDARD 20)
target_include_directories(portllm_backends_gpu PUBLIC ${CMAKE_SOURCE_DIR}/src)
target_compile_definitions(portllm_backends_gpu PUBLIC PORTLLM_HAVE_GPU=1 PORTLLM_GPU_MUSA=1)
target_link_libraries(portllm_backends_gpu PUBLIC portllm_ops)
set(PORTLLM_HAVE_GPU ON)
list(APPEND PORTLLM_AREA_TARGETS portllm_backends_gpu)
message(STATUS "portllm: GPU backend ON (musa: ${_musa_what})")
