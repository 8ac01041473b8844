/*
 * rx_cgrx.cu: the queries of OPTIX-built rx and cgrx indexes: the parameters of the keys
 * module's pipelines (launch.h) and their launch through rt's rdx_optix_launch, which runs the
 * programs of programs.cu, embedded as OptiX-IR. Compiled only when OptiX is built; the stubs of
 * other builds are in src/keys/optix_stub.c.
 */
#include <string.h>

#include "keys/optix/launch.h"
#include "rdx_keys_optix_ir.h"

static const rdx_optix_program rx_program = {
    "rx", rdx_keys_optix_ir, sizeof rdx_keys_optix_ir, "__raygen__rx", "__anyhit__rx", "__closesthit__rx",
};
static const rdx_optix_program cgrx_program = {
    "cgrx", rdx_keys_optix_ir, sizeof rdx_keys_optix_ir, "__raygen__cgrx", NULL, "__closesthit__cgrx",
};

extern "C" rdx_status rdx_rx_optix_query(rdx_context *ctx, const rdx_rx_impl *x, rdx_dtype dt, int op, const void *q,
                                         int64_t n, uint64_t *out, uint64_t *rows) {
  rdx_keys_optix_params p;
  memset(&p, 0, sizeof p);
  p.op = op;
  p.key64 = dt == RDX_U64;
  p.queries = q;
  p.out = out;
  p.rows = rows;
  p.rx_rows = x->rows;
  p.rx_row_width = x->row_width;
  p.rx_unique = x->unique;
  p.rx_rows_info = x->rows_info;
  return rdx_optix_launch(ctx, &rx_program, x->scene.gas, &p, sizeof p, n);
}

extern "C" rdx_status rdx_cgrx_optix_query(rdx_context *ctx, const rdx_cgrx_impl *x, rdx_dtype dt, int op, const void *q,
                                           int64_t n, uint64_t *out, const uint64_t *offsets, rdx_cgrx_span *spans,
                                           int *broken) {
  (void)offsets; /* fills read the offsets through out */
  rdx_keys_optix_params p;
  memset(&p, 0, sizeof p);
  p.op = op;
  p.key64 = dt == RDX_U64;
  p.queries = q;
  p.out = out;
  p.cg = x->P;
  p.spans = spans;
  p.broken = broken;
  return rdx_optix_launch(ctx, &cgrx_program, x->scene.gas, &p, sizeof p, n);
}

extern "C" rdx_status rdx_cgrx_optix_locate(rdx_context *ctx, const rdx_cgrx_impl *x, rdx_dtype dt, const void *q,
                                            int64_t n, int64_t *buckets, int *broken) {
  return rdx_cgrx_optix_query(ctx, x, dt, RDX_CGRX_OP_LOCATE, q, n, (uint64_t *)buckets, NULL, NULL, broken);
}
