/*
 * module.h: what the files of the CPython extension raydex._raydex share. The extension is one
 * shared object built from raydex_module.c (module init, exceptions, Context), arrays.c (arrays
 * in and out), keys.c (KeyIndex), points.c (PointIndex), polygons.c (PolygonLayer, join, pip) and
 * wkb.c (WKB and shapely 1.8 polygons); raydex_module.c's opening comment states the invariants
 * they all keep. Functions one file uses stay static there; the ones several use are declared
 * here, prefixed rdxpy_ so they clash neither with the library's rdx_ exports nor with CPython's.
 */
#ifndef RAYDEX_PY_MODULE_H
#define RAYDEX_PY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL raydex_ARRAY_API /* shared by every file, and wkb.c */
#ifndef RDXPY_IMPORT_ARRAY /* raydex_module.c, which calls import_array(), defines it */
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raydex.h"
#include "interop.h"

/* The status a closed index "returns": not a library status, it never reaches the library. */
#define CLOSED_STATUS ((rdx_status)-1)
#define MESSAGE_BYTES 4096
/* Spare device blocks a context keeps for small results (ContextObject.spare). */
#define SPARE_BLOCKS 4
#define SPARE_MAX_BYTES ((size_t)1 << 20)

/* What the array protocols look up and pass on every call, made once (PyInit__raydex). */
struct rdxpy_names {
  PyObject *dlpack, *dlpack_device, *arrow_array, *arrow_stream; /* the protocols' method names */
  PyObject *one, *version_1_0;             /* __dlpack__'s stream=1 and max_version=(1, 0) */
  PyObject *kw_stream_version, *kw_stream; /* ("stream", "max_version") and ("stream",) */
};
extern struct rdxpy_names rdxpy_names; /* defined in raydex_module.c */

/* ---- Errors (raydex_module.c) ---- */

/* raydex.InvalidArgumentError (the others are raised through rdxpy_raise_status). */
extern PyObject *rdxpy_InvalidArgumentError;

/* Raise the exception for a failed call, carrying the library's sentence; returns NULL. */
PyObject *rdxpy_raise_status(rdx_status st, const char *message, const char *what);

/* ---- Context (raydex_module.c) ---- */

typedef struct {
  PyObject_HEAD
  rdx_context *ctx;          /* owned; destroyed in dealloc, after every object made in it */
  PyThread_type_lock lock;   /* held around every library call on ctx or its objects */
  int device;                /* the CUDA ordinal it was made for (device arrays must be there) */
  /* Device blocks of small results that never left raydex (no DLPack export, no data_ptr read):
   * the next device lookup or pip writes into one instead of allocating, since rdx_malloc and
   * rdx_free each wait for the device, which would double a small call's time. Nobody else ever
   * saw these addresses, so no stream can still be reading them. Under the lock. */
  void *spare[SPARE_BLOCKS];
  size_t spare_bytes[SPARE_BLOCKS];
  int n_spare;
} ContextObject;

/* A device block of at least `bytes` for a result: a spare one when one fits, else rdx_malloc's.
 * Called under the context's lock. */
rdx_status rdxpy_block_take(ContextObject *c, size_t bytes, void **block, size_t *block_bytes);
/* Give a result's device block back (kept as a spare or freed). Called under the context's lock. */
void rdxpy_block_give(ContextObject *c, void *block, size_t bytes, int exported);

/* Make the context's stream wait for the producers of device inputs (see its definition). */
rdx_status rdxpy_wait_for_device(rdx_context *ctx);

/* Run `call` without the GIL and with the context's lock; on failure copy the context's message
 * into msg (a char[MESSAGE_BYTES]) before another thread can replace it. `guard` is checked under
 * the lock: when false the call is skipped and st is CLOSED_STATUS. RUN_ON first waits for the
 * device's producers when `device_inputs` is true (rdxpy_wait_for_device says why). */
#define RUN_ON(cobj, st, msg, guard, device_inputs, call)                                \
  do {                                                                                   \
    Py_BEGIN_ALLOW_THREADS                                                               \
    PyThread_acquire_lock((cobj)->lock, WAIT_LOCK);                                      \
    if (!(guard)) {                                                                      \
      (st) = CLOSED_STATUS;                                                              \
    } else {                                                                             \
      (st) = (device_inputs) ? rdxpy_wait_for_device((cobj)->ctx) : RDX_OK;              \
      if ((st) == RDX_OK) (st) = (call);                                                 \
      if ((st) != RDX_OK) snprintf((msg), MESSAGE_BYTES, "%s", rdx_context_message((cobj)->ctx)); \
    }                                                                                    \
    PyThread_release_lock((cobj)->lock);                                                 \
    Py_END_ALLOW_THREADS                                                                 \
  } while (0)
#define RUN(cobj, st, msg, guard, call) RUN_ON(cobj, st, msg, guard, 0, call)

/* The given Context (checked against backend_name), or the module's default one for that
 * backend; a new reference, or NULL with an exception set. `what` names the caller. */
ContextObject *rdxpy_resolve_context(PyObject *context, const char *backend_name, const char *what);

/* ---- Arrays in (arrays.c) ---- */

/* dtype masks for rdxpy_in_array */
#define M_U32 (1u << 0)
#define M_U64 (1u << 1)
#define M_I64 (1u << 2)
#define M_F32 (1u << 3)
#define M_F64 (1u << 4)

/* A borrowed input array. Exactly one source is held: a buffer view, a DLPack tensor (taken from
 * its capsule, so raydex calls its deleter), or Arrow data (the capsules, a stream's one chunk, or
 * a copy concatenating a stream's chunks). */
typedef struct {
  Py_buffer view;
  int held;                  /* view must be released */
  void *dl;                  /* DLManagedTensor(Versioned) raydex now owns, or NULL */
  int dl_versioned;
  PyObject *arrow;           /* the (schema, array) capsules of __arrow_c_array__, or NULL */
  struct ArrowArray chunk;   /* a stream's single chunk (released when release != NULL) */
  void *copy;                /* PyMem_RawMalloc'd chunks of a stream, concatenated */
  int device;                /* CUDA ordinal when a.where is RDX_DEVICE */
  const char *what;          /* the argument's name, for messages */
  rdx_array a;
} InArray;

#define ON_DEVICE(in) ((in).a.where == RDX_DEVICE)

unsigned rdxpy_dtype_mask(rdx_dtype d);
const char *rdxpy_dtype_numpy_name(rdx_dtype d);
int rdxpy_dtype_npy(rdx_dtype d);

/* Borrow obj as an rdx_array: C-contiguous, a dtype in `mask`, 1-D when columns == 0, else 2-D
 * with that many columns (numpy/buffer, Arrow array or stream, or DLPack). 0, or -1 with an
 * exception set. Release with rdxpy_in_release. */
int rdxpy_in_array(PyObject *obj, const char *what, unsigned mask, const char *wanted, int columns,
                   InArray *in);
void rdxpy_in_release(InArray *in);
/* Device inputs need a GPU context on the tensor's device: 0, or -1 with an exception set. */
int rdxpy_in_reach(const ContextObject *context, const InArray *in);

/* ---- Arrays out (arrays.c) ---- */

typedef struct {
  PyObject_HEAD
  ContextObject *context;  /* strong: the result belongs to its memory account */
  rdx_result *result;      /* owned; freed when every view of it is gone */
  rdx_join_pairs_result *pairs; /* or a polygon join's result (owned likewise) */
  void *block;             /* or a device block (rdxpy_block_take: a lookup's or pip's output on the GPU) */
  size_t block_bytes;      /* its size */
  int exported;            /* the block's address left raydex (DLPack, data_ptr): rdxpy_block_give frees it */
} ResultOwnerObject;

/* An owner holding nothing yet, or NULL with an exception set. */
ResultOwnerObject *rdxpy_owner_new(ContextObject *context);
/* A raydex.DeviceArray of n elements (stride in elements) at data, kept alive by owner. */
PyObject *rdxpy_device_array(ResultOwnerObject *owner, void *data, int64_t n, int64_t stride, rdx_dtype dtype);
/* A CSR result as (offsets, rows), or as a ListArray; takes result over (freed on failure). */
PyObject *rdxpy_csr_out(ContextObject *context, rdx_result *result, int as_arrow);

/* ---- Types and module functions, for module init (raydex_module.c) ---- */

extern PyTypeObject rdxpy_ResultOwnerType, rdxpy_DeviceArrayType, rdxpy_ListArrayType; /* arrays.c */
extern PyTypeObject rdxpy_KeyIndexType;      /* keys.c */
extern PyTypeObject rdxpy_PointIndexType;    /* points.c */
extern PyTypeObject rdxpy_PolygonLayerType;  /* polygons.c */

PyObject *rdxpy_module_load(PyObject *module, PyObject *args, PyObject *kwds);        /* keys.c */
PyObject *rdxpy_module_load_points(PyObject *module, PyObject *args, PyObject *kwds); /* points.c */
PyObject *rdxpy_module_join(PyObject *module, PyObject *args, PyObject *kwds);        /* polygons.c */
PyObject *rdxpy_module_pip(PyObject *module, PyObject *args, PyObject *kwds);         /* polygons.c */

/* __enter__ of KeyIndex, PointIndex and PolygonLayer: returns self (keys.c). */
PyObject *rdxpy_keyindex_enter(PyObject *self, PyObject *unused);

#endif /* RAYDEX_PY_MODULE_H */
