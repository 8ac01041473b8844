# cmake/optix.cmake: the OptiX backend (included by CMakeLists.txt when RAYDEX_OPTIX_DIR has
# include/optix.h). Each module's device programs (src/<module>/optix/programs.cu: rt's own, the
# keys module's and the join module's) are compiled to OptiX-IR by nvcc at build time and embedded
# in the library as a byte array (optix_ir/rdx_<module>_optix_ir.h, made by cmake/bin2h.cmake),
# so the library needs no file at run time; the OptiX runtime itself comes with the NVIDIA driver
# and is loaded by optixInit(). rt makes the OptiX modules and pipelines from the arrays
# (rdx_optix_launch).
set(RDX_OPTIX_IR_DIR ${CMAKE_BINARY_DIR}/optix_ir)
file(MAKE_DIRECTORY ${RDX_OPTIX_IR_DIR})
# OptiX-IR is compiled for a virtual architecture; OptiX finishes it for the device at run time.
# compute_75 is the oldest CUDA 13 supports and the first with RT cores (Turing).
set(RAYDEX_OPTIX_IR_ARCH "compute_75" CACHE STRING "virtual architecture of the embedded OptiX-IR")
set(RDX_OPTIX_IR_HEADERS)
set(RDX_OPTIX_PROGRAMS)

# rdx_optix_embed(module): src/<module>/optix/programs.cu -> the array rdx_<module>_optix_ir in
# optix_ir/rdx_<module>_optix_ir.h. The programs may include headers of rt, core and their module.
function(rdx_optix_embed module)
  set(src ${CMAKE_SOURCE_DIR}/src/${module}/optix/programs.cu)
  set(ir ${RDX_OPTIX_IR_DIR}/${module}_programs.optixir)
  set(header ${RDX_OPTIX_IR_DIR}/rdx_${module}_optix_ir.h)
  file(GLOB deps CONFIGURE_DEPENDS
       ${CMAKE_SOURCE_DIR}/src/rt/*.h ${CMAKE_SOURCE_DIR}/src/rt/optix/*.h ${CMAKE_SOURCE_DIR}/src/rt/optix/*.cuh
       ${CMAKE_SOURCE_DIR}/src/${module}/*.h ${CMAKE_SOURCE_DIR}/src/${module}/optix/*.h
       ${CMAKE_SOURCE_DIR}/src/core/core.h ${CMAKE_SOURCE_DIR}/include/raydex.h)
  add_custom_command(
    OUTPUT ${ir}
    COMMAND ${CMAKE_CUDA_COMPILER} -optix-ir -std=c++17 -arch=${RAYDEX_OPTIX_IR_ARCH} -rdc=true -lineinfo
            -I${RAYDEX_OPTIX_DIR}/include -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src
            -I${CMAKE_SOURCE_DIR}/src/core ${src} -o ${ir}
    DEPENDS ${src} ${deps}
    COMMENT "OptiX-IR: src/${module}/optix/programs.cu"
    VERBATIM)
  add_custom_command(
    OUTPUT ${header}
    COMMAND ${CMAKE_COMMAND} -DIN=${ir} -DOUT=${header} -DNAME=rdx_${module}_optix_ir
            -P ${CMAKE_SOURCE_DIR}/cmake/bin2h.cmake
    DEPENDS ${ir} ${CMAKE_SOURCE_DIR}/cmake/bin2h.cmake
    COMMENT "embedding the OptiX-IR of ${module}"
    VERBATIM)
  set(RDX_OPTIX_IR_HEADERS ${RDX_OPTIX_IR_HEADERS} ${header} PARENT_SCOPE)
  set(RDX_OPTIX_PROGRAMS ${RDX_OPTIX_PROGRAMS} ${src} PARENT_SCOPE)
endfunction()

rdx_optix_embed(rt)
rdx_optix_embed(keys)
rdx_optix_embed(join)
add_custom_target(raydex_optix_ir DEPENDS ${RDX_OPTIX_IR_HEADERS})

# The host side: rt's machinery (contexts, modules, pipelines, GAS, launches) and each module's
# launchers, everything under src/*/optix/ but the device programs.
file(GLOB RDX_OPTIX_HOST_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*/optix/*.cu ${CMAKE_SOURCE_DIR}/src/*/optix/*.c)
list(REMOVE_ITEM RDX_OPTIX_HOST_SOURCES ${RDX_OPTIX_PROGRAMS})
list(APPEND RAYDEX_SOURCES ${RDX_OPTIX_HOST_SOURCES})
