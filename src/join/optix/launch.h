/*
 * launch.h: the launch parameters of the join module's OptiX pipelines, shared by the host code
 * (launch.cu) and the device programs (programs.cu). Plain C types only: the device programs see
 * the same bytes the host copies into the parameter buffer. They begin with rt's rdx_optix_base,
 * which rdx_optix_launch fills (DESIGN.md §4: rt runs the pipelines, the module owns its programs
 * and their parameters).
 *
 * Pipelines (one per raygen program; every trace folds its work into the intersection program, as
 * RayJoin does, digest sections 3, 4 and 7):
 *   lsi  one ray per S edge (lsi_hd.h), counting or filling, op RDX_JN_OPTIX_LSI
 *   pip  per query, a point or a side query (pip_hd.h): phase (A), a point ray through the ring GAS into reach
 *        (op RDX_JN_OPTIX_PIP_RINGS, for the points or for pass 2's list); then pass 1 (op
 *        RDX_JN_OPTIX_PIP) or pass 2's events of the points pass 1 left (op
 *        RDX_JN_OPTIX_PIP_EVENTS), one ray each through the group GAS
 */
#ifndef RDX_JOIN_OPTIX_LAUNCH_H
#define RDX_JOIN_OPTIX_LAUNCH_H

#include <stdint.h>

#include "join/join.h"
#include "join/lsi_hd.h"
#include "join/pip_hd.h"
#include "rt/optix/launch.h"

enum {
  RDX_JN_OPTIX_LSI = 1,        /* __raygen__lsi */
  RDX_JN_OPTIX_PIP = 2,        /* __raygen__pip, pass 1 */
  RDX_JN_OPTIX_PIP_EVENTS = 3, /* __raygen__pip, pass 2's events */
  RDX_JN_OPTIX_PIP_RINGS = 4   /* __raygen__pip, phase (A) into reach */
};

/* The rule a traced ray runs, in its payload word 2: which of lsi_hd.h's and pip_hd.h's
 * intersection programs __intersection__box calls. */
enum {
  RDX_JN_OPTIX_RULE_LSI = 0,
  RDX_JN_OPTIX_RULE_PLANAR = 1,
  RDX_JN_OPTIX_RULE_GENERAL = 2,
  RDX_JN_OPTIX_RULE_RINGS = 3  /* pip_hd.h's phase (A), on the ring GAS */
};

/* The range of magnitudes the GAS is traced in (launch.cu): layers whose largest |coordinate| lies
 * outside [2^-60, 2^60], layers whose extent is below 2^-16 of that magnitude (float32 resolves
 * them into fewer than 2^8 steps), and rays with an origin coordinate beyond 2^61, scan every
 * group instead. */
#define RDX_JN_OPTIX_EXTENT_MIN 0x1p-16
#define RDX_JN_OPTIX_MAG_MIN 0x1p-60
#define RDX_JN_OPTIX_MAG_MAX 0x1p60
#define RDX_JN_OPTIX_RAY_MAX 0x1p61f

/* Per S edge after a counting pass: its candidates (R edges tested, at most R's 2^32 - 2 edges)
 * in the low 62 bits and what happened to it (RDX_JN_LSI_SKIP .. _BRUTE, 0..3) in the top two. */
#define RDX_JN_OPTIX_HOW_SHIFT 62

typedef struct rdx_jn_optix_params {
  rdx_optix_base base;         /* set by rdx_optix_launch */
  int op;                      /* RDX_JN_OPTIX_* */
  int scan_all;                /* 1: every ray scans every group (R outside the traced range) */
  uint32_t n_groups;           /* R's groups (the index's), for the scans */
  /* lsi: queries are S's edges */
  rdx_jn_lsi_r r;              /* R's side, device pointers (r.v unused: the GAS replaces it) */
  const double *s_xy;          /* S's vertices */
  const uint32_t *s_end;       /* S's edge ends */
  uint64_t *counts;            /* counting: per S edge, its intersecting R edges */
  uint64_t *edge_tally;        /* counting: per S edge, candidates | how << RDX_JN_OPTIX_HOW_SHIFT */
  const uint64_t *offsets;     /* filling: S edge e's pairs go to pairs + offsets[e] */
  uint64_t *pairs;             /* filling: (r edge << 32 | s edge); NULL when counting */
  int *mismatch;               /* filling and pip events: set to 1 on another count */
  /* pip: queries are entries of list (events; pass 1: its order, or all points in input order
   * when list is NULL) */
  rdx_jn_pip_geom g;           /* R's layer and groups, device pointers */
  rdx_jn_pip_query q;          /* the queries: points, or side queries (join.h), device pointers */
  int planar;                  /* pass 1: the planar rule first */
  rdx_jn_pip_out out;          /* pass 1's outputs */
  uint32_t *pending;           /* pass 1: per point, 0 or its event count for pass 2 */
  float *reach;                /* per query, phase (A)'s reach: written by op RINGS, read by the
                                  others (pip_hd.h; +inf where the GAS is not traced) */
  const int64_t *list;         /* events, and rings for them: the points of this block; pass 1
                                  and its rings: the points in pass 1's order (NULL: input order) */
  const uint64_t *boff;        /* events: list entry k's events at ev + boff[k] */
  uint64_t *ev;
} rdx_jn_optix_params;

#endif /* RDX_JOIN_OPTIX_LAUNCH_H */
