/*
 * layers.h: internals of the io module for polygon layers: raydex's binary layer format (.rdxp,
 * rdxp.c, which documents the bytes) and the GDAL/OGR reader (gdal.c, built only with GDAL).
 * Readers hand back what rdx_polygons_create takes (src/join/layer.c validates it); they check the
 * file, not the geometry.
 */
#ifndef RDX_IO_LAYERS_H
#define RDX_IO_LAYERS_H

#include "core/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RDXP_VERSION 1u
#define RDXP_HEADER_BYTES 80u
#define RDXP_FLAG_NORMALIZED 1u /* the header's flags: the layer as rdx_polygons_create left it */

/* A layer read from a file: `in` as rdx_polygons_create takes it (host arrays), pointing into
 * memory the reader owns (the caller's buffer for rdx_rdxp_parse on a little-endian host, else
 * `block`). Free with rdx_layer_file_free. */
typedef struct rdx_layer_file {
  rdx_polygons_input in;
  double lo[2], hi[2];       /* .rdxp: the header's box; GDAL: not set */
  int normalized;            /* .rdxp with RDXP_FLAG_NORMALIZED: the rings are as
                                rdx_polygons_create leaves them (rdxp.c) */
  void *block;               /* through the context's account, or NULL */
  void *file;                /* rdx_rdxp_read: the file's bytes (account), or NULL */
  void *map;                 /* rdx_rdxp_read: the file mapped read-only (map_len bytes), or NULL */
  size_t map_len;
} rdx_layer_file;
void rdx_layer_file_free(rdx_context *ctx, rdx_layer_file *f);

/* CRC32C (Castagnoli, reflected, as iSCSI and ext4 use it) of len bytes, continuing from crc
 * (0 to start). */
uint32_t rdx_crc32c(uint32_t crc, const void *buf, size_t len);

/* 1 when the file at path begins with the .rdxp magic's first 7 bytes ("RDXPOLY"), 0 when it
 * does not (or is shorter), -1 when it cannot be opened. */
int rdx_rdxp_sniff(const char *path);
/* Parse a .rdxp image of len bytes: RDX_OK, or RDX_ERR_PARSE naming what is wrong (truncated,
 * wrong magic, future version, checksum, sizes), or RDX_ERR_HOST_OUT_OF_MEMORY. Messages begin
 * with fn. On failure *out holds nothing. */
rdx_status rdx_rdxp_parse(rdx_context *ctx, const char *fn, const void *buf, size_t len, rdx_layer_file *out);
/* Read and parse the file (mapped read-only while the layer is made, or read into the account's
 * memory where it cannot be mapped): also RDX_ERR_IO when it cannot be opened or read. */
rdx_status rdx_rdxp_read(rdx_context *ctx, const char *fn, const char *path, rdx_layer_file *out);

/* A validated layer's arrays to write (host memory): coordinates are f64 here and written in
 * dtype (f32 values are exactly representable, having been widened from f32). */
typedef struct rdx_rdxp_layer {
  rdx_dtype dtype;                 /* RDX_F32 or RDX_F64 */
  int64_t n_features, n_rings, n_vertices;
  const uint64_t *feat_off;        /* n_features + 1 */
  const uint64_t *ring_off;        /* n_rings + 1 */
  const double *xy;                /* 2 * n_vertices */
  double lo[2], hi[2];
  int normalized;                  /* write RDXP_FLAG_NORMALIZED */
} rdx_rdxp_layer;
/* Write path.tmp.<pid>, flush and fsync it, rename it over path: a failed or killed save leaves
 * any previous file intact. RDX_OK or RDX_ERR_IO (messages begin with fn). */
rdx_status rdx_rdxp_write(rdx_context *ctx, const char *fn, const char *path, const rdx_rdxp_layer *layer);

/* The GDAL/OGR reader (gdal.c; only in builds with GDAL, RDX_HAVE_GDAL): the first layer of the
 * dataset at path, or the one named `layer`. RDX_ERR_IO (cannot open the file), RDX_ERR_PARSE
 * (GDAL reads no vector data from it, or a feature is not a Polygon or MultiPolygon, or empty),
 * RDX_ERR_INVALID_ARGUMENT (no layer of that name), RDX_ERR_HOST_OUT_OF_MEMORY. */
rdx_status rdx_gdal_read(rdx_context *ctx, const char *fn, const char *path, const char *layer, rdx_layer_file *out);

#ifdef __cplusplus
}
#endif
#endif /* RDX_IO_LAYERS_H */
