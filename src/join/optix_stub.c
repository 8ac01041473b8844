/*
 * optix_stub.c: what the join module's OptiX code (src/join/optix/launch.cu) provides, for builds
 * without OptiX headers. An OPTIX context cannot be created in such a build and registry.c lists
 * no OptiX tables, so no join ever launches an OptiX program.
 */
#include "join/join.h"

#ifndef RDX_HAVE_OPTIX

int64_t rdx_jn_optix_launches(void) { return 0; }

#else
typedef int rdx_join_optix_stub_unused_; /* ISO C forbids an empty translation unit */
#endif
