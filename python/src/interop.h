/*
 * interop.h: the two zero-copy array interchange ABIs the extension speaks, DLPack (v1.0, with the
 * pre-1.0 unversioned struct) and the Arrow C data interface (ArrowSchema, ArrowArray,
 * ArrowArrayStream, ArrowDeviceArray), written out from their specifications as every consumer
 * does (neither project ships a header meant for vendoring into a C extension), with the
 * protocol-level helpers that need no Python: dtype mapping, contiguity, null counts, and the
 * export of a CSR result as an Arrow large list array.
 *
 * Included by module.h into each file of the extension, so the helpers are static inline.
 * The layouts are ABI: field order and types follow dlpack.h 1.0 and arrow/c/abi.h exactly.
 *
 * Ownership rules followed here, from the specifications:
 *  - DLPack: whoever holds a DLManagedTensor(Versioned) calls its deleter once, when done.
 *  - Arrow: each ArrowSchema/ArrowArray has a release callback that frees what it owns (its
 *    children included, unless a consumer moved them out, which sets their release to NULL) and
 *    then sets its own release to NULL. A child is released independently of its parent, so each
 *    struct here keeps its own reference to the memory it views.
 */
#ifndef RAYDEX_PYTHON_INTEROP_H
#define RAYDEX_PYTHON_INTEROP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raydex.h"

/* ---- DLPack (dlpack.h 1.0) ---- */

enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };
#define DLPACK_FLAG_BITMASK_READ_ONLY (1ull << 0)

typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void *data;              /* plus byte_offset: the first element */
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;          /* ndim entries */
  int64_t *strides;        /* ndim entries, in elements; NULL = compact row-major */
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* The rdx_dtype of a DLPack dtype, or 0; name receives numpy's name for it (for messages). */
static inline rdx_dtype dl_dtype(DLDataType t, char *name, size_t name_bytes) {
  static const char *const codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  if (t.code == kDLBool)
    snprintf(name, name_bytes, "bool");
  else if (t.code < sizeof codes / sizeof codes[0])
    snprintf(name, name_bytes, "%s%d", codes[t.code], (int)t.bits);
  else
    snprintf(name, name_bytes, "DLPack type code %d", (int)t.code);
  if (t.lanes != 1) {
    size_t n = strlen(name);
    snprintf(name + n, name_bytes - n, " x%d lanes", (int)t.lanes);
    return (rdx_dtype)0;
  }
  if (t.code == kDLUInt && t.bits == 32) return RDX_U32;
  if (t.code == kDLUInt && t.bits == 64) return RDX_U64;
  if (t.code == kDLInt && t.bits == 64) return RDX_I64;
  if (t.code == kDLFloat && t.bits == 32) return RDX_F32;
  if (t.code == kDLFloat && t.bits == 64) return RDX_F64;
  return (rdx_dtype)0;
}

static inline DLDataType dl_of(rdx_dtype d) {
  DLDataType t = {kDLUInt, 64, 1};
  switch (d) {
  case RDX_U32: t.bits = 32; break;
  case RDX_U64: break;
  case RDX_I64: t.code = kDLInt; break;
  case RDX_F32: t.code = kDLFloat, t.bits = 32; break;
  case RDX_F64: t.code = kDLFloat; break;
  }
  return t;
}

/* Whether a tensor is C-contiguous. Strides of extent-1 dimensions mean nothing (producers
 * write anything there), and an empty tensor has no layout at all. */
static inline int dl_contiguous(const DLTensor *t) {
  if (t->strides == NULL) return 1;
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] == 0) return 1;
  int64_t expected = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != expected) return 0;
    expected *= t->shape[i];
  }
  return 1;
}

/* ---- Arrow C data interface (arrow/c/abi.h) ---- */

#define ARROW_FLAG_NULLABLE 2

struct ArrowSchema {
  const char *format;
  const char *name;
  const char *metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema **children;
  struct ArrowSchema *dictionary;
  void (*release)(struct ArrowSchema *);
  void *private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void **buffers;
  struct ArrowArray **children;
  struct ArrowArray *dictionary;
  void (*release)(struct ArrowArray *);
  void *private_data;
};
struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
  int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
  const char *(*get_last_error)(struct ArrowArrayStream *);
  void (*release)(struct ArrowArrayStream *);
  void *private_data;
};
struct ArrowDeviceArray {
  struct ArrowArray array;
  int64_t device_id;
  int32_t device_type;     /* DLPack's numbers: 1 CPU, 2 CUDA */
  void *sync_event;        /* NULL: the data is ready (raydex returns only after its stream is done) */
  int64_t reserved[3];
};

/* The rdx_dtype of a primitive Arrow format string, or 0; name receives a readable name. */
static inline rdx_dtype arrow_dtype(const char *format, char *name, size_t name_bytes) {
  static const struct { const char *format, *name; rdx_dtype dtype; } table[] = {
      {"I", "uint32", RDX_U32}, {"L", "uint64", RDX_U64}, {"l", "int64", RDX_I64},
      {"f", "float32", RDX_F32}, {"g", "float64", RDX_F64}, {"i", "int32", (rdx_dtype)0},
      {"C", "uint8", (rdx_dtype)0}, {"S", "uint16", (rdx_dtype)0}, {"c", "int8", (rdx_dtype)0},
      {"s", "int16", (rdx_dtype)0}, {"e", "float16", (rdx_dtype)0}, {"b", "bool", (rdx_dtype)0}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (format != NULL && strcmp(format, table[i].format) == 0) {
      snprintf(name, name_bytes, "%s", table[i].name);
      return table[i].dtype;
    }
  snprintf(name, name_bytes, "Arrow format '%s'", format != NULL ? format : "(null)");
  return (rdx_dtype)0;
}

/* The number of nulls in a primitive array, counting the validity bitmap when the producer
 * left null_count unknown (-1). */
static inline int64_t arrow_nulls(const struct ArrowArray *a) {
  if (a->null_count >= 0) return a->null_count;
  const uint8_t *bits = a->n_buffers > 0 ? a->buffers[0] : NULL;
  if (bits == NULL) return 0;
  int64_t nulls = 0;
  for (int64_t i = a->offset; i < a->offset + a->length; i++) nulls += !((bits[i >> 3] >> (i & 7)) & 1);
  return nulls;
}

/* ---- Export: a CSR result as an Arrow large list<uint64> array ---- */

/* What an exported struct views is kept alive by `keep` (a reference the caller took), given back
 * by `unkeep` when the struct is released, from whatever thread releases it. */
typedef void (*interop_unkeep)(void *keep);

typedef struct {
  void *keep;
  interop_unkeep unkeep;
  const void *buffers[2];
  struct ArrowArray *children[1];
  struct ArrowArray child;       /* the parent's child, until a consumer moves it out */
} ArrowExport;

static inline void arrow_export_release(struct ArrowArray *a) {
  ArrowExport *e = a->private_data;
  for (int64_t i = 0; i < a->n_children; i++)
    if (a->children[i]->release != NULL) a->children[i]->release(a->children[i]);
  e->unkeep(e->keep);
  free(e);
  a->release = NULL;
}

static inline int arrow_export_one(struct ArrowArray *a, int64_t length, const void *data, int with_child,
                                   void *keep, interop_unkeep unkeep) {
  /* Arrow asks for valid pointers even for empty buffers; raydex may give NULL for them. */
  static const int64_t arrow_empty[1] = {0};
  ArrowExport *e = calloc(1, sizeof *e);
  if (e == NULL) return -1;
  e->keep = keep;
  e->unkeep = unkeep;
  e->buffers[0] = NULL;  /* no validity bitmap: null_count is 0 */
  e->buffers[1] = data != NULL ? data : arrow_empty;
  memset(a, 0, sizeof *a);
  a->length = length;
  a->n_buffers = 2;
  a->buffers = e->buffers;
  a->release = arrow_export_release;
  a->private_data = e;
  if (with_child) {
    e->children[0] = &e->child;
    a->n_children = 1;
    a->children = e->children;
  }
  return 0;
}

/* Fill *out with a large list array of n lists over offsets (n + 1 entries, read as int64: raydex's
 * counts stay below 2^63) and values (total uint64). `keep` is taken twice on success (the list and
 * its child each hold one), not at all on failure (-1, out of memory). */
static inline int arrow_export_list(struct ArrowArray *out, const uint64_t *offsets, const uint64_t *values,
                                    int64_t n, uint64_t total, void *keep, void (*take)(void *), interop_unkeep unkeep) {
  if (arrow_export_one(out, n, offsets, 1, keep, unkeep) < 0) return -1;
  ArrowExport *e = out->private_data;
  if (arrow_export_one(&e->child, (int64_t)total, values, 0, keep, unkeep) < 0) {
    free(e);
    out->release = NULL;
    return -1;
  }
  take(keep);
  take(keep);
  return 0;
}

typedef struct {
  struct ArrowSchema child;
  struct ArrowSchema *children[1];
} ArrowSchemaExport;

static inline void arrow_schema_release(struct ArrowSchema *s) {
  if (s->n_children > 0) {
    ArrowSchemaExport *e = s->private_data;
    if (e->child.release != NULL) e->child.release(&e->child);
    free(e);
  }
  s->release = NULL;
}

/* Fill *out with the schema "+L" (large list) of "L" (uint64), both nullable as Arrow's default
 * list field is (no value is ever null). Returns -1 when out of memory. */
static inline int arrow_export_list_schema(struct ArrowSchema *out) {
  ArrowSchemaExport *e = calloc(1, sizeof *e);
  if (e == NULL) return -1;
  memset(out, 0, sizeof *out);
  e->child.format = "L";
  e->child.name = "item";
  e->child.flags = ARROW_FLAG_NULLABLE;
  e->child.release = arrow_schema_release;
  e->children[0] = &e->child;
  out->format = "+L";
  out->name = "";
  out->flags = ARROW_FLAG_NULLABLE;
  out->n_children = 1;
  out->children = e->children;
  out->release = arrow_schema_release;
  out->private_data = e;
  return 0;
}

#endif /* RAYDEX_PYTHON_INTEROP_H */
