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
 *
 * This file holds the module (its init and functions), the exceptions and raydex.Context;
 * module.h says what the other files hold and what they share.
 */
#define RDXPY_IMPORT_ARRAY /* this file calls import_array(); the others share its table */
#include "module.h"
#include "wkb.h"

/* ---------------------------------------------------------------------------------------- */
/* Exceptions                                                                               */
/* ---------------------------------------------------------------------------------------- */

static PyObject *Error, *UnsupportedError, *NoBackendError, *OutOfMemoryError, *DeviceError, *FileError,
    *ParseError, *MisuseError, *InternalError;
PyObject *rdxpy_InvalidArgumentError; /* rdxpy_in_reach (arrays.c) raises it too */

/* The protocols' names (module.h), made once (PyInit__raydex). */
struct rdxpy_names rdxpy_names;

static int names_make(void) {
  rdxpy_names.dlpack = PyUnicode_InternFromString("__dlpack__");
  rdxpy_names.dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
  rdxpy_names.arrow_array = PyUnicode_InternFromString("__arrow_c_array__");
  rdxpy_names.arrow_stream = PyUnicode_InternFromString("__arrow_c_stream__");
  rdxpy_names.one = PyLong_FromLong(1);
  rdxpy_names.version_1_0 = Py_BuildValue("(ii)", 1, 0);
  rdxpy_names.kw_stream_version = Py_BuildValue("(ss)", "stream", "max_version");
  rdxpy_names.kw_stream = Py_BuildValue("(s)", "stream");
  return rdxpy_names.dlpack && rdxpy_names.dlpack_device && rdxpy_names.arrow_array &&
                 rdxpy_names.arrow_stream && rdxpy_names.one && rdxpy_names.version_1_0 &&
                 rdxpy_names.kw_stream_version && rdxpy_names.kw_stream ? 0 : -1;
}

static PyObject *status_class(rdx_status st) {
  switch (st) {
  case RDX_ERR_INVALID_ARGUMENT: return rdxpy_InvalidArgumentError;
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
PyObject *rdxpy_raise_status(rdx_status st, const char *message, const char *what) {
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

static PyTypeObject ContextType;

/* A device block of at least `bytes` for a result: a spare one when one fits, else rdx_malloc's.
 * Called under the context's lock. */
rdx_status rdxpy_block_take(ContextObject *c, size_t bytes, void **block, size_t *block_bytes) {
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
void rdxpy_block_give(ContextObject *c, void *block, size_t bytes, int exported) {
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

/* Device arrays come from CuPy, PyTorch or JAX, whose kernels that wrote them may still be running
 * on their streams. __dlpack__ is asked for stream=1 (from_dlpack), so the producer orders that
 * work before the legacy default stream; raydex's own stream is a non-blocking one, which waits
 * for no other until told: rdx_context_wait_stream makes it wait for the legacy stream, on the
 * device, without blocking the host. */
rdx_status rdxpy_wait_for_device(rdx_context *ctx) { return rdx_context_wait_stream(ctx, (void *)1); }

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
    return (ContextObject *)rdxpy_raise_status(st, msg, "Context");
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
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "Context");
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

ContextObject *rdxpy_resolve_context(PyObject *context, const char *backend_name, const char *what) {
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
  if (st != RDX_OK) return rdxpy_raise_status(st, "rdx_info_get failed", "info");
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
    {"load", (PyCFunction)(void (*)(void))rdxpy_module_load, METH_VARARGS | METH_KEYWORDS,
     "load(path, backend='auto', *, context=None) -> KeyIndex: read a KeyIndex.save snapshot."},
    {"join", (PyCFunction)(void (*)(void))rdxpy_module_join, METH_VARARGS | METH_KEYWORDS,
     "join(r, s, op='intersects', *, areas=False, pad_ulps=0, group_threshold=0.0) -> (r_ids, s_ids)\n\n"
     "The (r, s) feature pairs of two PolygonLayers (one context) satisfying op, exactly:\n"
     "'intersects' (share a point), 'overlay' (interiors share a point), 'contains' (no point of s\n"
     "outside r), 'within' (no point of r outside s), 'boxes' (closed bounding boxes meet). Two int64\n"
     "arrays, sorted by (r, s), unique; with op='overlay' and areas=True a third, float64: the area\n"
     "of each pair's intersection. Host results are strided views of raydex's (n, 2) array."},
    {"pip", (PyCFunction)(void (*)(void))rdxpy_module_pip, METH_VARARGS | METH_KEYWORDS,
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
    {"load_points", (PyCFunction)(void (*)(void))rdxpy_module_load_points, METH_VARARGS | METH_KEYWORDS,
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
      {&rdxpy_InvalidArgumentError, "InvalidArgumentError", PyExc_ValueError, "RDX_ERR_INVALID_ARGUMENT"},
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
  if (names_make() < 0 || PyType_Ready(&ContextType) < 0 || PyType_Ready(&rdxpy_ResultOwnerType) < 0 ||
      PyType_Ready(&rdxpy_DeviceArrayType) < 0 || PyType_Ready(&rdxpy_ListArrayType) < 0 ||
      PyType_Ready(&rdxpy_KeyIndexType) < 0 || PyType_Ready(&rdxpy_PointIndexType) < 0 ||
      PyType_Ready(&rdxpy_PolygonLayerType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  if (add_exceptions(m) < 0) goto fail;
  Py_INCREF(&ContextType);
  if (PyModule_AddObject(m, "Context", (PyObject *)&ContextType) < 0) goto fail;
  Py_INCREF(&rdxpy_KeyIndexType);
  if (PyModule_AddObject(m, "KeyIndex", (PyObject *)&rdxpy_KeyIndexType) < 0) goto fail;
  Py_INCREF(&rdxpy_PointIndexType);
  if (PyModule_AddObject(m, "PointIndex", (PyObject *)&rdxpy_PointIndexType) < 0) goto fail;
  Py_INCREF(&rdxpy_DeviceArrayType);
  if (PyModule_AddObject(m, "DeviceArray", (PyObject *)&rdxpy_DeviceArrayType) < 0) goto fail;
  Py_INCREF(&rdxpy_ListArrayType);
  if (PyModule_AddObject(m, "ListArray", (PyObject *)&rdxpy_ListArrayType) < 0) goto fail;
  Py_INCREF(&rdxpy_PolygonLayerType);
  if (PyModule_AddObject(m, "PolygonLayer", (PyObject *)&rdxpy_PolygonLayerType) < 0) goto fail;
  if (PyModule_AddObject(m, "MISS", PyLong_FromUnsignedLongLong((unsigned long long)RDX_MISS)) < 0) goto fail;
  if (PyModule_AddStringConstant(m, "__version__", rdx_version_string()) < 0) goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
