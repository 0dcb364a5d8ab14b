# CUDA backend detection, included from the top level (the CUDA language must be enabled where every
# target that links the backend can see it).
#
# The backend is one shared library, the CUDA module libdpstudio-cuda.so (engine/runtime/cuda), the only
# target that links cudart, cuBLAS and NCCL; programs load it at run time (engine/base/gpus_module.h), so
# they start where CUDA is missing.
#
# Result variables:
#   DPS_HAVE_CUDA          ON when the CUDA module (cuBLAS + our kernels) is built
#   DPS_HAVE_NCCL          ON when the module has NCCL communication as well (target NCCL::nccl)
#   DPS_CUDA_WHY_NOT       why the module is not built (empty when it is)
#   DPS_CUDA_MODULE_SUBDIR where the module lives, relative to the install prefix and to the build folder:
#                          <libdir>/dpstudio (programs in bin/ and libexec/ look in ../<subdir>)
# With DPS_REQUIRE_CUDA (CI: the environment variable DPS_REQUIRE_CUDA=1) configuration fails instead of
# building without the module.
set(DPS_HAVE_CUDA OFF)
set(DPS_HAVE_NCCL OFF)
set(DPS_CUDA_WHY_NOT "")
file(RELATIVE_PATH DPS_CUDA_MODULE_SUBDIR ${CMAKE_INSTALL_PREFIX} ${CMAKE_INSTALL_FULL_LIBDIR}/dpstudio)

function(dps_find_nccl)
  set(hints ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
  if(DEFINED ENV{NCCL_HOME})
    list(PREPEND hints $ENV{NCCL_HOME})
  endif()
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${hints} PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${hints} PATH_SUFFIXES lib lib64)
  if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
    return()
  endif()
  file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h version_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  foreach(line IN LISTS version_lines)
    if(line MATCHES "^#define NCCL_(MAJOR|MINOR|PATCH) +([0-9]+)")
      set(NCCL_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
    endif()
  endforeach()
  if(NOT TARGET NCCL::nccl)
    add_library(NCCL::nccl SHARED IMPORTED GLOBAL)
    set_target_properties(NCCL::nccl PROPERTIES
      IMPORTED_LOCATION ${NCCL_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
  endif()
  set(DPS_NCCL_VERSION "${NCCL_MAJOR}.${NCCL_MINOR}.${NCCL_PATCH}" PARENT_SCOPE)
  set(DPS_HAVE_NCCL ON PARENT_SCOPE)
endfunction()

if(NOT DPS_WITH_CUDA)
  set(DPS_CUDA_WHY_NOT "DPS_WITH_CUDA is OFF")
else()
  # nvcc: CMAKE_CUDA_COMPILER or CUDACXX when given, else the toolkit's usual homes, else PATH.
  if(CMAKE_CUDA_COMPILER AND NOT EXISTS "${CMAKE_CUDA_COMPILER}")
    message(STATUS "CMAKE_CUDA_COMPILER ${CMAKE_CUDA_COMPILER} does not exist: looking for nvcc elsewhere")
    unset(CMAKE_CUDA_COMPILER CACHE)
    unset(CMAKE_CUDA_COMPILER)
  endif()
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(DPS_NVCC nvcc
      HINTS $ENV{CUDA_HOME}/bin $ENV{CUDA_PATH}/bin /usr/local/cuda/bin /opt/cuda/bin
      DOC "nvcc of the CUDA toolkit the backend is built with")
    if(DPS_NVCC)
      set(CMAKE_CUDA_COMPILER ${DPS_NVCC} CACHE FILEPATH "CUDA compiler")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    set(DPS_CUDA_WHY_NOT "no CUDA compiler (nvcc) found in $CUDA_HOME/bin, /usr/local/cuda/bin or PATH; pass -DCMAKE_CUDA_COMPILER=/path/to/nvcc")
  else()
    # A100 (sm_80) and H100/H200/H800 (sm_90) code, plus compute_90 PTX that newer GPUs (B200) JIT,
    # unless the user chose; unset would give sm_75, and `native` fails on a machine without a GPU.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES "80-real;90" CACHE STRING
        "CUDA architectures (80-real = sm_80 code; 90 = sm_90 code + compute_90 PTX)")
    endif()
    # Only the shared cudart, or static and shared both land on the link line.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    if(CMAKE_CXX_COMPILER_LAUNCHER AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
      set(CMAKE_CUDA_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cublas)
      set(DPS_CUDA_WHY_NOT "nvcc found, but the CUDA toolkit's libraries (cudart, cuBLAS) were not")
    else()
      set(DPS_HAVE_CUDA ON)
      dps_find_nccl()
      if(NOT DPS_HAVE_NCCL)
        message(STATUS "NCCL not found (nccl.h, libnccl): the CUDA backend communicates through MPI only")
      endif()
    endif()
  endif()
endif()

if(DPS_HAVE_CUDA)
  set(nccl_text "no NCCL")
  if(DPS_HAVE_NCCL)
    set(nccl_text "NCCL ${DPS_NCCL_VERSION}")
  endif()
  message(STATUS "CUDA backend: built as the module ${DPS_CUDA_MODULE_SUBDIR}/libdpstudio-cuda.so "
    "(CUDA ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, ${nccl_text})")
elseif(DPS_REQUIRE_CUDA)
  message(FATAL_ERROR "DPS_REQUIRE_CUDA is set, but the CUDA backend cannot be built: ${DPS_CUDA_WHY_NOT}")
else()
  message(STATUS "CUDA backend: not built (${DPS_CUDA_WHY_NOT})")
endif()
if(DPS_REQUIRE_CUDA AND NOT DPS_HAVE_NCCL)
  message(FATAL_ERROR "DPS_REQUIRE_CUDA is set, but NCCL (nccl.h, libnccl) was not found in the CUDA toolkit "
    "folders or $NCCL_HOME")
endif()
add_feature_info(CUDA DPS_HAVE_CUDA "the cuda backend: cuBLAS GEMMs, our kernels, CUDA events")
add_feature_info(NCCL DPS_HAVE_NCCL "nccl communication between ranks that each have their own GPU")
