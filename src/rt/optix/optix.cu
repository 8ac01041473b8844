/*
 * optix.cu: the OptiX backend's host side, which knows nothing of its users: loading OptiX
 * (optixInit, the runtime of the NVIDIA driver), the context's OptiX device context, modules made
 * from embedded OptiX-IR, one pipeline per rdx_optix_program (both made on first use), the
 * compacted GAS, the launch helper, and rdx_rt_trace's own pipeline (programs.cu), all on the
 * context's stream. A module's programs live in that module (DESIGN.md §4); it hands rt their
 * IR and entry names and its launch parameters, which begin with rdx_optix_base.
 *
 * Memory: GAS buffers, id maps and scratch go through the context's memory account. The few
 * hundred bytes of shader binding tables and the launch-parameter buffer are context state, like
 * the CUDA stream, and are not counted.
 *
 * Inactive primitives (a NaN coordinate; cgRX's unused slots) are left out before the GAS build,
 * with a map from GAS primitive to input index, so OptiX and the soft builders skip exactly the
 * same primitives whatever OptiX itself does with NaN vertices.
 *
 * Build flags: ALLOW_COMPACTION (then compacted, as the RX paper does) and PREFER_FAST_TRACE
 * (the scenes are static). Geometry flag REQUIRE_SINGLE_ANYHIT_CALL, so every triangle reaches
 * the any-hit program at most once.
 */
#include <stdio.h>
#include <string.h>

#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <optix.h>
#include <optix_function_table_definition.h>
#include <optix_stubs.h>
/* after the stubs, which it calls */
#include <optix_stack_size.h>

#include "core/cuda_util.cuh"
#include "rdx_rt_optix_ir.h"
#include "rt/bvh_hd.h"
#include "rt/optix/launch.h"

#define RDX_OPTIX(ctx, call, what)                                                                   \
  do {                                                                                               \
    OptixResult rdx_ox_ = (call);                                                                    \
    if (rdx_ox_ != OPTIX_SUCCESS)                                                                    \
      return rdx_fail((ctx), RDX_ERR_OPTIX, "%s: %s (%s)", (what), optixGetErrorName(rdx_ox_),      \
                      optixGetErrorString(rdx_ox_));                                                 \
  } while (0)

struct rdx_optix_gas {
  int kind;                    /* rdx_rt_prim_kind */
  OptixTraversableHandle handle;
  void *buffer;                /* the compacted GAS */
  size_t bytes;
  uint32_t *ids;               /* GAS primitive -> input index, NULL when all inputs were active */
  float *aabbs;                /* AABB scenes: boxes in GAS order (the intersection program reads them) */
  int64_t n_active;
};

namespace {

struct sbt_record {
  __align__(OPTIX_SBT_RECORD_ALIGNMENT) char header[OPTIX_SBT_RECORD_HEADER_SIZE];
};

struct pipe_state {
  const rdx_optix_program *prog; /* the program set this pipeline runs (NULL: slot free) */
  OptixPipeline pipeline;
  OptixProgramGroup groups[4]; /* raygen, miss, hit (triangles), hit (boxes) */
  int n_groups;
  CUdeviceptr sbt_buffer;      /* 4 records: raygen, miss, hit triangles, hit boxes */
  OptixShaderBindingTable sbt;
};

struct module_state {
  const unsigned char *ir;     /* the embedded OptiX-IR it was made from (NULL: slot free) */
  OptixModule module;
};

/* Program sets and IR blobs a context can hold: rt's one, and a few per user module. */
enum { MAX_PIPES = 8, MAX_MODULES = 4, MAX_PARAMS = 512 };

struct state {
  OptixDeviceContext dc;
  OptixPipelineCompileOptions pco;
  module_state modules[MAX_MODULES];
  pipe_state pipes[MAX_PIPES];
  CUdeviceptr d_params;        /* 2 x MAX_PARAMS bytes: the context's own stream's, the side stream's */
  unsigned max_prims;
};

int g_init = -1; /* optixInit result: -1 not tried, 0 failed, 1 ok */

int load_optix() {
  if (g_init < 0) g_init = optixInit() == OPTIX_SUCCESS ? 1 : 0;
  return g_init;
}

void log_cb(unsigned level, const char *tag, const char *message, void *user) {
  rdx_context *ctx = (rdx_context *)user;
  if (ctx && ctx->log_fn && level <= 2) {
    char buf[512];
    snprintf(buf, sizeof buf, "optix [%s]: %s", tag, message);
    ctx->log_fn(level <= 1 ? RDX_LOG_ERROR : RDX_LOG_WARN, buf, ctx->log_user);
  }
}

state *st_of(rdx_context *ctx) { return (state *)ctx->optix; }

/* The module of an embedded OptiX-IR, made on first use (OptiX compiles it for this GPU, then
 * keeps it in its disk cache): contexts that never trace pay nothing. */
rdx_status get_module(rdx_context *ctx, const rdx_optix_program *prog, OptixModule *out) {
  state *s = st_of(ctx);
  module_state *free_slot = NULL;
  for (int i = 0; i < MAX_MODULES; i++) {
    if (s->modules[i].ir == prog->ir) {
      *out = s->modules[i].module;
      return RDX_OK;
    }
    if (s->modules[i].ir == NULL && free_slot == NULL) free_slot = &s->modules[i];
  }
  if (free_slot == NULL)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_optix: more than %d OptiX-IR modules (%s)", MAX_MODULES, prog->name);
  OptixModuleCompileOptions mco = {};
  mco.maxRegisterCount = OPTIX_COMPILE_DEFAULT_MAX_REGISTER_COUNT;
  mco.optLevel = OPTIX_COMPILE_OPTIMIZATION_DEFAULT;
  mco.debugLevel = OPTIX_COMPILE_DEBUG_LEVEL_MINIMAL;
  char log[2048];
  size_t log_size = sizeof log;
  OptixResult r = optixModuleCreate(s->dc, &mco, &s->pco, (const char *)prog->ir, prog->ir_bytes, log, &log_size,
                                    &free_slot->module);
  if (r != OPTIX_SUCCESS)
    return rdx_fail(ctx, RDX_ERR_OPTIX, "rdx_optix: optixModuleCreate (%s): %s (%s)", prog->name, optixGetErrorName(r),
                    log);
  free_slot->ir = prog->ir;
  *out = free_slot->module;
  return RDX_OK;
}

rdx_status make_pipe(rdx_context *ctx, const rdx_optix_program *prog, pipe_state *p) {
  state *s = st_of(ctx);
  OptixModule module = NULL;
  RDX_CHECK(get_module(ctx, prog, &module));
  char log[2048];
  size_t log_size;
  OptixProgramGroupOptions pgo = {};
  OptixProgramGroupDesc d[4];
  memset(d, 0, sizeof d);
  d[0].kind = OPTIX_PROGRAM_GROUP_KIND_RAYGEN;
  d[0].raygen.module = module;
  d[0].raygen.entryFunctionName = prog->raygen;
  d[1].kind = OPTIX_PROGRAM_GROUP_KIND_MISS;
  d[1].miss.module = module;
  d[1].miss.entryFunctionName = "__miss__rdx";
  for (int h = 2; h < 4; h++) {
    d[h].kind = OPTIX_PROGRAM_GROUP_KIND_HITGROUP;
    if (prog->anyhit) {
      d[h].hitgroup.moduleAH = module;
      d[h].hitgroup.entryFunctionNameAH = prog->anyhit;
    }
    if (prog->closesthit) {
      d[h].hitgroup.moduleCH = module;
      d[h].hitgroup.entryFunctionNameCH = prog->closesthit;
    }
    if (h == 3) {
      d[h].hitgroup.moduleIS = module;
      d[h].hitgroup.entryFunctionNameIS = "__intersection__box";
    }
  }
  log_size = sizeof log;
  OptixResult r = optixProgramGroupCreate(s->dc, d, 4, &pgo, log, &log_size, p->groups);
  if (r != OPTIX_SUCCESS)
    return rdx_fail(ctx, RDX_ERR_OPTIX, "rdx_optix: program groups of pipeline %s: %s (%s)", prog->name,
                    optixGetErrorName(r), log);
  p->n_groups = 4;
  OptixPipelineLinkOptions plo = {};
  plo.maxTraceDepth = 1;
  log_size = sizeof log;
  r = optixPipelineCreate(s->dc, &s->pco, &plo, p->groups, 4, log, &log_size, &p->pipeline);
  if (r != OPTIX_SUCCESS)
    return rdx_fail(ctx, RDX_ERR_OPTIX, "rdx_optix: pipeline %s: %s (%s)", prog->name, optixGetErrorName(r), log);
  OptixStackSizes ss = {};
  for (int g = 0; g < 4; g++) RDX_OPTIX(ctx, optixUtilAccumulateStackSizes(p->groups[g], &ss, p->pipeline), "rdx_optix: stack sizes");
  unsigned dc_trav = 0, dc_state = 0, cont = 0;
  RDX_OPTIX(ctx, optixUtilComputeStackSizes(&ss, 1, 0, 0, &dc_trav, &dc_state, &cont), "rdx_optix: stack sizes");
  RDX_OPTIX(ctx, optixPipelineSetStackSize(p->pipeline, dc_trav, dc_state, cont, 1), "rdx_optix: stack size");
  /* the shader binding table: one record per group, no data */
  sbt_record rec[4];
  for (int g = 0; g < 4; g++) RDX_OPTIX(ctx, optixSbtRecordPackHeader(p->groups[g], &rec[g]), "rdx_optix: sbt");
  RDX_CUDA(ctx, cudaMalloc((void **)&p->sbt_buffer, sizeof rec), "rdx_optix: sbt");
  RDX_CUDA(ctx, cudaMemcpy((void *)p->sbt_buffer, rec, sizeof rec, cudaMemcpyHostToDevice), "rdx_optix: sbt");
  memset(&p->sbt, 0, sizeof p->sbt);
  p->sbt.raygenRecord = p->sbt_buffer;
  p->sbt.missRecordBase = p->sbt_buffer + sizeof(sbt_record);
  p->sbt.missRecordStrideInBytes = sizeof(sbt_record);
  p->sbt.missRecordCount = 1;
  p->sbt.hitgroupRecordBase = p->sbt_buffer + 2 * sizeof(sbt_record);
  p->sbt.hitgroupRecordStrideInBytes = sizeof(sbt_record);
  p->sbt.hitgroupRecordCount = 1;
  p->prog = prog;
  return RDX_OK;
}

/* The pipeline of prog, made on first use. A failed make leaves the slot free (its OptiX
 * objects, if any, are destroyed with the context). */
rdx_status get_pipe(rdx_context *ctx, const rdx_optix_program *prog, pipe_state **out) {
  state *s = st_of(ctx);
  pipe_state *free_slot = NULL;
  for (int i = 0; i < MAX_PIPES; i++) {
    if (s->pipes[i].prog == prog) {
      *out = &s->pipes[i];
      return RDX_OK;
    }
    if (s->pipes[i].prog == NULL && s->pipes[i].n_groups == 0 && free_slot == NULL) free_slot = &s->pipes[i];
  }
  if (free_slot == NULL)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_optix: more than %d pipelines (%s)", MAX_PIPES, prog->name);
  RDX_CHECK(make_pipe(ctx, prog, free_slot));
  *out = free_slot;
  return RDX_OK;
}

__global__ void active_kernel(int kind, const float *prims, int64_t n, uint8_t *active) {
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int ok = 1;
    for (int k = 0; k < w; k++) ok &= rdx_rt_finite(prims[i * w + k]);
    if (kind == RDX_RT_AABBS)
      for (int a = 0; a < 3; a++) ok &= prims[i * 6 + a] <= prims[i * 6 + 3 + a];
    active[i] = (uint8_t)ok;
  }
}

__global__ void gather_kernel(int kind, const float *prims, const uint32_t *ids, int64_t n, float *out) {
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    for (int k = 0; k < w; k++) out[i * w + k] = prims[(int64_t)ids[i] * w + k];
}

}  // namespace

/* ---- context ---- */

extern "C" int rdx_optix_built(void) { return 1; }

extern "C" int rdx_optix_usable(void) { return rdx_cuda_device_count() > 0 && load_optix(); }

extern "C" rdx_status rdx_optix_context_init(rdx_context *ctx) {
  if (rdx_cuda_device_count() == 0)
    return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_context_create: backend optix needs a CUDA GPU and none is visible");
  if (!load_optix())
    return rdx_fail(ctx, RDX_ERR_NO_BACKEND,
                    "rdx_context_create: optixInit failed (the NVIDIA driver's OptiX runtime, libnvoptix, is missing or "
                    "older than the OptiX %d.%d headers raydex was built with)",
                    OPTIX_VERSION / 10000, OPTIX_VERSION % 10000 / 100);
  state *s = (state *)calloc(1, sizeof(state));
  if (s == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_context_create: OptiX state");
  ctx->optix = s;
  RDX_CUDA(ctx, cudaFree(0), "rdx_context_create: CUDA context"); /* make the runtime's context current */
  OptixDeviceContextOptions o = {};
  o.logCallbackFunction = log_cb;
  o.logCallbackData = ctx;
  o.logCallbackLevel = 2;
  RDX_OPTIX(ctx, optixDeviceContextCreate(0, &o, &s->dc), "rdx_context_create: optixDeviceContextCreate");
  RDX_OPTIX(ctx, optixDeviceContextGetProperty(s->dc, OPTIX_DEVICE_PROPERTY_LIMIT_MAX_PRIMITIVES_PER_GAS, &s->max_prims,
                                               sizeof s->max_prims),
            "rdx_context_create: OptiX limits");
  s->pco.usesMotionBlur = 0;
  s->pco.traversableGraphFlags = OPTIX_TRAVERSABLE_GRAPH_FLAG_ALLOW_SINGLE_GAS;
  s->pco.numPayloadValues = 7;
  s->pco.numAttributeValues = 2;
  s->pco.exceptionFlags = OPTIX_EXCEPTION_FLAG_NONE;
  s->pco.pipelineLaunchParamsVariableName = "params";
  s->pco.usesPrimitiveTypeFlags = OPTIX_PRIMITIVE_TYPE_FLAGS_TRIANGLE | OPTIX_PRIMITIVE_TYPE_FLAGS_CUSTOM;
  RDX_CUDA(ctx, cudaMalloc((void **)&s->d_params, 2 * MAX_PARAMS), "rdx_context_create: OptiX parameters");
  return RDX_OK;
}

extern "C" void rdx_optix_context_fini(rdx_context *ctx) {
  state *s = st_of(ctx);
  if (s == NULL) return;
  if (ctx->stream) cudaStreamSynchronize(rdx_stream(ctx));
  for (int p = 0; p < MAX_PIPES; p++) {
    if (s->pipes[p].pipeline) optixPipelineDestroy(s->pipes[p].pipeline);
    for (int g = 0; g < s->pipes[p].n_groups; g++)
      if (s->pipes[p].groups[g]) optixProgramGroupDestroy(s->pipes[p].groups[g]);
    if (s->pipes[p].sbt_buffer) cudaFree((void *)s->pipes[p].sbt_buffer);
  }
  for (int m = 0; m < MAX_MODULES; m++)
    if (s->modules[m].module) optixModuleDestroy(s->modules[m].module);
  if (s->dc) optixDeviceContextDestroy(s->dc);
  if (s->d_params) cudaFree((void *)s->d_params);
  (void)cudaGetLastError();
  free(s);
  ctx->optix = NULL;
}

/* ---- launches ---- */

struct params_blob {
  unsigned char b[MAX_PARAMS];
};

static __global__ void put_params_kernel(params_blob v, unsigned char *dst, int bytes) {
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = v.b[i];
}

extern "C" rdx_status rdx_optix_launch(rdx_context *ctx, const rdx_optix_program *prog, const rdx_optix_gas *g,
                                       void *params, size_t bytes, int64_t n) {
  state *s = st_of(ctx);
  if (s == NULL) return rdx_fail(ctx, RDX_ERR_MISUSE, "rdx_optix: the context has no OptiX state");
  if (bytes < sizeof(rdx_optix_base) || bytes > MAX_PARAMS)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_optix: %s: launch parameters of %zu bytes (%zu..%d)", prog->name, bytes,
                    sizeof(rdx_optix_base), (int)MAX_PARAMS);
  pipe_state *p = NULL;
  RDX_CHECK(get_pipe(ctx, prog, &p));
  OptixShaderBindingTable sbt = p->sbt;
  if (g->kind == RDX_RT_AABBS) sbt.hitgroupRecordBase += sizeof(sbt_record);
  rdx_optix_base *b = (rdx_optix_base *)params;
  b->handle = g->handle;
  b->ids = g->ids;
  b->aabbs = g->aabbs;
  b->n = n;
  cudaStream_t st = rdx_stream(ctx);
  /* On a side stream (rdx_cuda_switch) the launch has its own parameter block and does not wait:
   * it runs beside the context's own stream's work. */
  const int side = rdx_cuda_switched(ctx);
  const CUdeviceptr dp = s->d_params + (side ? MAX_PARAMS : 0);
  const int64_t chunk = (int64_t)1 << 30; /* OptiX: width * height * depth <= 2^30 */
  for (int64_t off = 0; off < n; off += chunk) {
    b->offset = off;
    unsigned w = (unsigned)(n - off < chunk ? n - off : chunk);
    /* The block is written by a kernel that gets the parameters as its argument: the launch
     * copies them, so the caller's struct is free at once and nothing waits on the host (a copy
     * from pageable memory may wait for the stream). Stream-ordered: the write waits for the
     * previous launch, the launch for the write. */
    params_blob v;
    memcpy(v.b, params, bytes);
    put_params_kernel<<<1, 128, 0, st>>>(v, (unsigned char *)dp, (int)bytes);
    RDX_CUDA(ctx, cudaGetLastError(), "rdx_optix: params");
    RDX_OPTIX(ctx, optixLaunch(p->pipeline, (CUstream)st, dp, bytes, &sbt, w, 1, 1), "rdx_optix: launch");
  }
  /* the context's own stream: callers read the results once this returns */
  if (!side) RDX_CUDA(ctx, cudaStreamSynchronize(st), "rdx_optix: launch");
  return RDX_OK;
}

/* ---- GAS ---- */

extern "C" rdx_status rdx_optix_gas_build(rdx_context *ctx, int kind, const float *prims, int64_t n, rdx_optix_gas **out) {
  static const char what[] = "rdx_optix_gas_build";
  *out = NULL;
  state *s = st_of(ctx);
  if (s == NULL) return rdx_fail(ctx, RDX_ERR_MISUSE, "%s: the context has no OptiX state", what);
  rdx_optix_gas *g = (rdx_optix_gas *)calloc(1, sizeof *g);
  if (g == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: handle", what);
  g->kind = kind;
  cudaStream_t st = rdx_stream(ctx);
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  rdx_status rs = RDX_OK;
  uint8_t *active = NULL;
  uint32_t *ids = NULL;
  float *packed = NULL;
  void *temp = NULL, *uncompacted = NULL;
  uint64_t *d_size = NULL;
  int64_t n_active = 0;
  const float *input = prims;
  if (n > 0) {
    /* leave out inactive primitives, remembering where the others came from */
    size_t tb = 0;
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&active, (size_t)n + 16), rs, fail);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_optix_gas_build: id map", (void **)&ids, (size_t)n * 4, RDX_DEVICE), rs, fail);
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&d_size, 16), rs, fail);
    active_kernel<<<rdx_grid(n, 256), 256, 0, st>>>(kind, prims, n, active);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_optix_gas_build: active kernel", rs, fail);
    thrust::counting_iterator<uint32_t> it(0);
    RDX_CUDA_GOTO(ctx, cub::DeviceSelect::Flagged(NULL, tb, it, active, ids, (int64_t *)d_size, n, st), what, rs, fail);
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, &temp, tb), rs, fail);
    RDX_CUDA_GOTO(ctx, cub::DeviceSelect::Flagged(temp, tb, it, active, ids, (int64_t *)d_size, n, st), what, rs, fail);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&n_active, d_size, 8, cudaMemcpyDeviceToHost, st), what, rs, fail);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(st), what, rs, fail);
    rdx_mem_free(ctx, temp);
    temp = NULL;
    rdx_mem_free(ctx, active);
    active = NULL;
    if (n_active > (int64_t)s->max_prims) {
      rs = rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %lld primitives exceed OptiX's %u per GAS", what, (long long)n_active,
                    s->max_prims);
      goto fail;
    }
    if (n_active < n || kind == RDX_RT_AABBS) {
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_optix_gas_build: primitives", (void **)&packed,
                                   (size_t)(n_active ? n_active : 1) * w * 4, RDX_DEVICE),
                     rs, fail);
      gather_kernel<<<rdx_grid(n_active, 256), 256, 0, st>>>(kind, prims, ids, n_active, packed);
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_optix_gas_build: gather kernel", rs, fail);
      input = packed;
    }
    if (n_active == n) { /* every input active: primitive index = input index */
      rdx_mem_free(ctx, ids);
      ids = NULL;
    }
  }
  g->n_active = n_active;
  if (n_active > 0) {
    OptixBuildInput bi;
    memset(&bi, 0, sizeof bi);
    CUdeviceptr buf = (CUdeviceptr)input;
    unsigned flags = OPTIX_GEOMETRY_FLAG_REQUIRE_SINGLE_ANYHIT_CALL;
    if (kind == RDX_RT_TRIANGLES) {
      bi.type = OPTIX_BUILD_INPUT_TYPE_TRIANGLES;
      bi.triangleArray.vertexFormat = OPTIX_VERTEX_FORMAT_FLOAT3;
      bi.triangleArray.vertexStrideInBytes = 12;
      bi.triangleArray.numVertices = (unsigned)(3 * n_active);
      bi.triangleArray.vertexBuffers = &buf;
      bi.triangleArray.flags = &flags;
      bi.triangleArray.numSbtRecords = 1;
    } else {
      bi.type = OPTIX_BUILD_INPUT_TYPE_CUSTOM_PRIMITIVES;
      bi.customPrimitiveArray.aabbBuffers = &buf;
      bi.customPrimitiveArray.numPrimitives = (unsigned)n_active;
      bi.customPrimitiveArray.strideInBytes = 24;
      bi.customPrimitiveArray.flags = &flags;
      bi.customPrimitiveArray.numSbtRecords = 1;
    }
    OptixAccelBuildOptions ao;
    memset(&ao, 0, sizeof ao);
    ao.buildFlags = OPTIX_BUILD_FLAG_ALLOW_COMPACTION | OPTIX_BUILD_FLAG_PREFER_FAST_TRACE;
    ao.operation = OPTIX_BUILD_OPERATION_BUILD;
    OptixAccelBufferSizes sizes;
    {
      OptixResult r = optixAccelComputeMemoryUsage(s->dc, &ao, &bi, 1, &sizes);
      if (r != OPTIX_SUCCESS) {
        rs = rdx_fail(ctx, RDX_ERR_OPTIX, "%s: optixAccelComputeMemoryUsage: %s", what, optixGetErrorName(r));
        goto fail;
      }
    }
    RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_optix_gas_build: temp", &temp, sizes.tempSizeInBytes), rs, fail);
    RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_optix_gas_build: uncompacted", &uncompacted, sizes.outputSizeInBytes), rs, fail);
    OptixAccelEmitDesc emit;
    emit.type = OPTIX_PROPERTY_TYPE_COMPACTED_SIZE;
    emit.result = (CUdeviceptr)d_size;
    OptixTraversableHandle h0 = 0;
    {
      OptixResult r = optixAccelBuild(s->dc, (CUstream)st, &ao, &bi, 1, (CUdeviceptr)temp, sizes.tempSizeInBytes,
                                      (CUdeviceptr)uncompacted, sizes.outputSizeInBytes, &h0, &emit, 1);
      if (r != OPTIX_SUCCESS) {
        rs = rdx_fail(ctx, RDX_ERR_OPTIX, "%s: optixAccelBuild: %s", what, optixGetErrorName(r));
        goto fail;
      }
    }
    uint64_t compacted = 0;
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&compacted, d_size, 8, cudaMemcpyDeviceToHost, st), what, rs, fail);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(st), "rdx_optix_gas_build: build", rs, fail);
    rdx_mem_free(ctx, temp);
    temp = NULL;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_optix_gas_build: GAS", &g->buffer, (size_t)compacted, RDX_DEVICE), rs, fail);
    g->bytes = (size_t)compacted;
    {
      OptixResult r = optixAccelCompact(s->dc, (CUstream)st, h0, (CUdeviceptr)g->buffer, compacted, &g->handle);
      if (r != OPTIX_SUCCESS) {
        rs = rdx_fail(ctx, RDX_ERR_OPTIX, "%s: optixAccelCompact: %s", what, optixGetErrorName(r));
        goto fail;
      }
    }
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(st), "rdx_optix_gas_build: compact", rs, fail);
    rdx_mem_free(ctx, uncompacted);
    uncompacted = NULL;
  }
  g->ids = ids;
  if (kind == RDX_RT_AABBS) {
    g->aabbs = packed; /* the intersection program reads the boxes */
    packed = NULL;
  }
  rdx_mem_free(ctx, packed);
  rdx_mem_free(ctx, d_size);
  *out = g;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, active);
  rdx_mem_free(ctx, temp);
  rdx_mem_free(ctx, uncompacted);
  rdx_mem_free(ctx, d_size);
  rdx_mem_free(ctx, packed);
  rdx_mem_free(ctx, ids);
  rdx_mem_free(ctx, g->buffer);
  free(g);
  return rs;
}

extern "C" void rdx_optix_gas_free(rdx_context *ctx, rdx_optix_gas *g) {
  if (g == NULL) return;
  rdx_mem_free(ctx, g->buffer);
  rdx_mem_free(ctx, g->ids);
  rdx_mem_free(ctx, g->aabbs);
  free(g);
}

extern "C" int64_t rdx_optix_gas_bytes(const rdx_optix_gas *g) {
  int w = g->kind == RDX_RT_TRIANGLES ? 0 : 24;
  return (int64_t)g->bytes + (g->ids ? g->n_active * 4 : 0) + g->n_active * w;
}

/* ---- rdx_rt_trace's pipeline ---- */

static const rdx_optix_program generic_program = {
    "generic", rdx_rt_optix_ir, sizeof rdx_rt_optix_ir, "__raygen__generic", "__anyhit__generic", "__closesthit__generic",
};

extern "C" rdx_status rdx_optix_trace(rdx_context *ctx, const rdx_optix_gas *g, const rdx_ray *rays, int64_t n,
                                      rdx_rt_mode mode, rdx_rt_hit *hits, uint64_t *counts, const uint64_t *offsets,
                                      uint32_t *ids) {
  cudaStream_t st = rdx_stream(ctx);
  if (g->n_active == 0) { /* an empty scene: every ray misses (OptiX needs a GAS to trace) */
    if (mode == RDX_RT_ALL_HITS) {
      if (counts) RDX_CUDA(ctx, cudaMemsetAsync(counts, 0, (size_t)n * 8, st), "rdx_rt_trace");
    } else {
      RDX_CUDA(ctx, cudaMemsetAsync(hits, 0xFF, (size_t)n * sizeof *hits, st), "rdx_rt_trace");
    }
    return rdx_cuda_sync(ctx, "rdx_rt_trace");
  }
  rdx_rt_optix_params p;
  memset(&p, 0, sizeof p);
  p.op = (int)mode;
  p.rays = rays;
  p.hits = hits;
  p.counts = counts;
  p.offsets = offsets;
  p.out_ids = ids;
  RDX_CHECK(rdx_optix_launch(ctx, &generic_program, g, &p, sizeof p, n));
  if (mode == RDX_RT_ALL_HITS && ids != NULL) RDX_CHECK(rdx_rt_sort_ids_cuda(ctx, offsets, n, ids));
  return RDX_OK;
}
