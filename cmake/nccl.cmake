# NCCL, optional: the device all-to-all of MPI ranks whose contexts are GPUs' (src/dist/nccl.c).
# Looked for only when the CUDA backend is built and MPI was found, since NCCL serves nothing else.
# RAYDEX_NCCL: AUTO (use NCCL when found), OFF (never), ON (fail when not found).
#
# The header and the library are taken from the first of these places that has both, so that they
# never come from two different installs:
#   1. NCCL_ROOT, the CMake variable, or else the environment variable at the first configure
#      (<root>/include, <root>/lib);
#   2. CMAKE_PREFIX_PATH and the system (/usr/include/nccl.h with libnccl.so, e.g. Debian's or
#      NVIDIA's libnccl-dev);
#   3. the nvidia-nccl Python wheel (pip's nvidia-nccl-cu12, which PyTorch installs), found through
#      ${Python3_EXECUTABLE} (-DPython3_EXECUTABLE=... picks the environment): its nvidia/nccl/
#      holds include/nccl.h and lib/libnccl.so.2, without the unversioned libnccl.so.
# Sets RAYDEX_HAVE_NCCL, RAYDEX_NCCL_INCLUDE_DIR, RAYDEX_NCCL_LIBRARY, RAYDEX_NCCL_VERSION ("2.28.3",
# from nccl.h) and RAYDEX_NCCL_FROM (where it was found), and the imported target raydex_nccl (the
# library, its header and the CUDA runtime's headers, which nccl.h includes).

set(RAYDEX_NCCL "AUTO" CACHE STRING "Use NCCL for the GPU-to-GPU traffic of MPI ranks: AUTO (when found), ON or OFF")
set_property(CACHE RAYDEX_NCCL PROPERTY STRINGS AUTO ON OFF)
# NCCL_ROOT from the environment becomes the cache's default, so that a re-configure (which a build
# may start, without that environment) finds the same NCCL
set(NCCL_ROOT "$ENV{NCCL_ROOT}" CACHE PATH "NCCL install root (its include/nccl.h and lib/libnccl.so); default: $NCCL_ROOT")

set(RAYDEX_HAVE_NCCL OFF)
set(RAYDEX_NCCL_INCLUDE_DIR "")
set(RAYDEX_NCCL_LIBRARY "")
set(RAYDEX_NCCL_VERSION "")
set(RAYDEX_NCCL_FROM "")

# Both files under one place: nccl.h and the library (libnccl.so, or the wheel's libnccl.so.2).
# where: a list of roots, or "DEFAULT" for CMake's own search (CMAKE_PREFIX_PATH, then the system).
function(raydex_nccl_look where)
  if(where STREQUAL "DEFAULT")
    find_path(_inc nccl.h NO_CACHE)
    find_library(_lib NAMES nccl libnccl.so.2 NO_CACHE)
  else()
    find_path(_inc nccl.h HINTS ${where} PATH_SUFFIXES include NO_DEFAULT_PATH NO_CACHE)
    find_library(_lib NAMES nccl libnccl.so.2 HINTS ${where} PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH NO_CACHE)
  endif()
  if(_inc AND _lib)
    set(RAYDEX_NCCL_INCLUDE_DIR "${_inc}" PARENT_SCOPE)
    set(RAYDEX_NCCL_LIBRARY "${_lib}" PARENT_SCOPE)
  endif()
endfunction()

if(NOT RAYDEX_NCCL STREQUAL "OFF")
  if(NOT (RAYDEX_HAVE_CUDA AND RAYDEX_HAVE_MPI))
    if(RAYDEX_NCCL STREQUAL "ON")
      message(FATAL_ERROR "RAYDEX_NCCL=ON needs the CUDA backend and MPI (cuda ${RAYDEX_HAVE_CUDA}, mpi ${RAYDEX_HAVE_MPI})")
    endif()
  else()
    if(NCCL_ROOT)
      raydex_nccl_look("${NCCL_ROOT}")
      set(RAYDEX_NCCL_FROM "NCCL_ROOT")
    endif()
    if(NOT RAYDEX_NCCL_LIBRARY)
      raydex_nccl_look(DEFAULT)
      set(RAYDEX_NCCL_FROM "CMAKE_PREFIX_PATH or the system")
    endif()
    if(NOT RAYDEX_NCCL_LIBRARY)
      if(NOT Python3_EXECUTABLE)
        find_package(Python3 QUIET COMPONENTS Interpreter)
      endif()
      if(Python3_EXECUTABLE)
        execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import nvidia.nccl, os; print(nvidia.nccl.__path__[0])"
                        OUTPUT_VARIABLE _wheel OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_QUIET)
        if(_rc EQUAL 0 AND IS_DIRECTORY "${_wheel}")
          raydex_nccl_look("${_wheel}")
          set(RAYDEX_NCCL_FROM "the nvidia-nccl wheel of ${Python3_EXECUTABLE}")
        endif()
      endif()
    endif()
    if(RAYDEX_NCCL_LIBRARY)
      file(STRINGS "${RAYDEX_NCCL_INCLUDE_DIR}/nccl.h" _v REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
      string(REGEX REPLACE ".*NCCL_MAJOR +([0-9]+).*" "\\1" _major "${_v}")
      string(REGEX REPLACE ".*NCCL_MINOR +([0-9]+).*" "\\1" _minor "${_v}")
      string(REGEX REPLACE ".*NCCL_PATCH +([0-9]+).*" "\\1" _patch "${_v}")
      set(RAYDEX_NCCL_VERSION "${_major}.${_minor}.${_patch}")
      set(RAYDEX_HAVE_NCCL ON)
      # The library and its header; nccl.h includes cuda_runtime.h, so the toolkit's headers come
      # along (plain C files see them only through this). SHARED IMPORTED, so that the build tree's
      # programs get the library's directory in their RPATH (the wheel's is off the loader's path).
      add_library(raydex_nccl SHARED IMPORTED)
      set_target_properties(raydex_nccl PROPERTIES IMPORTED_LOCATION "${RAYDEX_NCCL_LIBRARY}"
                            INTERFACE_INCLUDE_DIRECTORIES "${RAYDEX_NCCL_INCLUDE_DIR}"
                            INTERFACE_LINK_LIBRARIES CUDA::toolkit)
    elseif(RAYDEX_NCCL STREQUAL "ON")
      message(FATAL_ERROR "RAYDEX_NCCL=ON but no NCCL was found (nccl.h and libnccl.so under NCCL_ROOT, "
                          "CMAKE_PREFIX_PATH or the system, or the nvidia-nccl wheel of Python3_EXECUTABLE)")
    else()
      set(RAYDEX_NCCL_FROM "")
    endif()
  endif()
endif()
