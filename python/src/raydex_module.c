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
 *  - Inputs are borrowed through the buffer protocol (C-contiguous, typed): no copies, except
 *    range(lo, hi), which interleaves the two bound arrays into the (m, 2) array the library reads.
 *    Point lookups write into a fresh numpy array; CSR results are the library's own arrays
 *    (rdx_*_alloc), wrapped by numpy without a copy and freed when both arrays are gone; polygon
 *    join pairs likewise (strided views of the (n, 2) pair array), copied only when a GPU
 *    context returns them in device memory.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raydex.h"

/* ---------------------------------------------------------------------------------------- */
/* Exceptions                                                                               */
/* ---------------------------------------------------------------------------------------- */

static PyObject *Error, *InvalidArgumentError, *UnsupportedError, *NoBackendError,
    *OutOfMemoryError, *DeviceError, *FileError, *ParseError, *MisuseError, *InternalError;

/* The status a closed index "returns": not a library status, it never reaches the library. */
#define CLOSED_STATUS ((rdx_status)-1)
#define MESSAGE_BYTES 4096

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
} ContextObject;

static PyTypeObject ContextType;

/* Run `call` without the GIL and with the context's lock; on failure copy the context's message
 * into msg (a char[MESSAGE_BYTES]) before another thread can replace it. `guard` is checked under
 * the lock: when false the call is skipped and st is CLOSED_STATUS. */
#define RUN(cobj, st, msg, guard, call)                                                  \
  do {                                                                                   \
    Py_BEGIN_ALLOW_THREADS                                                               \
    PyThread_acquire_lock((cobj)->lock, WAIT_LOCK);                                      \
    if (!(guard)) {                                                                      \
      (st) = CLOSED_STATUS;                                                              \
    } else {                                                                             \
      (st) = (call);                                                                     \
      if ((st) != RDX_OK) snprintf((msg), MESSAGE_BYTES, "%s", rdx_context_message((cobj)->ctx)); \
    }                                                                                    \
    PyThread_release_lock((cobj)->lock);                                                 \
    Py_END_ALLOW_THREADS                                                                 \
  } while (0)

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
  /* Every index and result holds a reference, so nothing made in ctx is left here. */
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
     "memory() -> (in_use, peak): bytes the context holds now and the most it has held."},
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
              "their context alive.",
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

typedef struct {
  Py_buffer view;
  int held;       /* view must be released */
  rdx_array a;
} InArray;

static void in_release(InArray *in) {
  if (in->held) PyBuffer_Release(&in->view);
  in->held = 0;
}

static void shape_text(const Py_buffer *v, char *out, size_t bytes) {
  size_t n = (size_t)snprintf(out, bytes, "(");
  for (int i = 0; i < v->ndim && n < bytes; i++)
    n += (size_t)snprintf(out + n, bytes - n, i == 0 ? "%zd" : ", %zd", v->shape[i]);
  if (n < bytes) snprintf(out + n, bytes - n, v->ndim == 1 ? ",)" : ")");
}

/* Borrow obj as an rdx_array: C-contiguous, a dtype in `mask`, 1-D when columns == 0, else 2-D
 * with that many columns. `what` names the argument and `wanted` the dtypes in messages. */
static int in_array(PyObject *obj, const char *what, unsigned mask, const char *wanted, int columns,
                    InArray *in) {
  memset(in, 0, sizeof *in);
  char want_shape[32];
  if (columns == 0)
    snprintf(want_shape, sizeof want_shape, "1-D");
  else
    snprintf(want_shape, sizeof want_shape, "(n, %d)", columns);
  if (!PyObject_CheckBuffer(obj)) {
    PyErr_Format(PyExc_TypeError, "%s must be a numpy array (%s, %s); got %s", what, want_shape,
                 wanted, Py_TYPE(obj)->tp_name);
    return -1;
  }
  if (PyObject_GetBuffer(obj, &in->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
    /* Strided but otherwise readable: say so. Anything else keeps the exporter's own error. */
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *first = PyErr_GetRaisedException();
#else
    PyObject *type, *first, *traceback;
    PyErr_Fetch(&type, &first, &traceback);
#endif
    int strided = PyObject_GetBuffer(obj, &in->view, PyBUF_FULL_RO) == 0;
    if (strided) PyBuffer_Release(&in->view);
    PyErr_Clear();
#if PY_VERSION_HEX >= 0x030C0000
    if (strided) Py_XDECREF(first); else PyErr_SetRaisedException(first);
#else
    if (strided) Py_XDECREF(type), Py_XDECREF(first), Py_XDECREF(traceback);
    else PyErr_Restore(type, first, traceback);
#endif
    if (strided)
      PyErr_Format(PyExc_ValueError,
                   "%s must be a C-contiguous array (%s, %s); np.ascontiguousarray makes one", what,
                   want_shape, wanted);
    return -1;
  }
  in->held = 1;
  char got[64], shape[96];
  rdx_dtype d = buffer_dtype(&in->view, got, sizeof got);
  shape_text(&in->view, shape, sizeof shape);
  int ndim_ok = columns == 0 ? in->view.ndim == 1 : in->view.ndim == 2 && in->view.shape[1] == columns;
  if (d == 0 || (dtype_mask(d) & mask) == 0 || !ndim_ok) {
    PyErr_Format(PyExc_ValueError, "%s must be a %s array of %s; got %s with shape %s", what,
                 want_shape, wanted, d != 0 ? dtype_numpy_name(d) : got, shape);
    in_release(in);
    return -1;
  }
  in->a = columns == 0 ? rdx_host_array(in->view.buf, (int64_t)in->view.shape[0], d)
                       : rdx_host_matrix(in->view.buf, (int64_t)in->view.shape[0], columns, d);
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Arrays out: CSR results owned by the library                                             */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  ContextObject *context;  /* strong: the result belongs to its memory account */
  rdx_result *result;      /* owned; freed when both numpy arrays over it are gone */
  rdx_join_pairs_result *pairs; /* or a polygon join's result (owned likewise) */
} ResultOwnerObject;

static void owner_dealloc(ResultOwnerObject *self) {
  if (self->result != NULL || self->pairs != NULL) {
    /* With the GIL held: lock holders never wait for the GIL, so this cannot deadlock. */
    PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
    if (self->result != NULL) rdx_result_free(self->context->ctx, self->result);
    if (self->pairs != NULL) rdx_join_pairs_free(self->context->ctx, self->pairs);
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
    .tp_doc = "Keeps a raydex result alive while numpy arrays view it.",
};

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

/* (offsets, rows) over result, which this takes over (freeing it on any failure). */
static PyObject *csr_tuple(ContextObject *context, rdx_result *result) {
  ResultOwnerObject *owner = PyObject_New(ResultOwnerObject, &ResultOwnerType);
  if (owner == NULL) {
    PyThread_acquire_lock(context->lock, WAIT_LOCK);
    rdx_result_free(context->ctx, result);
    PyThread_release_lock(context->lock);
    return NULL;
  }
  Py_INCREF(context);
  owner->context = context;
  owner->result = result;
  owner->pairs = NULL;
  if (result->where != RDX_HOST) {
    Py_DECREF(owner);
    PyErr_SetString(InternalError, "raydex returned a result outside host memory for host queries");
    return NULL;
  }
  PyObject *offsets = wrap_u64(result->offsets, (npy_intp)result->n_queries + 1, (PyObject *)owner);
  PyObject *rows = offsets != NULL ? wrap_u64(result->row_ids, (npy_intp)result->total, (PyObject *)owner) : NULL;
  Py_DECREF(owner);
  if (rows == NULL) {
    Py_XDECREF(offsets);
    return NULL;
  }
  return Py_BuildValue("(NN)", offsets, rows);
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
  if (context == NULL) {
    in_release(&keys);
    in_release(&rows);
    return NULL;
  }
  rdx_index *idx = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(context, st, msg, 1, rdx_index_build(context->ctx, keys.a, rows.a, &o, &idx));
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

static PyObject *keyindex_lookup(KeyIndexObject *self, PyObject *arg) {
  if (!keyindex_open(self)) return NULL;
  InArray q;
  if (in_array(arg, "KeyIndex.lookup: queries", dtype_mask(self->dtype), KEYS_WANTED(self), 0, &q) < 0)
    return NULL;
  npy_intp n = (npy_intp)q.a.count;
  PyObject *out = PyArray_EMPTY(1, &n, NPY_UINT64, 0);
  if (out == NULL) {
    in_release(&q);
    return NULL;
  }
  rdx_array rows = rdx_host_array(PyArray_DATA((PyArrayObject *)out), q.a.count, RDX_U64);
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->idx != NULL, rdx_index_lookup(self->context->ctx, self->idx, q.a, rows));
  in_release(&q);
  if (st != RDX_OK) {
    Py_DECREF(out);
    return raise_status(st, msg, "KeyIndex");
  }
  return out;
}

static PyObject *keyindex_lookup_all(KeyIndexObject *self, PyObject *arg) {
  if (!keyindex_open(self)) return NULL;
  InArray q;
  if (in_array(arg, "KeyIndex.lookup_all: queries", dtype_mask(self->dtype), KEYS_WANTED(self), 0, &q) < 0)
    return NULL;
  rdx_result *r = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->idx != NULL, rdx_index_lookup_alloc(self->context->ctx, self->idx, q.a, &r));
  in_release(&q);
  if (st != RDX_OK) return raise_status(st, msg, "KeyIndex");
  return csr_tuple(self->context, r);
}

static PyObject *keyindex_range(KeyIndexObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"lo", "hi", NULL};
  PyObject *lo_obj, *hi_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:range", kwlist, &lo_obj, &hi_obj)) return NULL;
  if (!keyindex_open(self)) return NULL;
  unsigned mask = dtype_mask(self->dtype);
  InArray lo, hi;
  void *interleaved = NULL;
  rdx_array bounds;
  if (hi_obj == Py_None) {
    if (in_array(lo_obj, "KeyIndex.range: bounds", mask, KEYS_WANTED(self), 2, &lo) < 0) return NULL;
    bounds = lo.a;
  } else {
    if (in_array(lo_obj, "KeyIndex.range: lo", mask, KEYS_WANTED(self), 0, &lo) < 0) return NULL;
    if (in_array(hi_obj, "KeyIndex.range: hi", mask, KEYS_WANTED(self), 0, &hi) < 0) {
      in_release(&lo);
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
  RUN(self->context, st, msg, self->idx != NULL, rdx_index_range_alloc(self->context->ctx, self->idx, bounds, &r));
  in_release(&lo);
  PyMem_RawFree(interleaved);
  if (st != RDX_OK) return raise_status(st, msg, "KeyIndex");
  return csr_tuple(self->context, r);
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
  rdx_update_options o = RDX_UPDATE_OPTIONS_INIT;
  if (rebuild) o.flags |= RDX_UPDATE_REBUILD;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->idx != NULL,
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
  rdx_update_options o = RDX_UPDATE_OPTIONS_INIT;
  if (rebuild) o.flags |= RDX_UPDATE_REBUILD;
  int64_t n_erased = 0;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->idx != NULL,
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
    {"lookup", (PyCFunction)keyindex_lookup, METH_O,
     "lookup(queries) -> uint64 array: the smallest row id of each query's key, or raydex.MISS."},
    {"lookup_all", (PyCFunction)keyindex_lookup_all, METH_O,
     "lookup_all(queries) -> (offsets, rows): every row of each query, CSR, rows ascending."},
    {"range", (PyCFunction)(void (*)(void))keyindex_range, METH_VARARGS | METH_KEYWORDS,
     "range(lo, hi) -> (offsets, rows): the rows with lo[i] <= key <= hi[i], CSR.\n"
     "range(bounds) takes an (m, 2) array of [lo, hi] instead."},
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
  if (context == NULL) {
    in_release(&xy);
    return NULL;
  }
  rdx_points *pts = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(context, st, msg, 1, rdx_points_build(context->ctx, xy.a, &o, &pts));
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
                              int columns, const char *what) {
  if (!points_open(self)) return NULL;
  InArray q;
  if (in_array(q_obj, what, dtype_mask(self->dtype), POINTS_WANTED(self), columns, &q) < 0) return NULL;
  rdx_points_query query = RDX_POINTS_QUERY_INIT;
  query.type = type;
  query.k = k;
  rdx_result *r = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->pts != NULL,
      rdx_points_query_alloc(self->context->ctx, self->pts, q.a, &query, &r));
  in_release(&q);
  if (st != RDX_OK) return raise_status(st, msg, "PointIndex");
  return csr_tuple(self->context, r);
}

static PyObject *points_window(PointIndexObject *self, PyObject *arg) {
  return points_query(self, arg, RDX_POINTS_WINDOW, 0, 4, "PointIndex.window: boxes");
}
static PyObject *points_within(PointIndexObject *self, PyObject *arg) {
  return points_query(self, arg, RDX_POINTS_WITHIN, 0, 3, "PointIndex.within: circles");
}
static PyObject *points_match(PointIndexObject *self, PyObject *arg) {
  return points_query(self, arg, RDX_POINTS_MATCH, 0, 2, "PointIndex.match: xy");
}
static PyObject *points_knn(PointIndexObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"xy", "k", NULL};
  PyObject *q;
  int k;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oi:knn", kwlist, &q, &k)) return NULL;
  return points_query(self, q, RDX_POINTS_KNN, k, 2, "PointIndex.knn: xy");
}

static PyObject *points_insert(PointIndexObject *self, PyObject *arg) {
  if (!points_open(self)) return NULL;
  InArray xy;
  if (in_array(arg, "PointIndex.insert: xy", dtype_mask(self->dtype), POINTS_WANTED(self), 2, &xy) < 0)
    return NULL;
  uint64_t first = 0;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->pts != NULL, rdx_points_insert(self->context->ctx, self->pts, xy.a, &first));
  in_release(&xy);
  if (st != RDX_OK) return raise_status(st, msg, "PointIndex");
  return PyLong_FromUnsignedLongLong((unsigned long long)first);
}

static PyObject *points_erase(PointIndexObject *self, PyObject *arg) {
  if (!points_open(self)) return NULL;
  InArray ids;
  if (in_array(arg, "PointIndex.erase: ids", M_U32 | M_U64, "uint32 or uint64", 0, &ids) < 0) return NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->pts != NULL, rdx_points_erase(self->context->ctx, self->pts, ids.a));
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
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN(self->context, st, msg, self->pts != NULL, rdx_points_move(self->context->ctx, self->pts, ids.a, xy.a));
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
    {"window", (PyCFunction)points_window, METH_O,
     "window(boxes) -> (offsets, ids): points with xmin <= x <= xmax and ymin <= y <= ymax; boxes (m, 4)."},
    {"within", (PyCFunction)points_within, METH_O,
     "within(circles) -> (offsets, ids): points at distance <= r of (x, y); circles (m, 3)."},
    {"match", (PyCFunction)points_match, METH_O,
     "match(xy) -> (offsets, ids): points with exactly these coordinates; xy (m, 2)."},
    {"knn", (PyCFunction)(void (*)(void))points_knn, METH_VARARGS | METH_KEYWORDS,
     "knn(xy, k) -> (offsets, ids): the min(k, n) nearest points by distance, ties by id."},
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
  if (context == NULL) {
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
  RUN(context, st, msg, 1, rdx_polygons_create(context->ctx, &in, &layer));
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
  ResultOwnerObject *owner = PyObject_New(ResultOwnerObject, &ResultOwnerType);
  if (owner == NULL) {
    PyThread_acquire_lock(context->lock, WAIT_LOCK);
    rdx_join_pairs_free(context->ctx, res);
    PyThread_release_lock(context->lock);
    return NULL;
  }
  Py_INCREF(context);
  owner->context = context;
  owner->result = NULL;
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

static PyObject *module_pip(PyObject *module, PyObject *args, PyObject *kwds) {
  (void)module;
  static char *kwlist[] = {"layer", "xy", "first", "planar", "pad_ulps", "group_threshold", NULL};
  PyObject *layer_obj, *xy_obj;
  int first = 0, planar = 0, pad_ulps = 0;
  double group_threshold = 0.0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|$ppid:pip", kwlist, &layer_obj, &xy_obj, &first, &planar,
                                   &pad_ulps, &group_threshold))
    return NULL;
  PolygonLayerObject *layer = as_layer(layer_obj, "pip: layer");
  if (layer == NULL || !layer_open(layer, "pip")) return NULL;
  InArray xy;
  if (in_array(xy_obj, "pip: xy", M_F32 | M_F64, "float32 or float64", 2, &xy) < 0) return NULL;
  rdx_join_options o;
  join_options(&o, pad_ulps, group_threshold, planar);
  ContextObject *context = layer->context;
  rdx_status st;
  char msg[MESSAGE_BYTES];
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
  RUN(context, st, msg, layer->layer != NULL, rdx_join_pip_alloc(context->ctx, layer->layer, xy.a, &o, &res));
  in_release(&xy);
  if (st != RDX_OK) return raise_layer_status(st, msg, "pip");
  return csr_tuple(context, res);
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
     "pip(layer, xy, *, first=False, planar=False, pad_ulps=0, group_threshold=0.0)\n\n"
     "Point in polygon for an (n, 2) float32/float64 array: (offsets, features), CSR (uint64):\n"
     "point i lies in features[offsets[i]:offsets[i + 1]] (ascending; boundaries included). With\n"
     "first=True, an int64 array: the smallest containing feature per point, or -1."},
    {"load_points", (PyCFunction)(void (*)(void))module_load_points, METH_VARARGS | METH_KEYWORDS,
     "load_points(path, backend='auto', *, context=None) -> PointIndex: read a PointIndex.save snapshot."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, .m_name = "raydex._raydex",
    .m_doc = "raydex's C extension: contexts, key indexes, point indexes and polygon joins over numpy arrays.",
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
  if (PyType_Ready(&ContextType) < 0 || PyType_Ready(&ResultOwnerType) < 0 ||
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
  Py_INCREF(&PolygonLayerType);
  if (PyModule_AddObject(m, "PolygonLayer", (PyObject *)&PolygonLayerType) < 0) goto fail;
  if (PyModule_AddObject(m, "MISS", PyLong_FromUnsignedLongLong((unsigned long long)RDX_MISS)) < 0) goto fail;
  if (PyModule_AddStringConstant(m, "__version__", rdx_version_string()) < 0) goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
