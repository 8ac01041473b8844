# cmake/optix.cmake: the OptiX backend (included by CMakeLists.txt when RAYDEX_OPTIX_DIR has
# include/optix.h). The device programs (src/rt/optix/programs.cu) are compiled to OptiX-IR by
# nvcc at build time and embedded in the library as a byte array (optix_ir/rdx_optix_ir.h, made
# by cmake/bin2h.cmake), so the library needs no file at run time; the OptiX runtime itself comes
# with the NVIDIA driver and is loaded by optixInit().
set(RDX_OPTIX_IR_DIR ${CMAKE_BINARY_DIR}/optix_ir)
file(MAKE_DIRECTORY ${RDX_OPTIX_IR_DIR})
set(RDX_OPTIX_PROGRAMS ${CMAKE_SOURCE_DIR}/src/rt/optix/programs.cu)
set(RDX_OPTIX_IR ${RDX_OPTIX_IR_DIR}/programs.optixir)
set(RDX_OPTIX_IR_HEADER ${RDX_OPTIX_IR_DIR}/rdx_optix_ir.h)
# OptiX-IR is compiled for a virtual architecture; OptiX finishes it for the device at run time.
# compute_75 is the oldest CUDA 13 supports and the first with RT cores (Turing).
set(RAYDEX_OPTIX_IR_ARCH "compute_75" CACHE STRING "virtual architecture of the embedded OptiX-IR")
file(GLOB RDX_OPTIX_PROGRAM_DEPS CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/src/rt/*.h ${CMAKE_SOURCE_DIR}/src/rt/optix/*.h ${CMAKE_SOURCE_DIR}/src/keys/*.h
     ${CMAKE_SOURCE_DIR}/src/core/core.h ${CMAKE_SOURCE_DIR}/include/raydex.h)
add_custom_command(
  OUTPUT ${RDX_OPTIX_IR}
  COMMAND ${CMAKE_CUDA_COMPILER} -optix-ir -std=c++17 -arch=${RAYDEX_OPTIX_IR_ARCH} -rdc=true -lineinfo
          -I${RAYDEX_OPTIX_DIR}/include -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src
          -I${CMAKE_SOURCE_DIR}/src/core ${RDX_OPTIX_PROGRAMS} -o ${RDX_OPTIX_IR}
  DEPENDS ${RDX_OPTIX_PROGRAMS} ${RDX_OPTIX_PROGRAM_DEPS}
  COMMENT "OptiX-IR: src/rt/optix/programs.cu"
  VERBATIM)
add_custom_command(
  OUTPUT ${RDX_OPTIX_IR_HEADER}
  COMMAND ${CMAKE_COMMAND} -DIN=${RDX_OPTIX_IR} -DOUT=${RDX_OPTIX_IR_HEADER} -DNAME=rdx_optix_ir
          -P ${CMAKE_SOURCE_DIR}/cmake/bin2h.cmake
  DEPENDS ${RDX_OPTIX_IR} ${CMAKE_SOURCE_DIR}/cmake/bin2h.cmake
  COMMENT "embedding the OptiX-IR"
  VERBATIM)
add_custom_target(raydex_optix_ir DEPENDS ${RDX_OPTIX_IR_HEADER})

# The host side of the backend: contexts, pipelines, GAS, launches.
file(GLOB RDX_OPTIX_HOST_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/rt/optix/*.cu ${CMAKE_SOURCE_DIR}/src/rt/optix/*.c)
list(REMOVE_ITEM RDX_OPTIX_HOST_SOURCES ${RDX_OPTIX_PROGRAMS})
list(APPEND RAYDEX_SOURCES ${RDX_OPTIX_HOST_SOURCES})
