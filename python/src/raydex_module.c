/*
 * raydex_module.c: the CPython extension raydex._raydex, written against the CPython C API and
 * numpy's C API only (no C++, no binding generator). It wraps include/raydex.h's contexts, key
 * indexes, point indexes and polygon layers as Python objects, with the polygon joins (join, pip)
 * as module functions. The shapely/GeoPandas conversions and sjoin are Python (raydex/_polygons.py),
 * over PolygonLayer.from_arrays, which the Python class of that name extends.
 *
 * Invariants:
 *  - Every call into the library runs with the GIL released (RUN below) and with its context's
 *    lock held: the library lets one thread at a time use a context and its objects, while
 *    Python threads may share them. The lock is never held while waiting for the GIL, so a thread
 *    that holds the GIL may block on it (deallocators do) without a deadlock.
 *  - An index holds a strong reference to its Context object, and each CSR result holds one
 *    through its owner object, so a context is destroyed only after everything made in it.
 *  - A closed index has a NULL handle; every method checks the handle under the context's lock
 *    and raises ValueError for a closed one, so use after close never reaches the library.
 *  - Inputs are borrowed (C-contiguous, typed) through the buffer protocol, DLPack (host or CUDA
 *    memory) or the Arrow PyCapsule interface (host, 1-D, no nulls; interop.h has the ABIs): no
 *    copies, except range(lo, hi), which interleaves the two bound arrays into the (m, 2) array
 *    the library reads, and an Arrow stream of several chunks, concatenated.
 *  - Results live where the queries live. Host point lookups write into a fresh numpy array; CSR
 *    results are the library's own arrays (rdx_*_alloc), wrapped by numpy without a copy and
 *    freed when every view is gone; polygon join pairs likewise (strided views of the (n, 2) pair
 *    array), copied only when a GPU context returns them in device memory. Device results
 *    (device queries) are DeviceArrays over the library's memory, exported by DLPack and never
 *    copied to the host; as_arrow=True gives a CSR result as a ListArray (Arrow large_list).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL raydex_ARRAY_API /* shared with wkb.c */
#include <numpy/arrayobject.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raydex.h"
#include "interop.h"
#include "wkb.h"

/* ---------------------------------------------------------------------------------------- */
/* Exceptions                                                                               */
/* ---------------------------------------------------------------------------------------- */

static PyObject *Error, *InvalidArgumentError, *UnsupportedError, *NoBackendError,
    *OutOfMemoryError, *DeviceError, *FileError, *ParseError, *MisuseError, *InternalError;

/* The status a closed index "returns": not a library status, it never reaches the library. */
#define CLOSED_STATUS ((rdx_status)-1)
#define MESSAGE_BYTES 4096
/* Spare device blocks a context keeps for small results (ContextObject.spare). */
#define SPARE_BLOCKS 4
#define SPARE_MAX_BYTES ((size_t)1 << 20)

/* What the array protocols look up and pass on every call, made once (PyInit__raydex). */
static struct {
  PyObject *dlpack, *dlpack_device, *arrow_array, *arrow_stream; /* the protocols' method names */
  PyObject *one, *version_1_0;             /* __dlpack__'s stream=1 and max_version=(1, 0) */
  PyObject *kw_stream_version, *kw_stream; /* ("stream", "max_version") and ("stream",) */
} names;

static int names_make(void) {
  names.dlpack = PyUnicode_InternFromString("__dlpack__");
  names.dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
  names.arrow_array = PyUnicode_InternFromString("__arrow_c_array__");
  names.arrow_stream = PyUnicode_InternFromString("__arrow_c_stream__");
  names.one = PyLong_FromLong(1);
  names.version_1_0 = Py_BuildValue("(ii)", 1, 0);
  names.kw_stream_version = Py_BuildValue("(ss)", "stream", "max_version");
  names.kw_stream = Py_BuildValue("(s)", "stream");
  return names.dlpack && names.dlpack_device && names.arrow_array && names.arrow_stream && names.one &&
                 names.version_1_0 && names.kw_stream_version && names.kw_stream ? 0 : -1;
}

static PyObject *status_class(rdx_status st) {
  switch (st) {
  case RDX_ERR_INVALID_ARGUMENT: return InvalidArgumentError;
  case RDX_ERR_UNSUPPORTED: return UnsupportedError;
  case RDX_ERR_NO_BACKEND: return NoBackendError;
  case RDX_ERR_HOST_OUT_OF_MEMORY:
  case RDX_ERR_DEVICE_OUT_OF_MEMORY: return OutOfMemoryError;
  case RDX_ERR_CUDA:
  case RDX_ERR_OPTIX: return DeviceError;
  case RDX_ERR_IO: return FileError;
  case RDX_ERR_PARSE: return ParseError;
  case RDX_ERR_MISUSE: return MisuseError;
  case RDX_ERR_INTERNAL: return InternalError;
  default: return Error;
  }
}

/* Raise the exception for a failed call, carrying the library's sentence; returns NULL. */
static PyObject *raise_status(rdx_status st, const char *message, const char *what) {
  if (st == CLOSED_STATUS) {
    PyErr_Format(PyExc_ValueError, "%s: the index is closed", what);
    return NULL;
  }
  const char *text = message != NULL && message[0] != '\0' ? message : rdx_status_string(st);
  PyObject *cls = status_class(st);
  /* a message may quote a file name that is not UTF-8 */
  PyObject *str = PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "backslashreplace");
  if (str == NULL) return NULL;
  PyObject *exc = PyObject_CallOneArg(cls, str);
  Py_DECREF(str);
  if (exc == NULL) return NULL;
  PyObject *name = PyUnicode_FromString(rdx_status_name(st));
  if (name == NULL || PyObject_SetAttrString(exc, "status", name) < 0) {
    Py_XDECREF(name);
    Py_DECREF(exc);
    return NULL;
  }
  Py_DECREF(name);
  PyErr_SetObject(cls, exc);
  Py_DECREF(exc);
  return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Context                                                                                  */
/* ---------------------------------------------------------------------------------------- */

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

static PyTypeObject ContextType;

/* A device block of at least `bytes` for a result: a spare one when one fits, else rdx_malloc's.
 * Called under the context's lock. */
static rdx_status block_take(ContextObject *c, size_t bytes, void **block, size_t *block_bytes) {
  for (int i = 0; bytes > 0 && i < c->n_spare; i++)
    if (c->spare_bytes[i] >= bytes) {
      *block = c->spare[i], *block_bytes = c->spare_bytes[i];
      c->n_spare--;
      c->spare[i] = c->spare[c->n_spare], c->spare_bytes[i] = c->spare_bytes[c->n_spare];
      return RDX_OK;
    }
  *block_bytes = bytes;
  return rdx_malloc(c->ctx, block, bytes, RDX_DEVICE);
}

/* Give a result's device block back: kept as a spare when it never left raydex and is small
 * (SPARE_MAX_BYTES), else freed (rdx_free waits for every stream that may still read it). Called
 * under the context's lock. */
static void block_give(ContextObject *c, void *block, size_t bytes, int exported) {
  if (!exported && bytes <= SPARE_MAX_BYTES) {
    if (c->n_spare == SPARE_BLOCKS) { /* the smallest spare makes room */
      int small = 0;
      for (int i = 1; i < c->n_spare; i++)
        if (c->spare_bytes[i] < c->spare_bytes[small]) small = i;
      if (c->spare_bytes[small] >= bytes) {
        rdx_free(c->ctx, block, RDX_DEVICE);
        return;
      }
      rdx_free(c->ctx, c->spare[small], RDX_DEVICE);
      c->spare[small] = c->spare[--c->n_spare], c->spare_bytes[small] = c->spare_bytes[c->n_spare];
    }
    c->spare[c->n_spare] = block, c->spare_bytes[c->n_spare] = bytes;
    c->n_spare++;
    return;
  }
  rdx_free(c->ctx, block, RDX_DEVICE);
}

/* Run `call` without the GIL and with the context's lock; on failure copy the context's message
 * into msg (a char[MESSAGE_BYTES]) before another thread can replace it. `guard` is checked under
 * the lock: when false the call is skipped and st is CLOSED_STATUS. RUN_ON first waits for the
 * device's producers when `device_inputs` is true (wait_for_device says why). */
#define RUN_ON(cobj, st, msg, guard, device_inputs, call)                                \
  do {                                                                                   \
    Py_BEGIN_ALLOW_THREADS                                                               \
    PyThread_acquire_lock((cobj)->lock, WAIT_LOCK);                                      \
    if (!(guard)) {                                                                      \
      (st) = CLOSED_STATUS;                                                              \
    } else {                                                                             \
      (st) = (device_inputs) ? wait_for_device((cobj)->ctx) : RDX_OK;                    \
      if ((st) == RDX_OK) (st) = (call);                                                 \
      if ((st) != RDX_OK) snprintf((msg), MESSAGE_BYTES, "%s", rdx_context_message((cobj)->ctx)); \
    }                                                                                    \
    PyThread_release_lock((cobj)->lock);                                                 \
    Py_END_ALLOW_THREADS                                                                 \
  } while (0)
#define RUN(cobj, st, msg, guard, call) RUN_ON(cobj, st, msg, guard, 0, call)

/* Device arrays come from CuPy, PyTorch or JAX, whose kernels that wrote them may still be running
 * on their streams. __dlpack__ is asked for stream=1 (from_dlpack), so the producer orders that
 * work before the legacy default stream; raydex's own stream is a non-blocking one, which waits
 * for no other until told: rdx_context_wait_stream makes it wait for the legacy stream, on the
 * device, without blocking the host. */
static rdx_status wait_for_device(rdx_context *ctx) { return rdx_context_wait_stream(ctx, (void *)1); }

static int parse_backend(const char *name, rdx_backend *out) {
  static const struct { const char *name; rdx_backend backend; } table[] = {
      {"auto", RDX_BACKEND_AUTO}, {"cpu", RDX_BACKEND_CPU}, {"cuda", RDX_BACKEND_CUDA},
      {"optix", RDX_BACKEND_OPTIX}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(name, table[i].name) == 0) {
      *out = table[i].backend;
      return 0;
    }
  PyErr_Format(PyExc_ValueError, "backend must be 'auto', 'cpu', 'cuda' or 'optix' (got '%s')", name);
  return -1;
}

static ContextObject *context_make(PyTypeObject *type, rdx_backend backend, int threads,
                                   long long memory_limit, int device) {
  ContextObject *self = (ContextObject *)type->tp_alloc(type, 0);
  if (self == NULL) return NULL;
  self->lock = PyThread_allocate_lock();
  if (self->lock == NULL) {
    Py_DECREF(self);
    PyErr_NoMemory();
    return NULL;
  }
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = backend;
  o.n_threads = threads;
  o.memory_limit = memory_limit;
  o.device = device;
  rdx_context *ctx = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES] = "";
  Py_BEGIN_ALLOW_THREADS
  st = rdx_context_create(&o, &ctx);
  if (st != RDX_OK) {
    snprintf(msg, sizeof msg, "%s", rdx_context_message(ctx));
    rdx_context_destroy(ctx);
    ctx = NULL;
  }
  Py_END_ALLOW_THREADS
  if (st != RDX_OK) {
    Py_DECREF(self);
    return (ContextObject *)raise_status(st, msg, "Context");
  }
  self->ctx = ctx;
  self->device = device;
  return self;
}

static PyObject *context_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"backend", "threads", "memory_limit", "device", NULL};
  const char *backend_name = "auto";
  int threads = 0, device = 0;
  long long memory_limit = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|siLi:Context", kwlist, &backend_name, &threads,
                                   &memory_limit, &device))
    return NULL;
  rdx_backend backend;
  if (parse_backend(backend_name, &backend) < 0) return NULL;
  if (threads < 0) return PyErr_Format(PyExc_ValueError, "Context: threads must be >= 0 (got %d)", threads);
  if (memory_limit < 0)
    return PyErr_Format(PyExc_ValueError, "Context: memory_limit must be >= 0 (got %lld)", memory_limit);
  return (PyObject *)context_make(type, backend, threads, memory_limit, device);
}

static void context_dealloc(ContextObject *self) {
  /* Every index and result holds a reference, so nothing made in ctx is left here but spares. */
  for (int i = 0; i < self->n_spare; i++) rdx_free(self->ctx, self->spare[i], RDX_DEVICE);
  rdx_context_destroy(self->ctx);
  if (self->lock != NULL) PyThread_free_lock(self->lock);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *context_get_backend(ContextObject *self, void *closure) {
  (void)closure;
  return PyUnicode_FromString(rdx_backend_name(rdx_context_backend(self->ctx)));
}

static PyObject *context_memory(ContextObject *self, PyObject *unused) {
  (void)unused;
  int64_t in_use = 0, peak = 0;
  Py_BEGIN_ALLOW_THREADS
  PyThread_acquire_lock(self->lock, WAIT_LOCK);
  rdx_context_memory(self->ctx, &in_use, &peak);
  PyThread_release_lock(self->lock);
  Py_END_ALLOW_THREADS
  return Py_BuildValue("(LL)", (long long)in_use, (long long)peak);
}

static PyObject *context_set_memory_limit(ContextObject *self, PyObject *arg) {
  long long bytes = PyLong_AsLongLong(arg);
  if (bytes == -1 && PyErr_Occurred()) return NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self, st, msg, 1, rdx_context_set_memory_limit(self->ctx, (int64_t)bytes));
  if (st != RDX_OK) return raise_status(st, msg, "Context");
  Py_RETURN_NONE;
}

static PyObject *context_repr(ContextObject *self) {
  return PyUnicode_FromFormat("<raydex.Context backend=%s>",
                              rdx_backend_name(rdx_context_backend(self->ctx)));
}

static PyMethodDef context_methods[] = {
    {"memory", (PyCFunction)context_memory, METH_NOARGS,
     "memory() -> (in_use, peak): bytes the context holds now and the most it has held (spare\n"
     "blocks of dropped device results included)."},
    {"set_memory_limit", (PyCFunction)context_set_memory_limit, METH_O,
     "set_memory_limit(bytes): limit the context's memory (0 = none)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef context_getset[] = {
    {"backend", (getter)context_get_backend, NULL, "the backend the context runs on", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "raydex.Context",
    .tp_basicsize = sizeof(ContextObject),
    .tp_dealloc = (destructor)context_dealloc,
    .tp_repr = (reprfunc)context_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Context(backend='auto', threads=0, memory_limit=0, device=0)\n\n"
              "A raydex context: a backend ('auto', 'cpu', 'cuda', 'optix'), CPU threads (0 = the\n"
              "default), a memory limit in bytes (0 = none) and a CUDA device ordinal. Indexes keep\n"
              "their context alive. A GPU context keeps the device memory of up to 4 small results\n"
              "(1 MiB each) that were dropped without ever being exported, for the next lookup or pip\n"
              "to write into; memory() counts them.",
    .tp_methods = context_methods,
    .tp_getset = context_getset,
    .tp_new = context_new,
};

/* The module's default contexts, one per backend, made on first use. */
static PyObject *default_contexts[4];

static ContextObject *resolve_context(PyObject *context, const char *backend_name, const char *what) {
  rdx_backend backend;
  if (parse_backend(backend_name, &backend) < 0) return NULL;
  if (context != NULL && context != Py_None) {
    if (!PyObject_TypeCheck(context, &ContextType)) {
      PyErr_Format(PyExc_TypeError, "%s: context must be a raydex.Context (got %s)", what,
                   Py_TYPE(context)->tp_name);
      return NULL;
    }
    ContextObject *c = (ContextObject *)context;
    if (backend != RDX_BACKEND_AUTO && rdx_context_backend(c->ctx) != backend) {
      PyErr_Format(PyExc_ValueError, "%s: backend '%s' differs from the context's backend '%s'", what,
                   backend_name, rdx_backend_name(rdx_context_backend(c->ctx)));
      return NULL;
    }
    Py_INCREF(c);
    return c;
  }
  int slot = (int)backend - (int)RDX_BACKEND_AUTO;
  if (default_contexts[slot] == NULL) {
    ContextObject *c = context_make(&ContextType, backend, 0, 0, 0);
    if (c == NULL) return NULL;
    /* context_make released the GIL: another thread may have made the default meanwhile */
    if (default_contexts[slot] == NULL)
      default_contexts[slot] = (PyObject *)c;
    else
      Py_DECREF(c);
  }
  Py_INCREF(default_contexts[slot]);
  return (ContextObject *)default_contexts[slot];
}

/* ---------------------------------------------------------------------------------------- */
/* Arrays in: the buffer protocol                                                           */
/* ---------------------------------------------------------------------------------------- */

#define M_U32 (1u << 0)
#define M_U64 (1u << 1)
#define M_I64 (1u << 2)
#define M_F32 (1u << 3)
#define M_F64 (1u << 4)

static unsigned dtype_mask(rdx_dtype d) {
  switch (d) {
  case RDX_U32: return M_U32;
  case RDX_U64: return M_U64;
  case RDX_I64: return M_I64;
  case RDX_F32: return M_F32;
  case RDX_F64: return M_F64;
  }
  return 0;
}

static const char *dtype_numpy_name(rdx_dtype d) {
  switch (d) {
  case RDX_U32: return "uint32";
  case RDX_U64: return "uint64";
  case RDX_I64: return "int64";
  case RDX_F32: return "float32";
  case RDX_F64: return "float64";
  }
  return "?";
}

static int dtype_npy(rdx_dtype d) {
  switch (d) {
  case RDX_U32: return NPY_UINT32;
  case RDX_U64: return NPY_UINT64;
  case RDX_I64: return NPY_INT64;
  case RDX_F32: return NPY_FLOAT32;
  case RDX_F64: return NPY_FLOAT64;
  }
  return NPY_NOTYPE;
}

/* The rdx_dtype of a buffer's struct-module format, or 0 (another type, big-endian). Sizes come
 * from itemsize, so native ('L', 8 bytes) and standard ('<Q') spellings both work. */
static rdx_dtype buffer_dtype(const Py_buffer *v, char *name, size_t name_bytes) {
  const char *f = v->format != NULL ? v->format : "B";
  char order = 0;
  if (strchr("@=<>!", f[0]) != NULL && f[0] != '\0') order = *f++;
  int big = order == '>' || order == '!'; /* raydex runs on little-endian hosts (x86-64, arm64) */
  snprintf(name, name_bytes, "format '%s'", v->format != NULL ? v->format : "B");
  if (f[0] == '\0' || f[1] != '\0') return (rdx_dtype)0;
  char c = f[0];
  Py_ssize_t size = v->itemsize;
  const char *kind = strchr("BHILQN", c) ? "uint" : strchr("bhilqn", c) ? "int" : strchr("efd", c) ? "float"
                   : c == '?' ? "bool" : NULL;
  if (kind == NULL) return (rdx_dtype)0;
  if (c == '?')
    snprintf(name, name_bytes, "bool");
  else
    snprintf(name, name_bytes, "%s%s%d", big ? ">" : "", kind, (int)(size * 8));
  if (big) return (rdx_dtype)0;
  if (strcmp(kind, "uint") == 0) return size == 4 ? RDX_U32 : size == 8 ? RDX_U64 : (rdx_dtype)0;
  if (strcmp(kind, "int") == 0) return size == 8 ? RDX_I64 : (rdx_dtype)0;
  if (strcmp(kind, "float") == 0) return size == 4 ? RDX_F32 : size == 8 ? RDX_F64 : (rdx_dtype)0;
  return (rdx_dtype)0;
}

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

/* Restore a saved exception (or drop it) across the two Python versions' APIs. */
#if PY_VERSION_HEX >= 0x030C0000
#define SAVED_ERROR PyObject *saved_
#define SAVE_ERROR() (saved_ = PyErr_GetRaisedException())
#define RESTORE_ERROR() PyErr_SetRaisedException(saved_)
#define DROP_ERROR() Py_XDECREF(saved_)
#else
#define SAVED_ERROR PyObject *saved_type_, *saved_, *saved_tb_
#define SAVE_ERROR() PyErr_Fetch(&saved_type_, &saved_, &saved_tb_)
#define RESTORE_ERROR() PyErr_Restore(saved_type_, saved_, saved_tb_)
#define DROP_ERROR() (Py_XDECREF(saved_type_), Py_XDECREF(saved_), Py_XDECREF(saved_tb_))
#endif

/* Deleters and release callbacks are the producer's code, which may run Python: any exception
 * already raised (the reason for releasing early) is set aside meanwhile. */
static void in_release(InArray *in) {
  if (in->held) PyBuffer_Release(&in->view);
  in->held = 0;
  SAVED_ERROR;
  SAVE_ERROR();
  if (in->dl != NULL) {
    if (in->dl_versioned) {
      DLManagedTensorVersioned *t = in->dl;
      if (t->deleter != NULL) t->deleter(t);
    } else {
      DLManagedTensor *t = in->dl;
      if (t->deleter != NULL) t->deleter(t);
    }
    in->dl = NULL;
  }
  Py_CLEAR(in->arrow);
  if (in->chunk.release != NULL) in->chunk.release(&in->chunk);
  PyMem_RawFree(in->copy);
  in->copy = NULL;
  if (PyErr_Occurred()) PyErr_WriteUnraisable(NULL); /* a producer's own failure: nothing to return it to */
  RESTORE_ERROR();
}

/* What a source describes, checked against the wanted dtype and shape in one place. */
typedef struct {
  void *data;
  rdx_dtype dtype;           /* 0: not one raydex reads; got names it */
  char got[64];
  int ndim;
  int64_t rows, columns;     /* shape[0] and (2-D) shape[1] */
  char shape[96];
  rdx_location where;
} Source;

static void shape_text(int ndim, const int64_t *shape, char *out, size_t bytes) {
  size_t n = (size_t)snprintf(out, bytes, "(");
  for (int i = 0; i < ndim && n < bytes; i++)
    n += (size_t)snprintf(out + n, bytes - n, i == 0 ? "%lld" : ", %lld", (long long)shape[i]);
  if (n < bytes) snprintf(out + n, bytes - n, ndim == 1 ? ",)" : ")");
}

static void source_shape(Source *src, int ndim, const int64_t *shape) {
  src->ndim = ndim;
  src->rows = ndim >= 1 ? shape[0] : 1;
  src->columns = ndim >= 2 ? shape[1] : 1;
  shape_text(ndim, shape, src->shape, sizeof src->shape);
}

static int from_buffer(PyObject *obj, const char *want, InArray *in, Source *src) {
  if (PyObject_GetBuffer(obj, &in->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
    /* Strided but otherwise readable: say so. Anything else keeps the exporter's own error. */
    SAVED_ERROR;
    SAVE_ERROR();
    int strided = PyObject_GetBuffer(obj, &in->view, PyBUF_FULL_RO) == 0;
    if (strided) PyBuffer_Release(&in->view);
    PyErr_Clear();
    if (strided) {
      DROP_ERROR();
      PyErr_Format(PyExc_ValueError, "%s must be a C-contiguous array (%s); np.ascontiguousarray makes one",
                   in->what, want);
    } else {
      RESTORE_ERROR();
    }
    return -1;
  }
  in->held = 1;
  src->data = in->view.buf;
  src->dtype = buffer_dtype(&in->view, src->got, sizeof src->got);
  int64_t shape[8];
  int ndim = in->view.ndim < 8 ? in->view.ndim : 8;
  for (int i = 0; i < ndim; i++) shape[i] = (int64_t)in->view.shape[i];
  source_shape(src, in->view.ndim, shape);
  src->where = RDX_HOST;
  return 0;
}

/* DLPack: the versioned protocol first, the unversioned one for producers that predate it (they
 * reject max_version with TypeError, as numpy < 2.1 does). For CUDA tensors raydex asks for
 * stream=1, the legacy default stream, which the protocol defines for every producer (None means
 * it too, but not every producer reads it so); raydex's own stream does not wait for it, so calls
 * with device inputs first wait for the device (RUN_ON). */
static int from_dlpack(PyObject *obj, InArray *in, Source *src) {
  PyObject *dev = PyObject_CallMethodNoArgs(obj, names.dlpack_device);
  if (dev == NULL) return -1;
  int device_type = 0, device_id = 0;
  int ok = PyArg_ParseTuple(dev, "ii", &device_type, &device_id);
  Py_DECREF(dev);
  if (!ok) {
    PyErr_Format(PyExc_TypeError, "%s: __dlpack_device__() must return (device_type, device_id)", in->what);
    return -1;
  }
  if (device_type != kDLCPU && device_type != kDLCUDA && device_type != kDLCUDAHost) {
    PyErr_Format(InvalidArgumentError,
                 "%s is on DLPack device type %d; raydex reads CPU (1), CUDA (2) and CUDA host (3) memory",
                 in->what, device_type);
    return -1;
  }
  /* obj.__dlpack__(stream=..., max_version=(1, 0)), or without max_version for producers older
   * than DLPack 1.0, which refuse it with a TypeError */
  PyObject *call[3] = {obj, device_type == kDLCUDA ? names.one : Py_None, names.version_1_0};
  PyObject *cap = PyObject_VectorcallMethod(names.dlpack, call, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                            names.kw_stream_version);
  if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    cap = PyObject_VectorcallMethod(names.dlpack, call, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, names.kw_stream);
  }
  if (cap == NULL) return -1;
  DLTensor *t = NULL;
  if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (m->version.major != 1) {
      Py_DECREF(cap);
      PyErr_Format(PyExc_BufferError, "%s: __dlpack__ gave DLPack %u.%u although raydex asked for 1.x at most",
                   in->what, (unsigned)m->version.major, (unsigned)m->version.minor);
      return -1;
    }
    /* Renamed first: from here on raydex owns m and the capsule's destructor leaves it alone. */
    if (PyCapsule_SetName(cap, "used_dltensor_versioned") < 0) {
      Py_DECREF(cap);
      return -1;
    }
    in->dl = m;
    in->dl_versioned = 1;
    t = &m->dl_tensor;
  } else if (PyCapsule_IsValid(cap, "dltensor")) {
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (PyCapsule_SetName(cap, "used_dltensor") < 0) {
      Py_DECREF(cap);
      return -1;
    }
    in->dl = m;
    t = &m->dl_tensor;
  } else {
    PyErr_Format(PyExc_TypeError, "%s: __dlpack__ returned %s, not an unused 'dltensor' capsule", in->what,
                 Py_TYPE(cap)->tp_name);
    Py_DECREF(cap);
    return -1;
  }
  Py_DECREF(cap);
  if (t->device.device_type != device_type || t->device.device_id != device_id) {
    PyErr_Format(PyExc_BufferError, "%s: __dlpack__ gave a tensor on device (%d, %d), __dlpack_device__ said (%d, %d)",
                 in->what, (int)t->device.device_type, (int)t->device.device_id, device_type, device_id);
    return -1;
  }
  if (t->ndim < 0 || t->ndim > 8) {
    PyErr_Format(PyExc_ValueError, "%s has %d dimensions", in->what, (int)t->ndim);
    return -1;
  }
  src->dtype = dl_dtype(t->dtype, src->got, sizeof src->got);
  source_shape(src, t->ndim, t->shape);
  if (!dl_contiguous(t)) {
    char strides[96];
    shape_text(t->ndim, t->strides, strides, sizeof strides);
    PyErr_Format(PyExc_ValueError,
                 "%s must be C-contiguous; got shape %s with strides %s (in elements). raydex does not "
                 "copy: make a contiguous one (cupy.ascontiguousarray, torch.Tensor.contiguous)",
                 in->what, src->shape, strides);
    return -1;
  }
  src->data = t->data != NULL ? (char *)t->data + t->byte_offset : NULL;
  src->where = device_type == kDLCUDA ? RDX_DEVICE : RDX_HOST;
  in->device = device_id;
  return 0;
}

/* Arrow data must be a 1-D primitive array without nulls: raydex's arrays have no validity. */
static int arrow_check(InArray *in, const struct ArrowSchema *schema, const struct ArrowArray *array,
                       Source *src) {
  src->dtype = arrow_dtype(schema->format, src->got, sizeof src->got);
  if (schema->dictionary != NULL || schema->n_children != 0 || (src->dtype != 0 && array->n_buffers != 2)) {
    snprintf(src->got, sizeof src->got, "Arrow format '%s'%s", schema->format != NULL ? schema->format : "",
             schema->dictionary != NULL ? " (dictionary-encoded)" : "");
    src->dtype = (rdx_dtype)0;
  }
  if (src->dtype != 0) {
    int64_t nulls = arrow_nulls(array);
    if (nulls != 0) {
      PyErr_Format(PyExc_ValueError,
                   "%s has %lld null values; raydex takes arrays without nulls (fill or drop them first, "
                   "e.g. pyarrow.compute.fill_null or .drop_null())",
                   in->what, (long long)nulls);
      return -1;
    }
  }
  return 0;
}

static int from_arrow_array(PyObject *obj, InArray *in, Source *src) {
  PyObject *pair = PyObject_CallMethod(obj, "__arrow_c_array__", NULL);
  if (pair == NULL) return -1;
  if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
      !PyCapsule_IsValid(PyTuple_GET_ITEM(pair, 0), "arrow_schema") ||
      !PyCapsule_IsValid(PyTuple_GET_ITEM(pair, 1), "arrow_array")) {
    Py_DECREF(pair);
    PyErr_Format(PyExc_TypeError, "%s: __arrow_c_array__ must return an (arrow_schema, arrow_array) capsule pair",
                 in->what);
    return -1;
  }
  in->arrow = pair; /* the capsules' destructors release both structs after the call */
  const struct ArrowSchema *schema = PyCapsule_GetPointer(PyTuple_GET_ITEM(pair, 0), "arrow_schema");
  const struct ArrowArray *array = PyCapsule_GetPointer(PyTuple_GET_ITEM(pair, 1), "arrow_array");
  if (schema->release == NULL || array->release == NULL) {
    PyErr_Format(PyExc_ValueError, "%s: __arrow_c_array__ returned released structs", in->what);
    return -1;
  }
  if (arrow_check(in, schema, array, src) < 0) return -1;
  int64_t shape[1] = {array->length};
  source_shape(src, 1, shape);
  size_t size = rdx_dtype_size(src->dtype);
  src->data = src->dtype != 0 && array->length > 0 ? (char *)array->buffers[1] + (size_t)array->offset * size : NULL;
  src->where = RDX_HOST;
  return 0;
}

static const char *stream_error(struct ArrowArrayStream *s) {
  const char *e = s->get_last_error != NULL ? s->get_last_error(s) : NULL;
  return e != NULL ? e : "no message";
}

/* Release chunks (the producer's callbacks) with any raised exception set aside meanwhile. */
static void chunks_release(struct ArrowArray *chunks, int64_t n) {
  SAVED_ERROR;
  SAVE_ERROR();
  for (int64_t i = 0; i < n; i++) chunks[i].release(&chunks[i]);
  RESTORE_ERROR();
}

/* An Arrow stream: one chunk is read in place; several are concatenated into one copy, the only
 * copy raydex makes of an input, because the library takes one array per argument. */
static int from_arrow_stream(PyObject *obj, InArray *in, Source *src) {
  PyObject *cap = PyObject_CallMethod(obj, "__arrow_c_stream__", NULL);
  if (cap == NULL) return -1;
  if (!PyCapsule_IsValid(cap, "arrow_array_stream")) {
    Py_DECREF(cap);
    PyErr_Format(PyExc_TypeError, "%s: __arrow_c_stream__ must return an arrow_array_stream capsule", in->what);
    return -1;
  }
  struct ArrowArrayStream *stream = PyCapsule_GetPointer(cap, "arrow_array_stream");
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  struct ArrowArray *chunks = NULL;  /* the non-empty chunks, owned until released below */
  int64_t n_chunks = 0, capacity = 0, total = 0;
  int rc = -1;
  if (stream->release == NULL || stream->get_schema(stream, &schema) != 0) {
    PyErr_Format(PyExc_ValueError, "%s: the Arrow stream's get_schema failed: %s", in->what,
                 stream->release != NULL ? stream_error(stream) : "the stream is released");
    goto done;
  }
  src->dtype = arrow_dtype(schema.format, src->got, sizeof src->got);
  while (src->dtype != 0) {
    struct ArrowArray next;
    memset(&next, 0, sizeof next);
    if (stream->get_next(stream, &next) != 0) {
      PyErr_Format(PyExc_ValueError, "%s: the Arrow stream's get_next failed: %s", in->what, stream_error(stream));
      goto done;
    }
    if (next.release == NULL) break;  /* end of stream */
    if (arrow_check(in, &schema, &next, src) < 0) {
      chunks_release(&next, 1);
      goto done;
    }
    if (src->dtype == 0 || next.length == 0) {
      next.release(&next);
      continue;
    }
    if (n_chunks == capacity) {
      int64_t grown = capacity > 0 ? 2 * capacity : 4;
      struct ArrowArray *more = PyMem_RawRealloc(chunks, (size_t)grown * sizeof *chunks);
      if (more == NULL) {
        next.release(&next);
        PyErr_NoMemory();
        goto done;
      }
      chunks = more, capacity = grown;
    }
    chunks[n_chunks++] = next;
    total += next.length;
  }
  int64_t shape[1] = {total};
  source_shape(src, 1, shape);
  src->where = RDX_HOST;
  size_t size = rdx_dtype_size(src->dtype);
  if (src->dtype == 0 || n_chunks == 0) {
    src->data = NULL;
  } else if (n_chunks == 1) {
    in->chunk = chunks[0];
    n_chunks = 0;
    src->data = (char *)in->chunk.buffers[1] + (size_t)in->chunk.offset * size;
  } else {
    in->copy = PyMem_RawMalloc((size_t)total * size);
    if (in->copy == NULL) {
      PyErr_NoMemory();
      goto done;
    }
    size_t at = 0;
    for (int64_t i = 0; i < n_chunks; i++) {
      memcpy((char *)in->copy + at, (const char *)chunks[i].buffers[1] + (size_t)chunks[i].offset * size,
             (size_t)chunks[i].length * size);
      at += (size_t)chunks[i].length * size;
    }
    src->data = in->copy;
  }
  rc = 0;
done:;
  SAVED_ERROR; /* the producer's callbacks run below, with the reason for stopping set aside */
  SAVE_ERROR();
  chunks_release(chunks, n_chunks);
  PyMem_RawFree(chunks);
  if (schema.release != NULL) schema.release(&schema);
  Py_DECREF(cap); /* its destructor releases the stream; the chunks are independent of it */
  RESTORE_ERROR();
  return rc;
}

/* Whether obj has the attribute, without making and dropping an AttributeError when it has not
 * (a device array misses two protocols on every call before DLPack's). */
static int has_attr(PyObject *obj, PyObject *name) {
  PyObject *v = NULL;
#if PY_VERSION_HEX >= 0x030D0000
  int found = PyObject_GetOptionalAttr(obj, name, &v);
#else
  int found = _PyObject_LookupAttr(obj, name, &v);
#endif
  if (found < 0) PyErr_Clear();
  Py_XDECREF(v);
  return found > 0;
}

/* Borrow obj as an rdx_array: C-contiguous, a dtype in `mask`, 1-D when columns == 0, else 2-D
 * with that many columns. obj is a buffer (numpy: host memory), an Arrow array or stream (host
 * memory, 1-D), or a DLPack tensor (host or CUDA device memory). `what` names the argument and
 * `wanted` the dtypes in messages. */
static int in_array(PyObject *obj, const char *what, unsigned mask, const char *wanted, int columns,
                    InArray *in) {
  memset(in, 0, sizeof *in);
  in->what = what;
  char want_shape[32], want[96];
  if (columns == 0)
    snprintf(want_shape, sizeof want_shape, "1-D");
  else
    snprintf(want_shape, sizeof want_shape, "(n, %d)", columns);
  snprintf(want, sizeof want, "%s, %s", want_shape, wanted);
  Source src;
  memset(&src, 0, sizeof src);
  int rc;
  /* numpy first (the common case, no attribute lookups); Arrow before DLPack (pyarrow offers both,
   * and only Arrow tells nulls); DLPack before the buffer protocol, since CuPy arrays export a
   * buffer that refuses to be read on the host */
  if (PyArray_Check(obj) || (PyObject_CheckBuffer(obj) && !has_attr(obj, names.dlpack)))
    rc = from_buffer(obj, want, in, &src);
  else if (has_attr(obj, names.arrow_array))
    rc = from_arrow_array(obj, in, &src);
  else if (has_attr(obj, names.arrow_stream))
    rc = from_arrow_stream(obj, in, &src);
  else if (has_attr(obj, names.dlpack))
    rc = from_dlpack(obj, in, &src);
  else if (PyObject_CheckBuffer(obj))
    rc = from_buffer(obj, want, in, &src);
  else {
    PyErr_Format(PyExc_TypeError,
                 "%s must be a numpy array, a DLPack tensor (__dlpack__: CuPy, PyTorch, JAX) or an Arrow "
                 "array (__arrow_c_array__) (%s); got %s", what, want, Py_TYPE(obj)->tp_name);
    return -1;
  }
  if (rc < 0) {
    in_release(in);
    return -1;
  }
  int ndim_ok = columns == 0 ? src.ndim == 1 : src.ndim == 2 && src.columns == columns;
  if (src.dtype == 0 || (dtype_mask(src.dtype) & mask) == 0 || !ndim_ok) {
    PyErr_Format(PyExc_ValueError, "%s must be a %s array of %s; got %s with shape %s", what,
                 want_shape, wanted, src.dtype != 0 ? dtype_numpy_name(src.dtype) : src.got,
                 src.shape);
    in_release(in);
    return -1;
  }
  if ((uintptr_t)src.data % rdx_dtype_size(src.dtype) != 0) {
    PyErr_Format(PyExc_ValueError, "%s: data at %p is not aligned to its %zu-byte elements", what, src.data,
                 rdx_dtype_size(src.dtype));
    in_release(in);
    return -1;
  }
  in->a = columns == 0 ? rdx_host_array(src.data, src.rows, src.dtype)
                       : rdx_host_matrix(src.data, src.rows, columns, src.dtype);
  in->a.where = src.where;
  return 0;
}

/* Device inputs need a GPU context on the tensor's device; the check gives the argument's name,
 * where the library's own refusal could name only its parameter. */
static int in_reach(const ContextObject *context, const InArray *in) {
  if (in->a.where != RDX_DEVICE) return 0;
  rdx_backend backend = rdx_context_backend(context->ctx);
  if (backend == RDX_BACKEND_CPU) {
    PyErr_Format(InvalidArgumentError,
                 "%s is CUDA device memory (DLPack device (2, %d)) but the context's backend is cpu: "
                 "use a GPU context (backend='cuda' or 'optix') or pass host memory",
                 in->what, in->device);
    return -1;
  }
  if (in->device != context->device) {
    PyErr_Format(InvalidArgumentError, "%s is on CUDA device %d but the context runs on device %d", in->what,
                 in->device, context->device);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Arrays out: results owned by the library, viewed by numpy, DLPack or Arrow                */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  ContextObject *context;  /* strong: the result belongs to its memory account */
  rdx_result *result;      /* owned; freed when every view of it is gone */
  rdx_join_pairs_result *pairs; /* or a polygon join's result (owned likewise) */
  void *block;             /* or a device block (block_take: a lookup's or pip's output on the GPU) */
  size_t block_bytes;      /* its size */
  int exported;            /* the block's address left raydex (DLPack, data_ptr): block_give frees it */
} ResultOwnerObject;

static void owner_dealloc(ResultOwnerObject *self) {
  if (self->result != NULL || self->pairs != NULL || self->block != NULL) {
    /* With the GIL held: lock holders never wait for the GIL, so this cannot deadlock. Freeing
     * device memory waits for the device, so a consumer's kernels still reading it finish first. */
    PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
    if (self->result != NULL) rdx_result_free(self->context->ctx, self->result);
    if (self->pairs != NULL) rdx_join_pairs_free(self->context->ctx, self->pairs);
    if (self->block != NULL) block_give(self->context, self->block, self->block_bytes, self->exported);
    PyThread_release_lock(self->context->lock);
  }
  Py_XDECREF(self->context);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ResultOwnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "raydex._raydex._ResultOwner",
    .tp_basicsize = sizeof(ResultOwnerObject),
    .tp_dealloc = (destructor)owner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Keeps a raydex result alive while numpy arrays, DLPack tensors or Arrow arrays view it.",
};

/* An owner holding nothing yet, or NULL with an exception set. */
static ResultOwnerObject *owner_new(ContextObject *context) {
  ResultOwnerObject *owner = PyObject_New(ResultOwnerObject, &ResultOwnerType);
  if (owner == NULL) return NULL;
  Py_INCREF(context);
  owner->context = context;
  owner->result = NULL;
  owner->pairs = NULL;
  owner->block = NULL;
  owner->block_bytes = 0;
  owner->exported = 0;
  return owner;
}

static PyObject *wrap_u64(uint64_t *data, npy_intp n, PyObject *owner) {
  if (n == 0 || data == NULL) return PyArray_ZEROS(1, &n, NPY_UINT64, 0);
  PyObject *a = PyArray_SimpleNewFromData(1, &n, NPY_UINT64, data);
  if (a == NULL) return NULL;
  Py_INCREF(owner);
  if (PyArray_SetBaseObject((PyArrayObject *)a, owner) < 0) { /* steals owner even on failure */
    Py_DECREF(a);
    return NULL;
  }
  return a;
}

/* Exported structs (DLPack tensors, Arrow arrays) hold a reference to the object that keeps their
 * memory alive; consumers may let go of them from any thread, so the reference is dropped with
 * the GIL taken here. After interpreter shutdown there is nothing left to drop. */
static void unkeep(void *keep) {
  if (!Py_IsInitialized()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF((PyObject *)keep);
  PyGILState_Release(gil);
}

static void take(void *keep) { Py_INCREF((PyObject *)keep); }

/* ---- raydex.DeviceArray: a 1-D view of device memory that raydex owns, exported by DLPack ---- */

typedef struct {
  PyObject_HEAD
  PyObject *owner;   /* a _ResultOwner: the memory goes back to the context when every view is gone */
  void *data;        /* device memory of the owner's context; NULL only when n == 0 */
  int64_t n;         /* elements */
  int64_t stride;    /* in elements: 1, or 2 for one column of a join's (n, 2) pairs */
  rdx_dtype dtype;
  int device;        /* CUDA ordinal */
} DeviceArrayObject;

static PyTypeObject DeviceArrayType;

static PyObject *device_array(ResultOwnerObject *owner, void *data, int64_t n, int64_t stride, rdx_dtype dtype) {
  DeviceArrayObject *self = PyObject_New(DeviceArrayObject, &DeviceArrayType);
  if (self == NULL) return NULL;
  Py_INCREF(owner);
  self->owner = (PyObject *)owner;
  self->data = data;
  self->n = n;
  self->stride = stride;
  self->dtype = dtype;
  self->device = owner->context->device;
  return (PyObject *)self;
}

static void darray_dealloc(DeviceArrayObject *self) {
  Py_XDECREF(self->owner);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

typedef struct { DLManagedTensor m; int64_t shape[1], strides[1]; } DLExport;
typedef struct { DLManagedTensorVersioned m; int64_t shape[1], strides[1]; } DLExportVersioned;

static void dl_delete(DLManagedTensor *m) {
  unkeep(m->manager_ctx);
  free(m); /* the first member of its DLExport */
}

static void dl_delete_versioned(DLManagedTensorVersioned *m) {
  unkeep(m->manager_ctx);
  free(m);
}

/* A capsule nobody consumed still owns its tensor; a consumed one was renamed "used_...". */
static void dl_capsule_free(PyObject *cap) {
  if (PyCapsule_IsValid(cap, "dltensor")) {
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    m->deleter(m);
  } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
    m->deleter(m);
  }
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None). The data is complete
 * before raydex returns it (calls are synchronous), so any stream may read it without waiting:
 * `stream` is checked for type only. Never a copy: copy=True and other devices are refused. */
static PyObject *darray_dlpack(DeviceArrayObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$OOOO:__dlpack__", kwlist, &stream, &max_version, &dl_device,
                                   &copy))
    return NULL;
  if (stream != Py_None && !PyLong_Check(stream))
    return PyErr_Format(PyExc_TypeError, "DeviceArray.__dlpack__: stream must be None or an int (got %s)",
                        Py_TYPE(stream)->tp_name);
  int major = 0, minor = 0;
  if (max_version != Py_None &&
      !PyArg_ParseTuple(max_version, "ii;DeviceArray.__dlpack__: max_version must be (major, minor)", &major, &minor))
    return NULL;
  if (dl_device != Py_None) {
    int type = 0, id = 0;
    if (!PyArg_ParseTuple(dl_device, "ii;DeviceArray.__dlpack__: dl_device must be (device_type, device_id)",
                          &type, &id))
      return NULL;
    if (type != kDLCUDA || id != self->device)
      return PyErr_Format(PyExc_BufferError,
                          "DeviceArray.__dlpack__: the array is on CUDA device %d (DLPack (2, %d)); raydex does "
                          "not copy it to (%d, %d)", self->device, self->device, type, id);
  }
  int want_copy = copy != Py_None ? PyObject_IsTrue(copy) : 0;
  if (want_copy < 0) return NULL;
  if (want_copy)
    return PyErr_Format(PyExc_BufferError, "DeviceArray.__dlpack__: copy=True is not supported (raydex exports "
                                           "its results without copies)");
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = self->data;
  t.device.device_type = kDLCUDA;
  t.device.device_id = self->device;
  t.ndim = 1;
  t.dtype = dl_of(self->dtype);
  PyObject *cap;
  if (max_version != Py_None && major >= 1) {
    DLExportVersioned *e = calloc(1, sizeof *e);
    if (e == NULL) return PyErr_NoMemory();
    e->shape[0] = self->n, e->strides[0] = self->stride;
    e->m.version.major = 1;
    e->m.version.minor = 0;
    e->m.manager_ctx = self;
    e->m.deleter = dl_delete_versioned;
    e->m.dl_tensor = t;
    e->m.dl_tensor.shape = e->shape;
    e->m.dl_tensor.strides = e->strides;
    cap = PyCapsule_New(&e->m, "dltensor_versioned", dl_capsule_free);
    if (cap == NULL) free(e);
  } else {
    DLExport *e = calloc(1, sizeof *e);
    if (e == NULL) return PyErr_NoMemory();
    e->shape[0] = self->n, e->strides[0] = self->stride;
    e->m.manager_ctx = self;
    e->m.deleter = dl_delete;
    e->m.dl_tensor = t;
    e->m.dl_tensor.shape = e->shape;
    e->m.dl_tensor.strides = e->strides;
    cap = PyCapsule_New(&e->m, "dltensor", dl_capsule_free);
    if (cap == NULL) free(e);
  }
  if (cap != NULL) {
    Py_INCREF(self); /* the tensor's manager_ctx, dropped by its deleter */
    ((ResultOwnerObject *)self->owner)->exported = 1;
  }
  return cap;
}

static PyObject *darray_dlpack_device(DeviceArrayObject *self, PyObject *unused) {
  (void)unused;
  return Py_BuildValue("(ii)", kDLCUDA, self->device);
}

static Py_ssize_t darray_len(DeviceArrayObject *self) { return (Py_ssize_t)self->n; }

static PyObject *darray_get_shape(DeviceArrayObject *self, void *c) {
  (void)c;
  return Py_BuildValue("(L)", (long long)self->n);
}
static PyObject *darray_get_dtype(DeviceArrayObject *self, void *c) {
  (void)c;
  return (PyObject *)PyArray_DescrFromType(dtype_npy(self->dtype));
}
static PyObject *darray_get_data_ptr(DeviceArrayObject *self, void *c) {
  (void)c;
  ((ResultOwnerObject *)self->owner)->exported = 1; /* the caller may hand it to a kernel */
  return PyLong_FromVoidPtr(self->data);
}
static PyObject *darray_get_device(DeviceArrayObject *self, void *c) {
  (void)c;
  return PyLong_FromLong(self->device);
}

static PyObject *darray_repr(DeviceArrayObject *self) {
  return PyUnicode_FromFormat("<raydex.DeviceArray shape=(%lld,) dtype=%s device=cuda:%d>", (long long)self->n,
                              dtype_numpy_name(self->dtype), self->device);
}

static PyMethodDef darray_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))darray_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> PyCapsule\n\n"
     "The DLPack capsule of this device memory, versioned (1.0) when max_version allows it. The data\n"
     "is complete, so any stream may read it at once."},
    {"__dlpack_device__", (PyCFunction)darray_dlpack_device, METH_NOARGS,
     "__dlpack_device__() -> (2, device): DLPack's kDLCUDA and the CUDA ordinal."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef darray_getset[] = {
    {"shape", (getter)darray_get_shape, NULL, "(n,)", NULL},
    {"dtype", (getter)darray_get_dtype, NULL, "the element dtype (numpy)", NULL},
    {"device", (getter)darray_get_device, NULL, "the CUDA device ordinal", NULL},
    {"data_ptr", (getter)darray_get_data_ptr, NULL,
     "the device address of element 0 (as CuPy's .data.ptr and PyTorch's .data_ptr() give it)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods darray_sequence = {.sq_length = (lenfunc)darray_len};

static PyTypeObject DeviceArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "raydex.DeviceArray",
    .tp_basicsize = sizeof(DeviceArrayObject),
    .tp_dealloc = (destructor)darray_dealloc,
    .tp_repr = (reprfunc)darray_repr,
    .tp_as_sequence = &darray_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A raydex result in GPU memory (1-D), what calls given device arrays return. It is read\n"
              "without a copy through DLPack: cupy.from_dlpack(a), torch.from_dlpack(a),\n"
              "jax.dlpack.from_dlpack(a). The memory stays raydex's and is freed when the last\n"
              "array or tensor over it is gone, even after its index and context objects are.",
    .tp_methods = darray_methods,
    .tp_getset = darray_getset,
};

/* ---- raydex.ListArray: a CSR result as an Arrow large list<uint64> array ---- */

typedef struct {
  PyObject_HEAD
  PyObject *owner;            /* a _ResultOwner */
  PyObject *offsets, *values; /* the views .offsets and .values give (numpy or DeviceArray) */
  const uint64_t *offsets_data, *values_data;
  int64_t n;                  /* lists (queries) */
  uint64_t total;             /* values */
  rdx_location where;
  int device;
} ListArrayObject;

static PyTypeObject ListArrayType;

static void list_dealloc(ListArrayObject *self) {
  Py_XDECREF(self->offsets);
  Py_XDECREF(self->values);
  Py_XDECREF(self->owner);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static void arrow_schema_capsule_free(PyObject *cap) {
  struct ArrowSchema *s = PyCapsule_GetPointer(cap, "arrow_schema");
  if (s == NULL) {
    PyErr_WriteUnraisable(cap);
    return;
  }
  if (s->release != NULL) s->release(s);
  free(s);
}

static void arrow_array_capsule_free(PyObject *cap) {
  struct ArrowArray *a = PyCapsule_GetPointer(cap, "arrow_array");
  if (a == NULL) {
    PyErr_WriteUnraisable(cap);
    return;
  }
  if (a->release != NULL) a->release(a);
  free(a);
}

static void arrow_device_capsule_free(PyObject *cap) {
  struct ArrowDeviceArray *a = PyCapsule_GetPointer(cap, "arrow_device_array");
  if (a == NULL) {
    PyErr_WriteUnraisable(cap);
    return;
  }
  if (a->array.release != NULL) a->array.release(&a->array);
  free(a);
}

/* The (schema, array) capsule pair; `device` chooses an ArrowDeviceArray for the array. */
static PyObject *list_capsules(ListArrayObject *self, int device) {
  struct ArrowSchema *schema = calloc(1, sizeof *schema);
  if (schema == NULL || arrow_export_list_schema(schema) < 0) {
    free(schema);
    return PyErr_NoMemory();
  }
  PyObject *schema_cap = PyCapsule_New(schema, "arrow_schema", arrow_schema_capsule_free);
  if (schema_cap == NULL) {
    schema->release(schema);
    free(schema);
    return NULL;
  }
  struct ArrowDeviceArray *d = device ? calloc(1, sizeof *d) : NULL;
  struct ArrowArray *array = device ? (d != NULL ? &d->array : NULL) : calloc(1, sizeof *array);
  if (array == NULL || arrow_export_list(array, self->offsets_data, self->values_data, self->n, self->total,
                                         self->owner, take, unkeep) < 0) {
    free(device ? (void *)d : (void *)array);
    Py_DECREF(schema_cap);
    return PyErr_NoMemory();
  }
  if (device) {
    d->device_type = self->where == RDX_DEVICE ? kDLCUDA : kDLCPU;
    d->device_id = self->where == RDX_DEVICE ? self->device : -1;
  }
  PyObject *array_cap = device ? PyCapsule_New(d, "arrow_device_array", arrow_device_capsule_free)
                               : PyCapsule_New(array, "arrow_array", arrow_array_capsule_free);
  if (array_cap == NULL) {
    array->release(array);
    free(device ? (void *)d : (void *)array);
    Py_DECREF(schema_cap);
    return NULL;
  }
  return Py_BuildValue("(NN)", schema_cap, array_cap);
}

/* requested_schema is a request the producer may decline (the PyCapsule interface says so):
 * the list type is what raydex has, without a copy, so it is declined. */
static PyObject *list_arrow_c_array(ListArrayObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"requested_schema", NULL};
  PyObject *requested = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:__arrow_c_array__", kwlist, &requested)) return NULL;
  if (self->where == RDX_DEVICE)
    return PyErr_Format(PyExc_ValueError,
                        "ListArray.__arrow_c_array__: the result is in CUDA device memory, which the Arrow C data "
                        "interface cannot carry; read it with __arrow_c_device_array__ or through DLPack "
                        "(.offsets, .values)");
  return list_capsules(self, 0);
}

static PyObject *list_arrow_c_device_array(ListArrayObject *self, PyObject *args, PyObject *kwds) {
  PyObject *requested = Py_None;
  if (!PyArg_ParseTuple(args, "|O:__arrow_c_device_array__", &requested)) return NULL;
  if (kwds != NULL) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwds, &pos, &key, &value)) {
      if (PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, "requested_schema") == 0) continue;
      if (value != Py_None)
        return PyErr_Format(PyExc_NotImplementedError, "ListArray.__arrow_c_device_array__: %R is not supported",
                            key);
    }
  }
  return list_capsules(self, 1);
}

static PyObject *list_get_offsets(ListArrayObject *self, void *c) {
  (void)c;
  return Py_NewRef(self->offsets);
}
static PyObject *list_get_values(ListArrayObject *self, void *c) {
  (void)c;
  return Py_NewRef(self->values);
}
static Py_ssize_t list_len(ListArrayObject *self) { return (Py_ssize_t)self->n; }

static PyObject *list_repr(ListArrayObject *self) {
  return PyUnicode_FromFormat("<raydex.ListArray large_list<uint64> lists=%lld values=%llu %s>", (long long)self->n,
                              (unsigned long long)self->total, self->where == RDX_DEVICE ? "device" : "host");
}

static PyMethodDef list_methods[] = {
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))list_arrow_c_array, METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_array__(requested_schema=None) -> (schema, array) PyCapsules: the Arrow C data\n"
     "interface's large_list<uint64> over raydex's buffers, without a copy (host results only)."},
    {"__arrow_c_device_array__", (PyCFunction)(void (*)(void))list_arrow_c_device_array,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_device_array__(requested_schema=None, **kwargs) -> (schema, device array) PyCapsules:\n"
     "the Arrow C device interface's view, on the CPU or the GPU where the result lives."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef list_getset[] = {
    {"offsets", (getter)list_get_offsets, NULL, "uint64, n + 1 entries: list i is values[offsets[i]:offsets[i + 1]]", NULL},
    {"values", (getter)list_get_values, NULL, "uint64: the row or point ids of every list, concatenated", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods list_sequence = {.sq_length = (lenfunc)list_len};

static PyTypeObject ListArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "raydex.ListArray",
    .tp_basicsize = sizeof(ListArrayObject),
    .tp_dealloc = (destructor)list_dealloc,
    .tp_repr = (reprfunc)list_repr,
    .tp_as_sequence = &list_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A CSR result (what as_arrow=True returns) as an Arrow large_list<uint64> array, read\n"
              "without a copy by anything that takes the Arrow PyCapsule interface:\n"
              "pyarrow.array(a), polars.Series(a), duckdb. .offsets and .values are the (offsets, rows)\n"
              "arrays the tuple form returns; len(a) is the number of queries.\n\n"
              ">>> lists = idx.range(lo, hi, as_arrow=True)\n"
              ">>> pyarrow.array(lists).to_pylist()\n"
              "[[0, 1, 2], []]",
    .tp_methods = list_methods,
    .tp_getset = list_getset,
};

/* A CSR result as (offsets, rows), or as a ListArray, over result, which this takes over (freeing
 * it on any failure). Host results are numpy arrays over raydex's memory; device results (device
 * queries) DeviceArrays, never copied. */
static PyObject *csr_out(ContextObject *context, rdx_result *result, int as_arrow) {
  ResultOwnerObject *owner = owner_new(context);
  if (owner == NULL) {
    PyThread_acquire_lock(context->lock, WAIT_LOCK);
    rdx_result_free(context->ctx, result);
    PyThread_release_lock(context->lock);
    return NULL;
  }
  owner->result = result;
  int device = result->where == RDX_DEVICE;
  int64_t n = result->n_queries;
  PyObject *offsets, *rows = NULL;
  if (device) {
    offsets = device_array(owner, result->offsets, n + 1, 1, RDX_U64);
    if (offsets != NULL) rows = device_array(owner, result->row_ids, (int64_t)result->total, 1, RDX_U64);
  } else {
    offsets = wrap_u64(result->offsets, (npy_intp)n + 1, (PyObject *)owner);
    if (offsets != NULL) rows = wrap_u64(result->row_ids, (npy_intp)result->total, (PyObject *)owner);
  }
  if (rows == NULL) {
    Py_XDECREF(offsets);
    Py_DECREF(owner);
    return NULL;
  }
  if (!as_arrow) {
    Py_DECREF(owner);
    return Py_BuildValue("(NN)", offsets, rows);
  }
  ListArrayObject *list = PyObject_New(ListArrayObject, &ListArrayType);
  if (list == NULL) {
    Py_DECREF(offsets), Py_DECREF(rows), Py_DECREF(owner);
    return NULL;
  }
  list->owner = (PyObject *)owner; /* takes this function's reference */
  list->offsets = offsets;
  list->values = rows;
  list->offsets_data = result->offsets;
  list->values_data = result->row_ids;
  list->n = n;
  list->total = result->total;
  list->where = device ? RDX_DEVICE : RDX_HOST;
  list->device = context->device;
  return (PyObject *)list;
}

/* ---------------------------------------------------------------------------------------- */
/* KeyIndex                                                                                 */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  ContextObject *context;  /* strong reference: the index is destroyed before its context */
  rdx_index *idx;          /* NULL once closed */
  rdx_dtype dtype;         /* key dtype, fixed at build */
  rdx_kind kind;           /* fixed at build */
} KeyIndexObject;

static PyTypeObject KeyIndexType;

static int parse_kind(const char *name, rdx_kind *out) {
  for (int k = RDX_KIND_SCAN; k <= RDX_KIND_CGRXU; k++)
    if (strcmp(rdx_kind_name((rdx_kind)k), name) == 0) {
      *out = (rdx_kind)k;
      return 0;
    }
  PyErr_Format(PyExc_ValueError,
               "kind must be one of 'scan', 'sorted', 'btree', 'hash', 'rx', 'cgrx', 'cgrxu' (got '%s')", name);
  return -1;
}

static KeyIndexObject *keyindex_wrap(PyTypeObject *type, ContextObject *context, rdx_index *idx) {
  KeyIndexObject *self = (KeyIndexObject *)type->tp_alloc(type, 0);
  if (self == NULL) {
    PyThread_acquire_lock(context->lock, WAIT_LOCK);
    rdx_index_destroy(idx);
    PyThread_release_lock(context->lock);
    Py_DECREF(context);
    return NULL;
  }
  self->context = context; /* takes the caller's reference */
  self->idx = idx;
  self->dtype = rdx_index_dtype(idx);
  self->kind = rdx_index_kind(idx);
  return self;
}

static PyObject *keyindex_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"keys", "rows", "kind", "backend", "context", "bucket_size",
                           "load_factor", "node_bytes", "flags", NULL};
  PyObject *keys_obj, *rows_obj = Py_None, *context_obj = Py_None;
  const char *kind_name = "sorted", *backend_name = "auto";
  int bucket_size = 0, node_bytes = 0, flags = 0;
  double load_factor = 0.0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|Oss$Oidii:KeyIndex", kwlist, &keys_obj, &rows_obj,
                                   &kind_name, &backend_name, &context_obj, &bucket_size,
                                   &load_factor, &node_bytes, &flags))
    return NULL;
  rdx_build_options o = RDX_BUILD_OPTIONS_INIT;
  if (parse_kind(kind_name, &o.kind) < 0) return NULL;
  o.bucket_size = bucket_size;
  o.load_factor = load_factor;
  o.node_bytes = node_bytes;
  o.flags = flags;
  InArray keys, rows;
  memset(&rows, 0, sizeof rows);
  rows.a = rdx_no_array();
  if (in_array(keys_obj, "KeyIndex: keys", M_U32 | M_U64, "uint32 or uint64", 0, &keys) < 0) return NULL;
  if (rows_obj != Py_None &&
      in_array(rows_obj, "KeyIndex: rows", M_U32 | M_U64, "uint32 or uint64", 0, &rows) < 0) {
    in_release(&keys);
    return NULL;
  }
  ContextObject *context = resolve_context(context_obj, backend_name, "KeyIndex");
  if (context == NULL || in_reach(context, &keys) < 0 || in_reach(context, &rows) < 0) {
    Py_XDECREF(context);
    in_release(&keys);
    in_release(&rows);
    return NULL;
  }
  rdx_index *idx = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(context, st, msg, 1, ON_DEVICE(keys) || ON_DEVICE(rows),
         rdx_index_build(context->ctx, keys.a, rows.a, &o, &idx));
  in_release(&keys);
  in_release(&rows);
  if (st != RDX_OK) {
    Py_DECREF(context);
    return raise_status(st, msg, "KeyIndex");
  }
  return (PyObject *)keyindex_wrap(type, context, idx);
}

static void keyindex_destroy(KeyIndexObject *self) {
  if (self->idx == NULL) return;
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
  rdx_index_destroy(self->idx);
  self->idx = NULL;
  PyThread_release_lock(self->context->lock);
}

static void keyindex_dealloc(KeyIndexObject *self) {
  if (self->context != NULL) keyindex_destroy(self);
  Py_XDECREF(self->context);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

#define KEYS_WANTED(self) ((self)->dtype == RDX_U32 ? "uint32 (the index's key dtype)" : "uint64 (the index's key dtype)")

static int keyindex_open(KeyIndexObject *self) {
  if (self->idx != NULL) return 1;
  PyErr_SetString(PyExc_ValueError, "KeyIndex: the index is closed");
  return 0;
}

/* A point lookup over device queries writes into device memory of the context, which owner keeps. */
static rdx_status lookup_device(ContextObject *c, const rdx_index *idx, rdx_array q, ResultOwnerObject *owner) {
  rdx_status st = block_take(c, (size_t)q.count * sizeof(uint64_t), &owner->block, &owner->block_bytes);
  return st != RDX_OK ? st : rdx_index_lookup(c->ctx, idx, q, rdx_device_array(owner->block, q.count, RDX_U64));
}

/* lookup's out=: a writable C-contiguous uint64 numpy array of n entries (host queries) or a DLPack
 * uint64 vector of n entries in the context's device memory (device queries). */
static int lookup_out(PyObject *obj, const InArray *q, InArray *out) {
  if (ON_DEVICE(*q)) {
    if (in_array(obj, "KeyIndex.lookup: out", M_U64, "uint64", 0, out) < 0) return -1;
    if (!ON_DEVICE(*out) || out->a.count != q->a.count) {
      PyErr_Format(PyExc_ValueError, "KeyIndex.lookup: out must be %lld uint64 in device memory, as the queries are",
                   (long long)q->a.count);
      in_release(out);
      return -1;
    }
    return 0;
  }
  if (!PyArray_Check(obj) || PyArray_TYPE((PyArrayObject *)obj) != NPY_UINT64 || PyArray_NDIM((PyArrayObject *)obj) != 1 ||
      !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)obj) || !PyArray_ISWRITEABLE((PyArrayObject *)obj) ||
      PyArray_DIM((PyArrayObject *)obj, 0) != (npy_intp)q->a.count) {
    PyErr_Format(PyExc_ValueError,
                 "KeyIndex.lookup: out must be a writable C-contiguous 1-D numpy uint64 array of %lld entries",
                 (long long)q->a.count);
    return -1;
  }
  memset(out, 0, sizeof *out);
  out->a = rdx_host_array(PyArray_DATA((PyArrayObject *)obj), q->a.count, RDX_U64);
  return 0;
}

static PyObject *keyindex_lookup(KeyIndexObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"queries", "out", NULL};
  PyObject *q_obj, *out_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$O:lookup", kwlist, &q_obj, &out_obj)) return NULL;
  if (!keyindex_open(self)) return NULL;
  InArray q;
  if (in_array(q_obj, "KeyIndex.lookup: queries", dtype_mask(self->dtype), KEYS_WANTED(self), 0, &q) < 0)
    return NULL;
  if (in_reach(self->context, &q) < 0) {
    in_release(&q);
    return NULL;
  }
  rdx_status st;
  char msg[MESSAGE_BYTES];
  if (out_obj != Py_None) { /* the caller's array, returned */
    InArray out;
    if (lookup_out(out_obj, &q, &out) < 0 || in_reach(self->context, &out) < 0) {
      in_release(&q);
      return NULL;
    }
    RUN_ON(self->context, st, msg, self->idx != NULL, ON_DEVICE(q),
           rdx_index_lookup(self->context->ctx, self->idx, q.a, out.a));
    in_release(&q);
    in_release(&out);
    if (st != RDX_OK) return raise_status(st, msg, "KeyIndex");
    return Py_NewRef(out_obj);
  }
  if (ON_DEVICE(q)) {
    ResultOwnerObject *owner = owner_new(self->context);
    if (owner == NULL) {
      in_release(&q);
      return NULL;
    }
    RUN_ON(self->context, st, msg, self->idx != NULL, 1, lookup_device(self->context, self->idx, q.a, owner));
    int64_t n = q.a.count;
    in_release(&q);
    PyObject *out = st == RDX_OK ? device_array(owner, owner->block, n, 1, RDX_U64) : raise_status(st, msg, "KeyIndex");
    Py_DECREF(owner);
    return out;
  }
  npy_intp n = (npy_intp)q.a.count;
  PyObject *out = PyArray_EMPTY(1, &n, NPY_UINT64, 0);
  if (out == NULL) {
    in_release(&q);
    return NULL;
  }
  rdx_array rows = rdx_host_array(PyArray_DATA((PyArrayObject *)out), q.a.count, RDX_U64);
  RUN(self->context, st, msg, self->idx != NULL, rdx_index_lookup(self->context->ctx, self->idx, q.a, rows));
  in_release(&q);
  if (st != RDX_OK) {
    Py_DECREF(out);
    return raise_status(st, msg, "KeyIndex");
  }
  return out;
}

static PyObject *keyindex_lookup_all(KeyIndexObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"queries", "as_arrow", NULL};
  PyObject *q_obj;
  int as_arrow = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$p:lookup_all", kwlist, &q_obj, &as_arrow)) return NULL;
  if (!keyindex_open(self)) return NULL;
  InArray q;
  if (in_array(q_obj, "KeyIndex.lookup_all: queries", dtype_mask(self->dtype), KEYS_WANTED(self), 0, &q) < 0)
    return NULL;
  if (in_reach(self->context, &q) < 0) {
    in_release(&q);
    return NULL;
  }
  rdx_result *r = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->idx != NULL, ON_DEVICE(q),
         rdx_index_lookup_alloc(self->context->ctx, self->idx, q.a, &r));
  in_release(&q);
  if (st != RDX_OK) return raise_status(st, msg, "KeyIndex");
  return csr_out(self->context, r, as_arrow);
}

static PyObject *keyindex_range(KeyIndexObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"lo", "hi", "as_arrow", NULL};
  PyObject *lo_obj, *hi_obj = Py_None;
  int as_arrow = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O$p:range", kwlist, &lo_obj, &hi_obj, &as_arrow)) return NULL;
  if (!keyindex_open(self)) return NULL;
  unsigned mask = dtype_mask(self->dtype);
  InArray lo, hi;
  void *interleaved = NULL;
  rdx_array bounds;
  if (hi_obj == Py_None) {
    if (in_array(lo_obj, "KeyIndex.range: bounds", mask, KEYS_WANTED(self), 2, &lo) < 0) return NULL;
    if (in_reach(self->context, &lo) < 0) {
      in_release(&lo);
      return NULL;
    }
    bounds = lo.a;
  } else {
    if (in_array(lo_obj, "KeyIndex.range: lo", mask, KEYS_WANTED(self), 0, &lo) < 0) return NULL;
    if (in_array(hi_obj, "KeyIndex.range: hi", mask, KEYS_WANTED(self), 0, &hi) < 0) {
      in_release(&lo);
      return NULL;
    }
    if (ON_DEVICE(lo) || ON_DEVICE(hi)) {
      /* The library reads one (m, 2) array; interleaving device arrays would need a kernel here. */
      PyErr_SetString(PyExc_ValueError,
                      "KeyIndex.range: lo and hi in device memory must come as one (m, 2) bounds array "
                      "(cupy.stack([lo, hi], axis=1), torch.stack((lo, hi), dim=1)): range(bounds)");
      in_release(&lo);
      in_release(&hi);
      return NULL;
    }
    if (lo.a.count != hi.a.count) {
      PyErr_Format(PyExc_ValueError, "KeyIndex.range: lo and hi must have the same length (%lld != %lld)",
                   (long long)lo.a.count, (long long)hi.a.count);
      in_release(&lo);
      in_release(&hi);
      return NULL;
    }
    size_t size = rdx_dtype_size(self->dtype);
    int64_t m = lo.a.count;
    interleaved = PyMem_RawMalloc(m > 0 ? (size_t)m * 2 * size : 1);
    if (interleaved == NULL) {
      in_release(&lo);
      in_release(&hi);
      return PyErr_NoMemory();
    }
    if (size == 4) {
      const uint32_t *a = lo.a.data, *b = hi.a.data;
      uint32_t *o = interleaved;
      for (int64_t i = 0; i < m; i++) o[2 * i] = a[i], o[2 * i + 1] = b[i];
    } else {
      const uint64_t *a = lo.a.data, *b = hi.a.data;
      uint64_t *o = interleaved;
      for (int64_t i = 0; i < m; i++) o[2 * i] = a[i], o[2 * i + 1] = b[i];
    }
    in_release(&hi);
    bounds = rdx_host_matrix(interleaved, m, 2, self->dtype);
  }
  rdx_result *r = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->idx != NULL, bounds.where == RDX_DEVICE,
         rdx_index_range_alloc(self->context->ctx, self->idx, bounds, &r));
  in_release(&lo);
  PyMem_RawFree(interleaved);
  if (st != RDX_OK) return raise_status(st, msg, "KeyIndex");
  return csr_out(self->context, r, as_arrow);
}

static PyObject *keyindex_insert(KeyIndexObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"keys", "rows", "rebuild", NULL};
  PyObject *keys_obj, *rows_obj = Py_None;
  int rebuild = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O$p:insert", kwlist, &keys_obj, &rows_obj, &rebuild))
    return NULL;
  if (!keyindex_open(self)) return NULL;
  InArray keys, rows;
  memset(&rows, 0, sizeof rows);
  rows.a = rdx_no_array();
  if (in_array(keys_obj, "KeyIndex.insert: keys", dtype_mask(self->dtype), KEYS_WANTED(self), 0, &keys) < 0)
    return NULL;
  if (rows_obj != Py_None &&
      in_array(rows_obj, "KeyIndex.insert: rows", M_U32 | M_U64, "uint32 or uint64", 0, &rows) < 0) {
    in_release(&keys);
    return NULL;
  }
  if (in_reach(self->context, &keys) < 0 || in_reach(self->context, &rows) < 0) {
    in_release(&keys);
    in_release(&rows);
    return NULL;
  }
  rdx_update_options o = RDX_UPDATE_OPTIONS_INIT;
  if (rebuild) o.flags |= RDX_UPDATE_REBUILD;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->idx != NULL, ON_DEVICE(keys) || ON_DEVICE(rows),
         rdx_index_insert(self->context->ctx, self->idx, keys.a, rows.a, &o));
  in_release(&keys);
  in_release(&rows);
  if (st != RDX_OK) return raise_status(st, msg, "KeyIndex");
  Py_RETURN_NONE;
}

static PyObject *keyindex_erase(KeyIndexObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"keys", "rebuild", NULL};
  PyObject *keys_obj;
  int rebuild = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$p:erase", kwlist, &keys_obj, &rebuild)) return NULL;
  if (!keyindex_open(self)) return NULL;
  InArray keys;
  if (in_array(keys_obj, "KeyIndex.erase: keys", dtype_mask(self->dtype), KEYS_WANTED(self), 0, &keys) < 0)
    return NULL;
  if (in_reach(self->context, &keys) < 0) {
    in_release(&keys);
    return NULL;
  }
  rdx_update_options o = RDX_UPDATE_OPTIONS_INIT;
  if (rebuild) o.flags |= RDX_UPDATE_REBUILD;
  int64_t n_erased = 0;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->idx != NULL, ON_DEVICE(keys),
         rdx_index_erase(self->context->ctx, self->idx, keys.a, &o, &n_erased));
  in_release(&keys);
  if (st != RDX_OK) return raise_status(st, msg, "KeyIndex");
  return PyLong_FromLongLong((long long)n_erased);
}

static PyObject *keyindex_save(KeyIndexObject *self, PyObject *arg) {
  PyObject *path = NULL;
  if (!PyUnicode_FSConverter(arg, &path)) return NULL;
  if (!keyindex_open(self)) {
    Py_DECREF(path);
    return NULL;
  }
  const char *p = PyBytes_AS_STRING(path);
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->idx != NULL, rdx_index_save(self->context->ctx, self->idx, p));
  Py_DECREF(path);
  if (st != RDX_OK) return raise_status(st, msg, "KeyIndex");
  Py_RETURN_NONE;
}

static PyObject *keyindex_close(KeyIndexObject *self, PyObject *unused) {
  (void)unused;
  keyindex_destroy(self);
  Py_RETURN_NONE;
}

static PyObject *keyindex_enter(PyObject *self, PyObject *unused) {
  (void)unused;
  Py_INCREF(self);
  return self;
}

static PyObject *keyindex_exit(KeyIndexObject *self, PyObject *args) {
  (void)args;
  keyindex_destroy(self);
  Py_RETURN_FALSE;
}

static PyObject *keyindex_memory(KeyIndexObject *self, PyObject *unused) {
  (void)unused;
  if (!keyindex_open(self)) return NULL;
  int64_t resident = 0, peak = 0;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->idx != NULL,
      rdx_index_bytes(self->context->ctx, self->idx, &resident, &peak));
  if (st != RDX_OK) return raise_status(st, msg, "KeyIndex");
  return Py_BuildValue("(LL)", (long long)resident, (long long)peak);
}

static Py_ssize_t keyindex_len(KeyIndexObject *self) {
  if (!keyindex_open(self)) return -1;
  int64_t n = 0;
  Py_BEGIN_ALLOW_THREADS
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
  n = self->idx != NULL ? rdx_index_count(self->idx) : 0;
  PyThread_release_lock(self->context->lock);
  Py_END_ALLOW_THREADS
  return (Py_ssize_t)n;
}

static PyObject *keyindex_get_kind(KeyIndexObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(rdx_kind_name(self->kind));
}
static PyObject *keyindex_get_dtype(KeyIndexObject *self, void *c) {
  (void)c;
  return (PyObject *)PyArray_DescrFromType(dtype_npy(self->dtype));
}
static PyObject *keyindex_get_backend(KeyIndexObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(rdx_backend_name(rdx_context_backend(self->context->ctx)));
}
static PyObject *keyindex_get_context(KeyIndexObject *self, void *c) {
  (void)c;
  Py_INCREF(self->context);
  return (PyObject *)self->context;
}
static PyObject *keyindex_get_closed(KeyIndexObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->idx == NULL);
}
static PyObject *keyindex_get_next_row(KeyIndexObject *self, void *c) {
  (void)c;
  if (!keyindex_open(self)) return NULL;
  uint64_t next = 0;
  Py_BEGIN_ALLOW_THREADS
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
  next = self->idx != NULL ? rdx_index_next_row(self->idx) : 0;
  PyThread_release_lock(self->context->lock);
  Py_END_ALLOW_THREADS
  return PyLong_FromUnsignedLongLong((unsigned long long)next);
}

static PyObject *keyindex_repr(KeyIndexObject *self) {
  if (self->idx == NULL)
    return PyUnicode_FromFormat("<raydex.KeyIndex kind=%s dtype=%s closed>", rdx_kind_name(self->kind),
                                dtype_numpy_name(self->dtype));
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK); /* an update may run on another thread */
  long long n = self->idx != NULL ? (long long)rdx_index_count(self->idx) : 0;
  PyThread_release_lock(self->context->lock);
  return PyUnicode_FromFormat("<raydex.KeyIndex kind=%s dtype=%s backend=%s n=%lld>",
                              rdx_kind_name(self->kind), dtype_numpy_name(self->dtype),
                              rdx_backend_name(rdx_context_backend(self->context->ctx)), n);
}

static PyMethodDef keyindex_methods[] = {
    {"lookup", (PyCFunction)(void (*)(void))keyindex_lookup, METH_VARARGS | METH_KEYWORDS,
     "lookup(queries, *, out=None) -> uint64 array: the smallest row id of each query's key, or\n"
     "raydex.MISS. Device queries (DLPack) give a raydex.DeviceArray in device memory. out: an array\n"
     "to write into instead (numpy uint64, writable, C-contiguous, len(queries); for device queries a\n"
     "DLPack uint64 vector in device memory), which is returned: reusing one spares a fresh array's\n"
     "page faults on large batches."},
    {"lookup_all", (PyCFunction)(void (*)(void))keyindex_lookup_all, METH_VARARGS | METH_KEYWORDS,
     "lookup_all(queries, *, as_arrow=False) -> (offsets, rows): every row of each query, CSR, rows\n"
     "ascending. as_arrow=True returns the same buffers as a raydex.ListArray (Arrow large_list)."},
    {"range", (PyCFunction)(void (*)(void))keyindex_range, METH_VARARGS | METH_KEYWORDS,
     "range(lo, hi, *, as_arrow=False) -> (offsets, rows): the rows with lo[i] <= key <= hi[i], CSR.\n"
     "range(bounds) takes an (m, 2) array of [lo, hi] instead (the only form for device arrays).\n"
     "as_arrow=True returns the same buffers as a raydex.ListArray (Arrow large_list<uint64>):\n\n"
     ">>> pyarrow.array(idx.range(lo, hi, as_arrow=True)).to_pylist()\n"
     "[[0, 1, 2], []]"},
    {"insert", (PyCFunction)(void (*)(void))keyindex_insert, METH_VARARGS | METH_KEYWORDS,
     "insert(keys, rows=None, *, rebuild=False): add (key, row) pairs; rows default to next_row and up.\n"
     "rx and cgrx refuse updates unless rebuild=True."},
    {"erase", (PyCFunction)(void (*)(void))keyindex_erase, METH_VARARGS | METH_KEYWORDS,
     "erase(keys, *, rebuild=False) -> int: remove every row of each key; returns the pairs removed."},
    {"save", (PyCFunction)keyindex_save, METH_O, "save(path): write a snapshot that raydex.load reads."},
    {"memory", (PyCFunction)keyindex_memory, METH_NOARGS, "memory() -> (resident, peak) bytes."},
    {"close", (PyCFunction)keyindex_close, METH_NOARGS, "close(): free the index; later use raises."},
    {"__enter__", (PyCFunction)keyindex_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)keyindex_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef keyindex_getset[] = {
    {"kind", (getter)keyindex_get_kind, NULL, "'scan', 'sorted', 'btree', 'hash', 'rx', 'cgrx' or 'cgrxu'", NULL},
    {"dtype", (getter)keyindex_get_dtype, NULL, "the key dtype (numpy uint32 or uint64)", NULL},
    {"backend", (getter)keyindex_get_backend, NULL, "the backend of the index's context", NULL},
    {"context", (getter)keyindex_get_context, NULL, "the raydex.Context the index lives in", NULL},
    {"closed", (getter)keyindex_get_closed, NULL, "True after close()", NULL},
    {"next_row", (getter)keyindex_get_next_row, NULL, "the first implied row id of the next insert", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods keyindex_sequence = {.sq_length = (lenfunc)keyindex_len};

static PyTypeObject KeyIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "raydex.KeyIndex",
    .tp_basicsize = sizeof(KeyIndexObject),
    .tp_dealloc = (destructor)keyindex_dealloc,
    .tp_repr = (reprfunc)keyindex_repr,
    .tp_as_sequence = &keyindex_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "KeyIndex(keys, rows=None, kind='sorted', backend='auto', *, context=None,\n"
              "         bucket_size=0, load_factor=0.0, node_bytes=0, flags=0)\n\n"
              "An index over uint32 or uint64 keys (1-D, C-contiguous) with row ids given (uint32 or\n"
              "uint64) or implied (0..n-1). kind: scan, sorted, btree, hash, rx, cgrx, cgrxu.\n\n"
              ">>> idx = raydex.KeyIndex(np.array([42, 7, 42], dtype=np.uint32))\n"
              ">>> idx.lookup(np.array([42, 5], dtype=np.uint32))\n"
              "array([0, 18446744073709551615], dtype=uint64)",
    .tp_methods = keyindex_methods,
    .tp_getset = keyindex_getset,
    .tp_new = keyindex_new,
};

static PyObject *module_load(PyObject *module, PyObject *args, PyObject *kwds) {
  (void)module;
  static char *kwlist[] = {"path", "backend", "context", NULL};
  PyObject *path = NULL, *context_obj = Py_None;
  const char *backend_name = "auto";
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|s$O:load", kwlist, PyUnicode_FSConverter, &path,
                                   &backend_name, &context_obj))
    return NULL;
  ContextObject *context = resolve_context(context_obj, backend_name, "load");
  if (context == NULL) {
    Py_DECREF(path);
    return NULL;
  }
  const char *p = PyBytes_AS_STRING(path);
  rdx_index *idx = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(context, st, msg, 1, rdx_index_load(context->ctx, p, &idx));
  Py_DECREF(path);
  if (st != RDX_OK) {
    Py_DECREF(context);
    return raise_status(st, msg, "load");
  }
  return (PyObject *)keyindex_wrap(&KeyIndexType, context, idx);
}

/* ---------------------------------------------------------------------------------------- */
/* PointIndex                                                                               */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  ContextObject *context;  /* strong reference */
  rdx_points *pts;         /* NULL once closed */
  rdx_dtype dtype;         /* f32 or f64, fixed at build */
  rdx_points_kind kind;
} PointIndexObject;

static PyTypeObject PointIndexType;

#define POINTS_WANTED(self) ((self)->dtype == RDX_F32 ? "float32 (the index's dtype)" : "float64 (the index's dtype)")

static PointIndexObject *points_wrap(PyTypeObject *type, ContextObject *context, rdx_points *pts,
                                     rdx_points_kind kind) {
  PointIndexObject *self = (PointIndexObject *)type->tp_alloc(type, 0);
  if (self == NULL) {
    PyThread_acquire_lock(context->lock, WAIT_LOCK);
    rdx_points_destroy(pts);
    PyThread_release_lock(context->lock);
    Py_DECREF(context);
    return NULL;
  }
  self->context = context;
  self->pts = pts;
  self->kind = kind;
  rdx_points_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  PyThread_acquire_lock(context->lock, WAIT_LOCK);
  rdx_status st = rdx_points_describe(context->ctx, pts, &info);
  PyThread_release_lock(context->lock);
  self->dtype = st == RDX_OK ? info.dtype : RDX_F64;
  if (st == RDX_OK) self->kind = info.kind;
  return self;
}

static PyObject *points_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"xy", "index", "build", "backend", "context", "leaf_capacity",
                           "max_depth", "box", NULL};
  PyObject *xy_obj, *context_obj = Py_None, *box_obj = Py_None;
  const char *index_name = "quadtree", *build_name = "bottomup", *backend_name = "auto";
  int leaf_capacity = 0, max_depth = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|sss$OiiO:PointIndex", kwlist, &xy_obj, &index_name,
                                   &build_name, &backend_name, &context_obj, &leaf_capacity,
                                   &max_depth, &box_obj))
    return NULL;
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  if (strcmp(index_name, "quadtree") == 0)
    o.kind = RDX_POINTS_QUADTREE;
  else if (strcmp(index_name, "kdtree") == 0)
    o.kind = RDX_POINTS_KDTREE;
  else
    return PyErr_Format(PyExc_ValueError, "PointIndex: index must be 'quadtree' or 'kdtree' (got '%s')", index_name);
  if (strcmp(build_name, "bottomup") == 0)
    o.method = RDX_POINTS_BOTTOM_UP;
  else if (strcmp(build_name, "topdown") == 0)
    o.method = RDX_POINTS_TOP_DOWN;
  else
    return PyErr_Format(PyExc_ValueError, "PointIndex: build must be 'bottomup' or 'topdown' (got '%s')", build_name);
  o.leaf_capacity = leaf_capacity;
  o.max_depth = max_depth;
  if (box_obj != Py_None) {
    if (!PyArg_ParseTuple(box_obj, "dddd;PointIndex: box must be a tuple (xmin, ymin, xmax, ymax)",
                          &o.box[0], &o.box[1], &o.box[2], &o.box[3]))
      return NULL;
    o.use_box = true;
  }
  InArray xy;
  if (in_array(xy_obj, "PointIndex: xy", M_F32 | M_F64, "float32 or float64", 2, &xy) < 0) return NULL;
  ContextObject *context = resolve_context(context_obj, backend_name, "PointIndex");
  if (context == NULL || in_reach(context, &xy) < 0) {
    Py_XDECREF(context);
    in_release(&xy);
    return NULL;
  }
  rdx_points *pts = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(context, st, msg, 1, ON_DEVICE(xy), rdx_points_build(context->ctx, xy.a, &o, &pts));
  in_release(&xy);
  if (st != RDX_OK) {
    Py_DECREF(context);
    return raise_status(st, msg, "PointIndex");
  }
  return (PyObject *)points_wrap(type, context, pts, o.kind);
}

static void points_destroy_handle(PointIndexObject *self) {
  if (self->pts == NULL) return;
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
  rdx_points_destroy(self->pts);
  self->pts = NULL;
  PyThread_release_lock(self->context->lock);
}

static void points_dealloc(PointIndexObject *self) {
  if (self->context != NULL) points_destroy_handle(self);
  Py_XDECREF(self->context);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int points_open(PointIndexObject *self) {
  if (self->pts != NULL) return 1;
  PyErr_SetString(PyExc_ValueError, "PointIndex: the index is closed");
  return 0;
}

static PyObject *points_query(PointIndexObject *self, PyObject *q_obj, rdx_points_query_type type, int k,
                              int columns, int as_arrow, const char *what) {
  if (!points_open(self)) return NULL;
  InArray q;
  if (in_array(q_obj, what, dtype_mask(self->dtype), POINTS_WANTED(self), columns, &q) < 0) return NULL;
  if (in_reach(self->context, &q) < 0) {
    in_release(&q);
    return NULL;
  }
  rdx_points_query query = RDX_POINTS_QUERY_INIT;
  query.type = type;
  query.k = k;
  rdx_result *r = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->pts != NULL, ON_DEVICE(q),
         rdx_points_query_alloc(self->context->ctx, self->pts, q.a, &query, &r));
  in_release(&q);
  if (st != RDX_OK) return raise_status(st, msg, "PointIndex");
  return csr_out(self->context, r, as_arrow);
}

/* window, within and match: one query array and as_arrow. */
static PyObject *points_query_args(PointIndexObject *self, PyObject *args, PyObject *kwds, const char *format,
                                   rdx_points_query_type type, int columns, const char *what) {
  static char *kwlist[] = {"", "as_arrow", NULL};
  PyObject *q;
  int as_arrow = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, format, kwlist, &q, &as_arrow)) return NULL;
  return points_query(self, q, type, 0, columns, as_arrow, what);
}

static PyObject *points_window(PointIndexObject *self, PyObject *args, PyObject *kwds) {
  return points_query_args(self, args, kwds, "O|$p:window", RDX_POINTS_WINDOW, 4,
                           "PointIndex.window: boxes");
}
static PyObject *points_within(PointIndexObject *self, PyObject *args, PyObject *kwds) {
  return points_query_args(self, args, kwds, "O|$p:within", RDX_POINTS_WITHIN, 3,
                           "PointIndex.within: circles");
}
static PyObject *points_match(PointIndexObject *self, PyObject *args, PyObject *kwds) {
  return points_query_args(self, args, kwds, "O|$p:match", RDX_POINTS_MATCH, 2, "PointIndex.match: xy");
}
static PyObject *points_knn(PointIndexObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"xy", "k", "as_arrow", NULL};
  PyObject *q;
  int k, as_arrow = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oi|$p:knn", kwlist, &q, &k, &as_arrow)) return NULL;
  return points_query(self, q, RDX_POINTS_KNN, k, 2, as_arrow, "PointIndex.knn: xy");
}

static PyObject *points_insert(PointIndexObject *self, PyObject *arg) {
  if (!points_open(self)) return NULL;
  InArray xy;
  if (in_array(arg, "PointIndex.insert: xy", dtype_mask(self->dtype), POINTS_WANTED(self), 2, &xy) < 0)
    return NULL;
  if (in_reach(self->context, &xy) < 0) {
    in_release(&xy);
    return NULL;
  }
  uint64_t first = 0;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->pts != NULL, ON_DEVICE(xy),
         rdx_points_insert(self->context->ctx, self->pts, xy.a, &first));
  in_release(&xy);
  if (st != RDX_OK) return raise_status(st, msg, "PointIndex");
  return PyLong_FromUnsignedLongLong((unsigned long long)first);
}

static PyObject *points_erase(PointIndexObject *self, PyObject *arg) {
  if (!points_open(self)) return NULL;
  InArray ids;
  if (in_array(arg, "PointIndex.erase: ids", M_U32 | M_U64, "uint32 or uint64", 0, &ids) < 0) return NULL;
  if (in_reach(self->context, &ids) < 0) {
    in_release(&ids);
    return NULL;
  }
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->pts != NULL, ON_DEVICE(ids),
         rdx_points_erase(self->context->ctx, self->pts, ids.a));
  in_release(&ids);
  if (st != RDX_OK) return raise_status(st, msg, "PointIndex");
  Py_RETURN_NONE;
}

static PyObject *points_move(PointIndexObject *self, PyObject *args) {
  PyObject *ids_obj, *xy_obj;
  if (!PyArg_ParseTuple(args, "OO:move", &ids_obj, &xy_obj)) return NULL;
  if (!points_open(self)) return NULL;
  InArray ids, xy;
  if (in_array(ids_obj, "PointIndex.move: ids", M_U32 | M_U64, "uint32 or uint64", 0, &ids) < 0) return NULL;
  if (in_array(xy_obj, "PointIndex.move: xy", dtype_mask(self->dtype), POINTS_WANTED(self), 2, &xy) < 0) {
    in_release(&ids);
    return NULL;
  }
  if (in_reach(self->context, &ids) < 0 || in_reach(self->context, &xy) < 0) {
    in_release(&ids);
    in_release(&xy);
    return NULL;
  }
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->pts != NULL, ON_DEVICE(ids) || ON_DEVICE(xy),
         rdx_points_move(self->context->ctx, self->pts, ids.a, xy.a));
  in_release(&ids);
  in_release(&xy);
  if (st != RDX_OK) return raise_status(st, msg, "PointIndex");
  Py_RETURN_NONE;
}

static PyObject *points_save(PointIndexObject *self, PyObject *arg) {
  PyObject *path = NULL;
  if (!PyUnicode_FSConverter(arg, &path)) return NULL;
  if (!points_open(self)) {
    Py_DECREF(path);
    return NULL;
  }
  const char *p = PyBytes_AS_STRING(path);
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->pts != NULL, rdx_points_save(self->context->ctx, self->pts, p));
  Py_DECREF(path);
  if (st != RDX_OK) return raise_status(st, msg, "PointIndex");
  Py_RETURN_NONE;
}

static PyObject *points_describe(PointIndexObject *self, PyObject *unused) {
  (void)unused;
  if (!points_open(self)) return NULL;
  rdx_points_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->pts != NULL, rdx_points_describe(self->context->ctx, self->pts, &info));
  if (st != RDX_OK) return raise_status(st, msg, "PointIndex");
  return Py_BuildValue("{s:s,s:s,s:L,s:K,s:i,s:i,s:(dddd),s:L,s:L,s:i}", "index",
                       info.kind == RDX_POINTS_KDTREE ? "kdtree" : "quadtree", "build",
                       info.method == RDX_POINTS_TOP_DOWN ? "topdown" : "bottomup", "count",
                       (long long)info.count, "id_end", (unsigned long long)info.id_end,
                       "leaf_capacity", info.leaf_capacity, "max_depth", info.max_depth, "box",
                       info.box[0], info.box[1], info.box[2], info.box[3], "n_nodes",
                       (long long)info.n_nodes, "n_leaves", (long long)info.n_leaves, "depth", info.depth);
}

static PyObject *points_close(PointIndexObject *self, PyObject *unused) {
  (void)unused;
  points_destroy_handle(self);
  Py_RETURN_NONE;
}

static PyObject *points_exit(PointIndexObject *self, PyObject *args) {
  (void)args;
  points_destroy_handle(self);
  Py_RETURN_FALSE;
}

static Py_ssize_t points_len(PointIndexObject *self) {
  if (!points_open(self)) return -1;
  int64_t n = 0;
  Py_BEGIN_ALLOW_THREADS
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
  n = self->pts != NULL ? rdx_points_count(self->pts) : 0;
  PyThread_release_lock(self->context->lock);
  Py_END_ALLOW_THREADS
  return (Py_ssize_t)n;
}

static PyObject *points_get_dtype(PointIndexObject *self, void *c) {
  (void)c;
  return (PyObject *)PyArray_DescrFromType(dtype_npy(self->dtype));
}
static PyObject *points_get_index(PointIndexObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(self->kind == RDX_POINTS_KDTREE ? "kdtree" : "quadtree");
}
static PyObject *points_get_backend(PointIndexObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(rdx_backend_name(rdx_context_backend(self->context->ctx)));
}
static PyObject *points_get_context(PointIndexObject *self, void *c) {
  (void)c;
  Py_INCREF(self->context);
  return (PyObject *)self->context;
}
static PyObject *points_get_closed(PointIndexObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->pts == NULL);
}

static PyObject *points_repr(PointIndexObject *self) {
  if (self->pts == NULL)
    return PyUnicode_FromFormat("<raydex.PointIndex index=%s dtype=%s closed>",
                                self->kind == RDX_POINTS_KDTREE ? "kdtree" : "quadtree",
                                dtype_numpy_name(self->dtype));
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK); /* an update may run on another thread */
  long long n = self->pts != NULL ? (long long)rdx_points_count(self->pts) : 0;
  PyThread_release_lock(self->context->lock);
  return PyUnicode_FromFormat("<raydex.PointIndex index=%s dtype=%s backend=%s n=%lld>",
                              self->kind == RDX_POINTS_KDTREE ? "kdtree" : "quadtree",
                              dtype_numpy_name(self->dtype),
                              rdx_backend_name(rdx_context_backend(self->context->ctx)), n);
}

static PyMethodDef points_methods[] = {
    {"window", (PyCFunction)(void (*)(void))points_window, METH_VARARGS | METH_KEYWORDS,
     "window(boxes, *, as_arrow=False) -> (offsets, ids): points with xmin <= x <= xmax and\n"
     "ymin <= y <= ymax; boxes (m, 4). as_arrow=True: a raydex.ListArray (Arrow large_list)."},
    {"within", (PyCFunction)(void (*)(void))points_within, METH_VARARGS | METH_KEYWORDS,
     "within(circles, *, as_arrow=False) -> (offsets, ids): points at distance <= r of (x, y);\n"
     "circles (m, 3)."},
    {"match", (PyCFunction)(void (*)(void))points_match, METH_VARARGS | METH_KEYWORDS,
     "match(xy, *, as_arrow=False) -> (offsets, ids): points with exactly these coordinates; xy (m, 2)."},
    {"knn", (PyCFunction)(void (*)(void))points_knn, METH_VARARGS | METH_KEYWORDS,
     "knn(xy, k, *, as_arrow=False) -> (offsets, ids): the min(k, n) nearest points by distance,\n"
     "ties by id."},
    {"insert", (PyCFunction)points_insert, METH_O, "insert(xy) -> int: add points; returns the first new id."},
    {"erase", (PyCFunction)points_erase, METH_O, "erase(ids): remove the points with these ids."},
    {"move", (PyCFunction)points_move, METH_VARARGS, "move(ids, xy): move points to new coordinates."},
    {"save", (PyCFunction)points_save, METH_O, "save(path): write a snapshot that raydex.load_points reads."},
    {"describe", (PyCFunction)points_describe, METH_NOARGS, "describe() -> dict: the tree's shape."},
    {"close", (PyCFunction)points_close, METH_NOARGS, "close(): free the index; later use raises."},
    {"__enter__", (PyCFunction)keyindex_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)points_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef points_getset[] = {
    {"index", (getter)points_get_index, NULL, "'quadtree' or 'kdtree'", NULL},
    {"dtype", (getter)points_get_dtype, NULL, "the coordinates' dtype (float32 or float64)", NULL},
    {"backend", (getter)points_get_backend, NULL, "the backend of the index's context", NULL},
    {"context", (getter)points_get_context, NULL, "the raydex.Context the index lives in", NULL},
    {"closed", (getter)points_get_closed, NULL, "True after close()", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods points_sequence = {.sq_length = (lenfunc)points_len};

static PyTypeObject PointIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "raydex.PointIndex",
    .tp_basicsize = sizeof(PointIndexObject),
    .tp_dealloc = (destructor)points_dealloc,
    .tp_repr = (reprfunc)points_repr,
    .tp_as_sequence = &points_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "PointIndex(xy, index='quadtree', build='bottomup', backend='auto', *, context=None,\n"
              "           leaf_capacity=0, max_depth=0, box=None)\n\n"
              "A spatial index over an (n, 2) float32 or float64 array of points; point i gets id i.",
    .tp_methods = points_methods,
    .tp_getset = points_getset,
    .tp_new = points_new,
};

static PyObject *module_load_points(PyObject *module, PyObject *args, PyObject *kwds) {
  (void)module;
  static char *kwlist[] = {"path", "backend", "context", NULL};
  PyObject *path = NULL, *context_obj = Py_None;
  const char *backend_name = "auto";
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|s$O:load_points", kwlist, PyUnicode_FSConverter, &path,
                                   &backend_name, &context_obj))
    return NULL;
  ContextObject *context = resolve_context(context_obj, backend_name, "load_points");
  if (context == NULL) {
    Py_DECREF(path);
    return NULL;
  }
  const char *p = PyBytes_AS_STRING(path);
  rdx_points *pts = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(context, st, msg, 1, rdx_points_load(context->ctx, p, &pts));
  Py_DECREF(path);
  if (st != RDX_OK) {
    Py_DECREF(context);
    return raise_status(st, msg, "load_points");
  }
  return (PyObject *)points_wrap(&PointIndexType, context, pts, RDX_POINTS_QUADTREE);
}

/* ---------------------------------------------------------------------------------------- */
/* PolygonLayer, join, pip                                                                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  ContextObject *context;  /* strong reference */
  rdx_polygons *layer;     /* NULL once closed */
  rdx_dtype dtype;         /* the coordinates' dtype as given (f32 or f64) */
} PolygonLayerObject;

static PyTypeObject PolygonLayerType;

static PyObject *raise_layer_status(rdx_status st, const char *message, const char *what) {
  if (st == CLOSED_STATUS) return PyErr_Format(PyExc_ValueError, "%s: the layer is closed", what);
  return raise_status(st, message, what);
}

static int layer_open(PolygonLayerObject *self, const char *what) {
  if (self->layer != NULL) return 1;
  PyErr_Format(PyExc_ValueError, "%s: the layer is closed", what);
  return 0;
}

/* Wrap a new layer (taking the caller's reference to context); type may be a Python subclass. */
static PyObject *layer_wrap(PyTypeObject *type, ContextObject *context, rdx_polygons *layer) {
  PolygonLayerObject *self = (PolygonLayerObject *)type->tp_alloc(type, 0);
  if (self == NULL) {
    PyThread_acquire_lock(context->lock, WAIT_LOCK);
    rdx_polygons_destroy(layer);
    PyThread_release_lock(context->lock);
    Py_DECREF(context);
    return NULL;
  }
  self->context = context;
  self->layer = layer;
  rdx_polygons_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  PyThread_acquire_lock(context->lock, WAIT_LOCK);
  rdx_status st = rdx_polygons_describe(context->ctx, layer, &info);
  PyThread_release_lock(context->lock);
  self->dtype = st == RDX_OK ? info.dtype : RDX_F64;
  return (PyObject *)self;
}

static PyObject *layer_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  (void)type, (void)args, (void)kwds;
  PyErr_SetString(PyExc_TypeError,
                  "PolygonLayer: make one with PolygonLayer.from_arrays, from_file, from_shapely, "
                  "from_geopandas or from_wkb");
  return NULL;
}

static PyObject *layer_from_arrays(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"coords", "ring_offsets", "feature_offsets", "backend", "context", NULL};
  PyObject *coords_obj, *rings_obj, *features_obj, *context_obj = Py_None;
  const char *backend_name = "auto";
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO|s$O:from_arrays", kwlist, &coords_obj, &rings_obj,
                                   &features_obj, &backend_name, &context_obj))
    return NULL;
  InArray coords, rings, features;
  if (in_array(coords_obj, "PolygonLayer.from_arrays: coords", M_F32 | M_F64, "float32 or float64", 2,
               &coords) < 0)
    return NULL;
  if (in_array(rings_obj, "PolygonLayer.from_arrays: ring_offsets", M_U64, "uint64", 0, &rings) < 0) {
    in_release(&coords);
    return NULL;
  }
  if (in_array(features_obj, "PolygonLayer.from_arrays: feature_offsets", M_U64, "uint64", 0, &features) < 0) {
    in_release(&coords);
    in_release(&rings);
    return NULL;
  }
  ContextObject *context = resolve_context(context_obj, backend_name, "PolygonLayer");
  if (context == NULL || in_reach(context, &coords) < 0 || in_reach(context, &rings) < 0 ||
      in_reach(context, &features) < 0) {
    Py_XDECREF(context);
    in_release(&coords);
    in_release(&rings);
    in_release(&features);
    return NULL;
  }
  rdx_polygons_input in;
  memset(&in, 0, sizeof in);
  in.size = sizeof in;
  in.feature_offsets = features.a;
  in.ring_offsets = rings.a;
  in.coords = coords.a;
  rdx_polygons *layer = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(context, st, msg, 1, ON_DEVICE(coords) || ON_DEVICE(rings) || ON_DEVICE(features),
         rdx_polygons_create(context->ctx, &in, &layer));
  in_release(&coords);
  in_release(&rings);
  in_release(&features);
  if (st != RDX_OK) {
    Py_DECREF(context);
    return raise_status(st, msg, "PolygonLayer");
  }
  return layer_wrap(type, context, layer);
}

static PyObject *layer_from_file(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"path", "layer", "backend", "context", NULL};
  PyObject *path = NULL, *context_obj = Py_None;
  const char *layer_name = NULL, *backend_name = "auto";
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|zs$O:from_file", kwlist, PyUnicode_FSConverter, &path,
                                   &layer_name, &backend_name, &context_obj))
    return NULL;
  ContextObject *context = resolve_context(context_obj, backend_name, "PolygonLayer.from_file");
  if (context == NULL) {
    Py_DECREF(path);
    return NULL;
  }
  const char *p = PyBytes_AS_STRING(path);
  rdx_polygons *layer = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(context, st, msg, 1, rdx_polygons_load(context->ctx, p, layer_name, &layer));
  Py_DECREF(path);
  if (st != RDX_OK) {
    Py_DECREF(context);
    return raise_status(st, msg, "PolygonLayer.from_file");
  }
  return layer_wrap(type, context, layer);
}

static void layer_destroy(PolygonLayerObject *self) {
  if (self->layer == NULL) return;
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
  rdx_polygons_destroy(self->layer);
  self->layer = NULL;
  PyThread_release_lock(self->context->lock);
}

static void layer_dealloc(PolygonLayerObject *self) {
  if (self->context != NULL) layer_destroy(self);
  Py_XDECREF(self->context);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *layer_save(PolygonLayerObject *self, PyObject *arg) {
  PyObject *path = NULL;
  if (!PyUnicode_FSConverter(arg, &path)) return NULL;
  if (!layer_open(self, "PolygonLayer.save")) {
    Py_DECREF(path);
    return NULL;
  }
  const char *p = PyBytes_AS_STRING(path);
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->layer != NULL, rdx_polygons_save(self->context->ctx, self->layer, p));
  Py_DECREF(path);
  if (st != RDX_OK) return raise_layer_status(st, msg, "PolygonLayer.save");
  Py_RETURN_NONE;
}

static int layer_info(PolygonLayerObject *self, rdx_polygons_info *info, const char *what) {
  memset(info, 0, sizeof *info);
  info->size = sizeof *info;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->layer != NULL, rdx_polygons_describe(self->context->ctx, self->layer, info));
  if (st != RDX_OK) {
    raise_layer_status(st, msg, what);
    return -1;
  }
  return 0;
}

static PyObject *layer_describe(PolygonLayerObject *self, PyObject *unused) {
  (void)unused;
  rdx_polygons_info info;
  if (layer_info(self, &info, "PolygonLayer.describe") < 0) return NULL;
  return Py_BuildValue("{s:L,s:L,s:L,s:L,s:s,s:(dddd),s:L,s:O,s:L}", "n_features", (long long)info.n_features,
                       "n_rings", (long long)info.n_rings, "n_vertices", (long long)info.n_vertices,
                       "n_edges", (long long)info.n_edges, "dtype", dtype_numpy_name(info.dtype), "box",
                       info.lo[0], info.lo[1], info.hi[0], info.hi[1], "bytes", (long long)info.bytes,
                       "indexed", info.indexed ? Py_True : Py_False, "n_empty", (long long)info.n_empty);
}

static int join_options(rdx_join_options *o, int pad_ulps, double group_threshold, int planar) {
  rdx_join_options init = RDX_JOIN_OPTIONS_INIT;
  *o = init;
  o->pad_ulps = pad_ulps;
  o->group_threshold = group_threshold;
  o->planar = planar != 0;
  return 0;
}

static PyObject *layer_build_index(PolygonLayerObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"pad_ulps", "group_threshold", NULL};
  int pad_ulps = 0;
  double group_threshold = 0.0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$id:build_index", kwlist, &pad_ulps, &group_threshold))
    return NULL;
  if (!layer_open(self, "PolygonLayer.build_index")) return NULL;
  rdx_join_options o;
  join_options(&o, pad_ulps, group_threshold, 0);
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->layer != NULL, rdx_polygons_build_index(self->context->ctx, self->layer, &o));
  if (st != RDX_OK) return raise_layer_status(st, msg, "PolygonLayer.build_index");
  Py_RETURN_NONE;
}

static PyObject *layer_close(PolygonLayerObject *self, PyObject *unused) {
  (void)unused;
  layer_destroy(self);
  Py_RETURN_NONE;
}

static PyObject *layer_exit(PolygonLayerObject *self, PyObject *args) {
  (void)args;
  layer_destroy(self);
  Py_RETURN_FALSE;
}

static Py_ssize_t layer_len(PolygonLayerObject *self) {
  rdx_polygons_info info;
  if (layer_info(self, &info, "PolygonLayer") < 0) return -1;
  return (Py_ssize_t)info.n_features;
}

static PyObject *layer_get_dtype(PolygonLayerObject *self, void *c) {
  (void)c;
  return (PyObject *)PyArray_DescrFromType(dtype_npy(self->dtype));
}
static PyObject *layer_get_backend(PolygonLayerObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(rdx_backend_name(rdx_context_backend(self->context->ctx)));
}
static PyObject *layer_get_context(PolygonLayerObject *self, void *c) {
  (void)c;
  Py_INCREF(self->context);
  return (PyObject *)self->context;
}
static PyObject *layer_get_closed(PolygonLayerObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->layer == NULL);
}

static PyObject *layer_repr(PolygonLayerObject *self) {
  if (self->layer == NULL)
    return PyUnicode_FromFormat("<raydex.PolygonLayer dtype=%s closed>", dtype_numpy_name(self->dtype));
  rdx_polygons_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
  rdx_status st = self->layer != NULL ? rdx_polygons_describe(self->context->ctx, self->layer, &info) : CLOSED_STATUS;
  PyThread_release_lock(self->context->lock);
  return PyUnicode_FromFormat("<raydex.PolygonLayer dtype=%s backend=%s features=%lld rings=%lld vertices=%lld>",
                              dtype_numpy_name(self->dtype),
                              rdx_backend_name(rdx_context_backend(self->context->ctx)),
                              st == RDX_OK ? (long long)info.n_features : -1LL,
                              st == RDX_OK ? (long long)info.n_rings : -1LL,
                              st == RDX_OK ? (long long)info.n_vertices : -1LL);
}

static PyMethodDef layer_methods[] = {
    {"from_arrays", (PyCFunction)(void (*)(void))layer_from_arrays, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_arrays(coords, ring_offsets, feature_offsets, backend='auto', *, context=None) -> PolygonLayer\n\n"
     "A layer from rdx_polygons_input's CSR arrays: coords (n_vertices, 2) float32/float64; ring r\n"
     "owns coords[ring_offsets[r]:ring_offsets[r + 1]]; feature f owns rings\n"
     "[feature_offsets[f], feature_offsets[f + 1]) (uint64 offsets, each starting at 0). Feature ids\n"
     "are positions 0..n-1; a feature may own no ring (empty). The arrays are copied."},
    {"from_file", (PyCFunction)(void (*)(void))layer_from_file, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "from_file(path, layer=None, backend='auto', *, context=None) -> PolygonLayer\n\n"
     "Read a layer: raydex's .rdxp (PolygonLayer.save) or, where raydex was built with GDAL\n"
     "(raydex.info()['have_gdal']), any polygon layer GDAL reads (GeoJSON, Shapefile, GPKG, ...):\n"
     "its first layer or the one named `layer`."},
    {"save", (PyCFunction)layer_save, METH_O, "save(path): write the layer as .rdxp (from_file reads it)."},
    {"describe", (PyCFunction)layer_describe, METH_NOARGS,
     "describe() -> dict: n_features, n_rings, n_vertices, n_edges, dtype, box (xmin, ymin, xmax,\n"
     "ymax), bytes, indexed, n_empty."},
    {"build_index", (PyCFunction)(void (*)(void))layer_build_index, METH_VARARGS | METH_KEYWORDS,
     "build_index(*, pad_ulps=0, group_threshold=0.0): build the layer's join index once, so later\n"
     "joins pay only for queries (joins build a temporary one otherwise). Answers never change."},
    {"close", (PyCFunction)layer_close, METH_NOARGS, "close(): free the layer; later use raises."},
    {"__enter__", (PyCFunction)keyindex_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)layer_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef layer_getset[] = {
    {"dtype", (getter)layer_get_dtype, NULL, "the coordinates' dtype as given (float32 or float64)", NULL},
    {"backend", (getter)layer_get_backend, NULL, "the backend of the layer's context", NULL},
    {"context", (getter)layer_get_context, NULL, "the raydex.Context the layer lives in", NULL},
    {"closed", (getter)layer_get_closed, NULL, "True after close()", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods layer_sequence = {.sq_length = (lenfunc)layer_len};

static PyTypeObject PolygonLayerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "raydex.PolygonLayer",
    .tp_basicsize = sizeof(PolygonLayerObject),
    .tp_dealloc = (destructor)layer_dealloc,
    .tp_repr = (reprfunc)layer_repr,
    .tp_as_sequence = &layer_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A layer of polygon features (Polygon or MultiPolygon, holes allowed), feature i being\n"
              "the i-th input geometry. Made by PolygonLayer.from_arrays / from_file / from_shapely /\n"
              "from_geopandas / from_wkb; joined by raydex.join and raydex.pip.",
    .tp_methods = layer_methods,
    .tp_getset = layer_getset,
    .tp_new = layer_new,
};

static PolygonLayerObject *as_layer(PyObject *obj, const char *what) {
  if (!PyObject_TypeCheck(obj, &PolygonLayerType)) {
    PyErr_Format(PyExc_TypeError, "%s must be a raydex.PolygonLayer (got %s)", what, Py_TYPE(obj)->tp_name);
    return NULL;
  }
  return (PolygonLayerObject *)obj;
}

/* A 1-D strided view over `n` elements at data (stride bytes apart), kept alive by owner. */
static PyObject *wrap_strided(void *data, npy_intp n, int type, npy_intp stride, PyObject *owner) {
  if (n == 0 || data == NULL) return PyArray_ZEROS(1, &n, type, 0);
  PyObject *a = PyArray_New(&PyArray_Type, 1, &n, type, &stride, data, 0,
                            NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE, NULL);
  if (a == NULL) return NULL;
  Py_INCREF(owner);
  if (PyArray_SetBaseObject((PyArrayObject *)a, owner) < 0) {
    Py_DECREF(a);
    return NULL;
  }
  return a;
}

/* Copy a device join result's pairs (and areas, when wanted and present) into host memory. */
static rdx_status copy_pairs(rdx_context *ctx, const rdx_join_pairs_result *res, void *pairs, void *areas) {
  if (res->n_pairs == 0) return RDX_OK;
  rdx_status st = rdx_copy(ctx, pairs, RDX_HOST, res->pairs, res->where, (size_t)res->n_pairs * 2 * sizeof(int64_t));
  if (st == RDX_OK && areas != NULL && res->areas != NULL)
    st = rdx_copy(ctx, areas, RDX_HOST, res->areas, res->where, (size_t)res->n_pairs * sizeof(double));
  return st;
}

/* (r, s[, areas]) over a join result, which this takes over (freeing it on any failure). A host
 * result is viewed without a copy; a device result (GPU contexts) is copied to host arrays. */
static PyObject *pairs_tuple(ContextObject *context, rdx_join_pairs_result *res, int want_areas) {
  npy_intp n = (npy_intp)res->n_pairs;
  if (res->where != RDX_HOST) {
    npy_intp dims[2] = {n, 2};
    PyObject *pairs = PyArray_EMPTY(2, dims, NPY_INT64, 0);
    PyObject *areas = want_areas ? PyArray_EMPTY(1, &n, NPY_FLOAT64, 0) : NULL;
    rdx_status st = RDX_OK;
    char msg[MESSAGE_BYTES] = "";
    if (pairs != NULL && (!want_areas || areas != NULL))
      RUN(context, st, msg, 1,
          copy_pairs(context->ctx, res, PyArray_DATA((PyArrayObject *)pairs),
                     areas != NULL ? PyArray_DATA((PyArrayObject *)areas) : NULL));
    PyThread_acquire_lock(context->lock, WAIT_LOCK);
    rdx_join_pairs_free(context->ctx, res);
    PyThread_release_lock(context->lock);
    PyObject *rs = NULL, *ss = NULL;
    if (pairs != NULL && (!want_areas || areas != NULL) && st == RDX_OK) {
      int64_t *pd = PyArray_DATA((PyArrayObject *)pairs);
      rs = wrap_strided(pd, n, NPY_INT64, 16, pairs);
      ss = rs != NULL ? wrap_strided(pd + 1, n, NPY_INT64, 16, pairs) : NULL;
    }
    Py_XDECREF(pairs);
    if (ss == NULL) {
      Py_XDECREF(rs), Py_XDECREF(areas);
      return st != RDX_OK ? raise_status(st, msg, "join") : NULL;
    }
    return want_areas ? Py_BuildValue("(NNN)", rs, ss, areas) : Py_BuildValue("(NN)", rs, ss);
  }
  ResultOwnerObject *owner = owner_new(context);
  if (owner == NULL) {
    PyThread_acquire_lock(context->lock, WAIT_LOCK);
    rdx_join_pairs_free(context->ctx, res);
    PyThread_release_lock(context->lock);
    return NULL;
  }
  owner->pairs = res;
  PyObject *rs = wrap_strided(res->pairs, n, NPY_INT64, 16, (PyObject *)owner);
  PyObject *ss = rs != NULL ? wrap_strided(res->pairs != NULL ? res->pairs + 1 : NULL, n, NPY_INT64, 16,
                                           (PyObject *)owner) : NULL;
  PyObject *areas = NULL;
  if (ss != NULL && want_areas) areas = wrap_strided(res->areas, n, NPY_FLOAT64, 8, (PyObject *)owner);
  Py_DECREF(owner);
  if (ss == NULL || (want_areas && areas == NULL)) {
    Py_XDECREF(rs), Py_XDECREF(ss);
    return NULL;
  }
  return want_areas ? Py_BuildValue("(NNN)", rs, ss, areas) : Py_BuildValue("(NN)", rs, ss);
}

static PyObject *module_join(PyObject *module, PyObject *args, PyObject *kwds) {
  (void)module;
  static char *kwlist[] = {"r", "s", "op", "areas", "pad_ulps", "group_threshold", NULL};
  PyObject *r_obj, *s_obj;
  const char *op = "intersects";
  int want_areas = 0, pad_ulps = 0;
  double group_threshold = 0.0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|s$pid:join", kwlist, &r_obj, &s_obj, &op, &want_areas,
                                   &pad_ulps, &group_threshold))
    return NULL;
  PolygonLayerObject *r = as_layer(r_obj, "join: r"), *s = r != NULL ? as_layer(s_obj, "join: s") : NULL;
  if (s == NULL) return NULL;
  static const struct { const char *name; rdx_join_predicate p; } ops[] = {
      {"intersects", RDX_JOIN_INTERSECTS}, {"overlay", RDX_JOIN_OVERLAY}, {"contains", RDX_JOIN_CONTAINS},
      {"within", RDX_JOIN_WITHIN}, {"boxes", RDX_JOIN_BOXES}};
  rdx_join_predicate pred = (rdx_join_predicate)0;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(op, ops[i].name) == 0) pred = ops[i].p;
  if (pred == 0)
    return PyErr_Format(PyExc_ValueError,
                        "join: op must be 'intersects', 'overlay', 'contains', 'within' or 'boxes' (got '%s')", op);
  if (want_areas && pred != RDX_JOIN_OVERLAY)
    return PyErr_Format(PyExc_ValueError, "join: areas=True needs op='overlay' (got '%s')", op);
  if (r->context != s->context)
    return PyErr_Format(PyExc_ValueError, "join: r and s must live in the same raydex.Context (got %R and %R)",
                        (PyObject *)r->context, (PyObject *)s->context);
  if (!layer_open(r, "join: r") || !layer_open(s, "join: s")) return NULL;
  rdx_join_options o;
  join_options(&o, pad_ulps, group_threshold, 0);
  ContextObject *context = r->context;
  Py_INCREF(context);
  rdx_join_pairs_result *res = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(context, st, msg, r->layer != NULL && s->layer != NULL,
      rdx_join_polygons(context->ctx, r->layer, s->layer, pred, &o, want_areas != 0, &res));
  PyObject *out = st != RDX_OK ? raise_layer_status(st, msg, "join") : pairs_tuple(context, res, want_areas);
  Py_DECREF(context);
  return out;
}

/* pip(first=True) over device points writes into device memory of the context, which owner keeps. */
static rdx_status pip_first_device(ContextObject *c, const rdx_polygons *layer, rdx_array xy,
                                   const rdx_join_options *o, ResultOwnerObject *owner) {
  rdx_status st = block_take(c, (size_t)xy.count * sizeof(int64_t), &owner->block, &owner->block_bytes);
  return st != RDX_OK ? st : rdx_join_pip_first(c->ctx, layer, xy, o, rdx_device_array(owner->block, xy.count, RDX_I64));
}

static PyObject *module_pip(PyObject *module, PyObject *args, PyObject *kwds) {
  (void)module;
  static char *kwlist[] = {"layer", "xy", "first", "planar", "pad_ulps", "group_threshold", "as_arrow", NULL};
  PyObject *layer_obj, *xy_obj;
  int first = 0, planar = 0, pad_ulps = 0, as_arrow = 0;
  double group_threshold = 0.0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|$ppidp:pip", kwlist, &layer_obj, &xy_obj, &first, &planar,
                                   &pad_ulps, &group_threshold, &as_arrow))
    return NULL;
  if (first && as_arrow) return PyErr_Format(PyExc_ValueError, "pip: as_arrow=True needs first=False (a CSR result)");
  PolygonLayerObject *layer = as_layer(layer_obj, "pip: layer");
  if (layer == NULL || !layer_open(layer, "pip")) return NULL;
  InArray xy;
  if (in_array(xy_obj, "pip: xy", M_F32 | M_F64, "float32 or float64", 2, &xy) < 0) return NULL;
  if (in_reach(layer->context, &xy) < 0) {
    in_release(&xy);
    return NULL;
  }
  rdx_join_options o;
  join_options(&o, pad_ulps, group_threshold, planar);
  ContextObject *context = layer->context;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  if (first && ON_DEVICE(xy)) {
    ResultOwnerObject *owner = owner_new(context);
    if (owner == NULL) {
      in_release(&xy);
      return NULL;
    }
    RUN_ON(context, st, msg, layer->layer != NULL, 1, pip_first_device(context, layer->layer, xy.a, &o, owner));
    int64_t n = xy.a.count;
    in_release(&xy);
    PyObject *out = st == RDX_OK ? device_array(owner, owner->block, n, 1, RDX_I64) : raise_layer_status(st, msg, "pip");
    Py_DECREF(owner);
    return out;
  }
  if (first) {
    npy_intp n = (npy_intp)xy.a.count;
    PyObject *out = PyArray_EMPTY(1, &n, NPY_INT64, 0);
    if (out == NULL) {
      in_release(&xy);
      return NULL;
    }
    rdx_array f = rdx_host_array(PyArray_DATA((PyArrayObject *)out), xy.a.count, RDX_I64);
    RUN(context, st, msg, layer->layer != NULL, rdx_join_pip_first(context->ctx, layer->layer, xy.a, &o, f));
    in_release(&xy);
    if (st != RDX_OK) {
      Py_DECREF(out);
      return raise_layer_status(st, msg, "pip");
    }
    return out;
  }
  rdx_result *res = NULL;
  RUN_ON(context, st, msg, layer->layer != NULL, ON_DEVICE(xy),
         rdx_join_pip_alloc(context->ctx, layer->layer, xy.a, &o, &res));
  in_release(&xy);
  if (st != RDX_OK) return raise_layer_status(st, msg, "pip");
  return csr_out(context, res, as_arrow);
}

/* ---------------------------------------------------------------------------------------- */
/* Module                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static PyObject *module_info(PyObject *module, PyObject *unused) {
  (void)module, (void)unused;
  rdx_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  rdx_status st;
  Py_BEGIN_ALLOW_THREADS
  st = rdx_info_get(&info);
  Py_END_ALLOW_THREADS
  if (st != RDX_OK) return raise_status(st, "rdx_info_get failed", "info");
  return Py_BuildValue("{s:s,s:O,s:O,s:i,s:s,s:i,s:L,s:O,s:O,s:s,s:i,s:s,s:O}", "version", info.version,
                       "cuda_built", info.cuda_built ? Py_True : Py_False, "optix_built",
                       info.optix_built ? Py_True : Py_False, "n_gpus", info.n_gpus, "gpu_name",
                       info.gpu_name, "gpu_sms", info.gpu_sms, "gpu_memory", (long long)info.gpu_memory,
                       "optix_usable", info.optix_usable ? Py_True : Py_False, "rt_cores",
                       info.rt_cores ? Py_True : Py_False, "auto_backend",
                       rdx_backend_name(info.auto_backend), "cpu_threads", info.cpu_threads,
                       "cpu_name", info.cpu_name, "have_gdal", info.have_gdal ? Py_True : Py_False);
}

static PyMethodDef module_methods[] = {
    {"info", (PyCFunction)module_info, METH_NOARGS, "info() -> dict: what this build and machine offer."},
    {"load", (PyCFunction)(void (*)(void))module_load, METH_VARARGS | METH_KEYWORDS,
     "load(path, backend='auto', *, context=None) -> KeyIndex: read a KeyIndex.save snapshot."},
    {"join", (PyCFunction)(void (*)(void))module_join, METH_VARARGS | METH_KEYWORDS,
     "join(r, s, op='intersects', *, areas=False, pad_ulps=0, group_threshold=0.0) -> (r_ids, s_ids)\n\n"
     "The (r, s) feature pairs of two PolygonLayers (one context) satisfying op, exactly:\n"
     "'intersects' (share a point), 'overlay' (interiors share a point), 'contains' (no point of s\n"
     "outside r), 'within' (no point of r outside s), 'boxes' (closed bounding boxes meet). Two int64\n"
     "arrays, sorted by (r, s), unique; with op='overlay' and areas=True a third, float64: the area\n"
     "of each pair's intersection. Host results are strided views of raydex's (n, 2) array."},
    {"pip", (PyCFunction)(void (*)(void))module_pip, METH_VARARGS | METH_KEYWORDS,
     "pip(layer, xy, *, first=False, planar=False, pad_ulps=0, group_threshold=0.0, as_arrow=False)\n\n"
     "Point in polygon for an (n, 2) float32/float64 array: (offsets, features), CSR (uint64):\n"
     "point i lies in features[offsets[i]:offsets[i + 1]] (ascending; boundaries included). With\n"
     "first=True, an int64 array: the smallest containing feature per point, or -1. Device points\n"
     "(DLPack) give raydex.DeviceArrays; as_arrow=True a raydex.ListArray (Arrow large_list)."},
    {"_wkb_polygon_arrays", rdx_py_wkb_polygon_arrays, METH_O,
     "_wkb_polygon_arrays(wkbs) -> (coords, ring_offsets, feature_offsets): WKB Polygons and\n"
     "MultiPolygons (a sequence of bytes or None) as PolygonLayer.from_arrays takes them."},
    {"_geos_polygon_arrays", rdx_py_geos_polygon_arrays, METH_VARARGS,
     "_geos_polygon_arrays(geoms, api) -> (coords, ring_offsets, feature_offsets): shapely 1.8\n"
     "Polygons and MultiPolygons (or None) read through GEOS's C API (api: python/src/wkb.h)."},
    {"load_points", (PyCFunction)(void (*)(void))module_load_points, METH_VARARGS | METH_KEYWORDS,
     "load_points(path, backend='auto', *, context=None) -> PointIndex: read a PointIndex.save snapshot."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, .m_name = "raydex._raydex",
    .m_doc = "raydex's C extension: contexts, key indexes, point indexes and polygon joins over numpy, "
             "DLPack and Arrow arrays.",
    .m_size = -1, .m_methods = module_methods};

static int add_exception(PyObject *m, PyObject **slot, const char *name, PyObject *bases, const char *doc) {
  char full[128];
  snprintf(full, sizeof full, "raydex.%s", name);
  *slot = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
  if (*slot == NULL) return -1;
  Py_INCREF(*slot);
  if (PyModule_AddObject(m, name, *slot) < 0) {
    Py_DECREF(*slot);
    return -1;
  }
  return 0;
}

static int add_exceptions(PyObject *m) {
  if (add_exception(m, &Error, "Error", PyExc_Exception,
                    "A raydex call failed; str() is the library's message, .status its status name.") < 0)
    return -1;
  struct { PyObject **slot; const char *name; PyObject *also; const char *doc; } table[] = {
      {&InvalidArgumentError, "InvalidArgumentError", PyExc_ValueError, "RDX_ERR_INVALID_ARGUMENT"},
      {&UnsupportedError, "UnsupportedError", NULL, "RDX_ERR_UNSUPPORTED"},
      {&OutOfMemoryError, "OutOfMemoryError", PyExc_MemoryError, "RDX_ERR_HOST/DEVICE_OUT_OF_MEMORY"},
      {&DeviceError, "DeviceError", NULL, "RDX_ERR_CUDA, RDX_ERR_OPTIX"},
      {&FileError, "FileError", PyExc_OSError, "RDX_ERR_IO"},
      {&ParseError, "ParseError", PyExc_ValueError, "RDX_ERR_PARSE"},
      {&MisuseError, "MisuseError", NULL, "RDX_ERR_MISUSE"},
      {&InternalError, "InternalError", NULL, "RDX_ERR_INTERNAL"}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    PyObject *bases = table[i].also != NULL ? PyTuple_Pack(2, Error, table[i].also) : PyTuple_Pack(1, Error);
    if (bases == NULL) return -1;
    int rc = add_exception(m, table[i].slot, table[i].name, bases, table[i].doc);
    Py_DECREF(bases);
    if (rc < 0) return -1;
  }
  PyObject *bases = PyTuple_Pack(1, UnsupportedError);
  if (bases == NULL) return -1;
  int rc = add_exception(m, &NoBackendError, "NoBackendError", bases, "RDX_ERR_NO_BACKEND");
  Py_DECREF(bases);
  return rc;
}

PyMODINIT_FUNC PyInit__raydex(void) {
  import_array();
  if (rdx_version_number() != RDX_VERSION_NUMBER) {
    PyErr_Format(PyExc_ImportError, "raydex: library version %d differs from the header's %d (rebuild the extension)",
                 rdx_version_number(), RDX_VERSION_NUMBER);
    return NULL;
  }
  if (names_make() < 0 || PyType_Ready(&ContextType) < 0 || PyType_Ready(&ResultOwnerType) < 0 ||
      PyType_Ready(&DeviceArrayType) < 0 || PyType_Ready(&ListArrayType) < 0 ||
      PyType_Ready(&KeyIndexType) < 0 || PyType_Ready(&PointIndexType) < 0 ||
      PyType_Ready(&PolygonLayerType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  if (add_exceptions(m) < 0) goto fail;
  Py_INCREF(&ContextType);
  if (PyModule_AddObject(m, "Context", (PyObject *)&ContextType) < 0) goto fail;
  Py_INCREF(&KeyIndexType);
  if (PyModule_AddObject(m, "KeyIndex", (PyObject *)&KeyIndexType) < 0) goto fail;
  Py_INCREF(&PointIndexType);
  if (PyModule_AddObject(m, "PointIndex", (PyObject *)&PointIndexType) < 0) goto fail;
  Py_INCREF(&DeviceArrayType);
  if (PyModule_AddObject(m, "DeviceArray", (PyObject *)&DeviceArrayType) < 0) goto fail;
  Py_INCREF(&ListArrayType);
  if (PyModule_AddObject(m, "ListArray", (PyObject *)&ListArrayType) < 0) goto fail;
  Py_INCREF(&PolygonLayerType);
  if (PyModule_AddObject(m, "PolygonLayer", (PyObject *)&PolygonLayerType) < 0) goto fail;
  if (PyModule_AddObject(m, "MISS", PyLong_FromUnsignedLongLong((unsigned long long)RDX_MISS)) < 0) goto fail;
  if (PyModule_AddStringConstant(m, "__version__", rdx_version_string()) < 0) goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
