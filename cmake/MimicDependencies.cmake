# Finds every dependency once. scripts/setup.sh installs them (Debian packages + pip torch).

find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(Protobuf REQUIRED)
find_package(simdjson REQUIRED)
find_package(CLI11 QUIET CONFIG)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()

if(MIMIC_FUZZ_ONLY)
  return()  # the readers need no LibTorch
endif()

# LibTorch: the pip wheel's CMake package unless CMAKE_PREFIX_PATH already points at one.
if(NOT Torch_DIR)
  execute_process(
    COMMAND python3 -c "import torch; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE _mimic_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET)
  if(_mimic_torch_prefix)
    list(APPEND CMAKE_PREFIX_PATH ${_mimic_torch_prefix})
  endif()
endif()
# Naming the architectures skips Caffe2's try_run GPU detection (which fails without a GPU).
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
endif()
find_package(Torch REQUIRED)

# The one GPU switch: on exactly when the LibTorch found was built with CUDA.
if(CAFFE2_USE_CUDA OR TARGET torch_cuda)
  set(MIMIC_WITH_CUDA ON)
else()
  set(MIMIC_WITH_CUDA OFF)
endif()
message(STATUS "Mimic: LibTorch ${Torch_VERSION} at ${Torch_DIR}; CUDA ${MIMIC_WITH_CUDA}")

# LibTorch's imported targets carry their own compile flags (the CXX11 ABI macro among them).
add_library(mimic_torch INTERFACE)
target_link_libraries(mimic_torch INTERFACE ${TORCH_LIBRARIES})
target_compile_options(mimic_torch INTERFACE ${TORCH_CXX_FLAGS})
# The pip wheel ships an old copy of protobuf's headers in its include folder, which would
# shadow the system protobuf that proto/ is generated for. A folder holding only a link to the
# system's google/ headers, searched first, keeps them consistent.
set(_mimic_pb_shadow ${CMAKE_BINARY_DIR}/protobuf_include)
file(MAKE_DIRECTORY ${_mimic_pb_shadow})
file(CREATE_LINK ${Protobuf_INCLUDE_DIR}/google ${_mimic_pb_shadow}/google SYMBOLIC)
target_include_directories(mimic_torch BEFORE INTERFACE ${_mimic_pb_shadow})
