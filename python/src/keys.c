/* keys.c: raydex.KeyIndex and raydex.load, of raydex._raydex. */
#include "module.h"

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
  if (rdxpy_in_array(keys_obj, "KeyIndex: keys", M_U32 | M_U64, "uint32 or uint64", 0, &keys) < 0) return NULL;
  if (rows_obj != Py_None &&
      rdxpy_in_array(rows_obj, "KeyIndex: rows", M_U32 | M_U64, "uint32 or uint64", 0, &rows) < 0) {
    rdxpy_in_release(&keys);
    return NULL;
  }
  ContextObject *context = rdxpy_resolve_context(context_obj, backend_name, "KeyIndex");
  if (context == NULL || rdxpy_in_reach(context, &keys) < 0 || rdxpy_in_reach(context, &rows) < 0) {
    Py_XDECREF(context);
    rdxpy_in_release(&keys);
    rdxpy_in_release(&rows);
    return NULL;
  }
  rdx_index *idx = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(context, st, msg, 1, ON_DEVICE(keys) || ON_DEVICE(rows),
         rdx_index_build(context->ctx, keys.a, rows.a, &o, &idx));
  rdxpy_in_release(&keys);
  rdxpy_in_release(&rows);
  if (st != RDX_OK) {
    Py_DECREF(context);
    return rdxpy_raise_status(st, msg, "KeyIndex");
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
  rdx_status st = rdxpy_block_take(c, (size_t)q.count * sizeof(uint64_t), &owner->block, &owner->block_bytes);
  return st != RDX_OK ? st : rdx_index_lookup(c->ctx, idx, q, rdx_device_array(owner->block, q.count, RDX_U64));
}

/* lookup's out=: a writable C-contiguous uint64 numpy array of n entries (host queries) or a DLPack
 * uint64 vector of n entries in the context's device memory (device queries). */
static int lookup_out(PyObject *obj, const InArray *q, InArray *out) {
  if (ON_DEVICE(*q)) {
    if (rdxpy_in_array(obj, "KeyIndex.lookup: out", M_U64, "uint64", 0, out) < 0) return -1;
    if (!ON_DEVICE(*out) || out->a.count != q->a.count) {
      PyErr_Format(PyExc_ValueError, "KeyIndex.lookup: out must be %lld uint64 in device memory, as the queries are",
                   (long long)q->a.count);
      rdxpy_in_release(out);
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
  if (rdxpy_in_array(q_obj, "KeyIndex.lookup: queries", rdxpy_dtype_mask(self->dtype), KEYS_WANTED(self), 0, &q) < 0)
    return NULL;
  if (rdxpy_in_reach(self->context, &q) < 0) {
    rdxpy_in_release(&q);
    return NULL;
  }
  rdx_status st;
  char msg[MESSAGE_BYTES];
  if (out_obj != Py_None) { /* the caller's array, returned */
    InArray out;
    if (lookup_out(out_obj, &q, &out) < 0 || rdxpy_in_reach(self->context, &out) < 0) {
      rdxpy_in_release(&q);
      return NULL;
    }
    RUN_ON(self->context, st, msg, self->idx != NULL, ON_DEVICE(q),
           rdx_index_lookup(self->context->ctx, self->idx, q.a, out.a));
    rdxpy_in_release(&q);
    rdxpy_in_release(&out);
    if (st != RDX_OK) return rdxpy_raise_status(st, msg, "KeyIndex");
    return Py_NewRef(out_obj);
  }
  if (ON_DEVICE(q)) {
    ResultOwnerObject *owner = rdxpy_owner_new(self->context);
    if (owner == NULL) {
      rdxpy_in_release(&q);
      return NULL;
    }
    RUN_ON(self->context, st, msg, self->idx != NULL, 1, lookup_device(self->context, self->idx, q.a, owner));
    int64_t n = q.a.count;
    rdxpy_in_release(&q);
    PyObject *out = st == RDX_OK ? rdxpy_device_array(owner, owner->block, n, 1, RDX_U64)
                                 : rdxpy_raise_status(st, msg, "KeyIndex");
    Py_DECREF(owner);
    return out;
  }
  npy_intp n = (npy_intp)q.a.count;
  PyObject *out = PyArray_EMPTY(1, &n, NPY_UINT64, 0);
  if (out == NULL) {
    rdxpy_in_release(&q);
    return NULL;
  }
  rdx_array rows = rdx_host_array(PyArray_DATA((PyArrayObject *)out), q.a.count, RDX_U64);
  RUN(self->context, st, msg, self->idx != NULL, rdx_index_lookup(self->context->ctx, self->idx, q.a, rows));
  rdxpy_in_release(&q);
  if (st != RDX_OK) {
    Py_DECREF(out);
    return rdxpy_raise_status(st, msg, "KeyIndex");
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
  if (rdxpy_in_array(q_obj, "KeyIndex.lookup_all: queries", rdxpy_dtype_mask(self->dtype), KEYS_WANTED(self), 0, &q) < 0)
    return NULL;
  if (rdxpy_in_reach(self->context, &q) < 0) {
    rdxpy_in_release(&q);
    return NULL;
  }
  rdx_result *r = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->idx != NULL, ON_DEVICE(q),
         rdx_index_lookup_alloc(self->context->ctx, self->idx, q.a, &r));
  rdxpy_in_release(&q);
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "KeyIndex");
  return rdxpy_csr_out(self->context, r, as_arrow);
}

static PyObject *keyindex_range(KeyIndexObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"lo", "hi", "as_arrow", NULL};
  PyObject *lo_obj, *hi_obj = Py_None;
  int as_arrow = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O$p:range", kwlist, &lo_obj, &hi_obj, &as_arrow)) return NULL;
  if (!keyindex_open(self)) return NULL;
  unsigned mask = rdxpy_dtype_mask(self->dtype);
  InArray lo, hi;
  void *interleaved = NULL;
  rdx_array bounds;
  if (hi_obj == Py_None) {
    if (rdxpy_in_array(lo_obj, "KeyIndex.range: bounds", mask, KEYS_WANTED(self), 2, &lo) < 0) return NULL;
    if (rdxpy_in_reach(self->context, &lo) < 0) {
      rdxpy_in_release(&lo);
      return NULL;
    }
    bounds = lo.a;
  } else {
    if (rdxpy_in_array(lo_obj, "KeyIndex.range: lo", mask, KEYS_WANTED(self), 0, &lo) < 0) return NULL;
    if (rdxpy_in_array(hi_obj, "KeyIndex.range: hi", mask, KEYS_WANTED(self), 0, &hi) < 0) {
      rdxpy_in_release(&lo);
      return NULL;
    }
    if (ON_DEVICE(lo) || ON_DEVICE(hi)) {
      /* The library reads one (m, 2) array; interleaving device arrays would need a kernel here. */
      PyErr_SetString(PyExc_ValueError,
                      "KeyIndex.range: lo and hi in device memory must come as one (m, 2) bounds array "
                      "(cupy.stack([lo, hi], axis=1), torch.stack((lo, hi), dim=1)): range(bounds)");
      rdxpy_in_release(&lo);
      rdxpy_in_release(&hi);
      return NULL;
    }
    if (lo.a.count != hi.a.count) {
      PyErr_Format(PyExc_ValueError, "KeyIndex.range: lo and hi must have the same length (%lld != %lld)",
                   (long long)lo.a.count, (long long)hi.a.count);
      rdxpy_in_release(&lo);
      rdxpy_in_release(&hi);
      return NULL;
    }
    size_t size = rdx_dtype_size(self->dtype);
    int64_t m = lo.a.count;
    interleaved = PyMem_RawMalloc(m > 0 ? (size_t)m * 2 * size : 1);
    if (interleaved == NULL) {
      rdxpy_in_release(&lo);
      rdxpy_in_release(&hi);
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
    rdxpy_in_release(&hi);
    bounds = rdx_host_matrix(interleaved, m, 2, self->dtype);
  }
  rdx_result *r = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->idx != NULL, bounds.where == RDX_DEVICE,
         rdx_index_range_alloc(self->context->ctx, self->idx, bounds, &r));
  rdxpy_in_release(&lo);
  PyMem_RawFree(interleaved);
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "KeyIndex");
  return rdxpy_csr_out(self->context, r, as_arrow);
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
  if (rdxpy_in_array(keys_obj, "KeyIndex.insert: keys", rdxpy_dtype_mask(self->dtype), KEYS_WANTED(self), 0, &keys) < 0)
    return NULL;
  if (rows_obj != Py_None &&
      rdxpy_in_array(rows_obj, "KeyIndex.insert: rows", M_U32 | M_U64, "uint32 or uint64", 0, &rows) < 0) {
    rdxpy_in_release(&keys);
    return NULL;
  }
  if (rdxpy_in_reach(self->context, &keys) < 0 || rdxpy_in_reach(self->context, &rows) < 0) {
    rdxpy_in_release(&keys);
    rdxpy_in_release(&rows);
    return NULL;
  }
  rdx_update_options o = RDX_UPDATE_OPTIONS_INIT;
  if (rebuild) o.flags |= RDX_UPDATE_REBUILD;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->idx != NULL, ON_DEVICE(keys) || ON_DEVICE(rows),
         rdx_index_insert(self->context->ctx, self->idx, keys.a, rows.a, &o));
  rdxpy_in_release(&keys);
  rdxpy_in_release(&rows);
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "KeyIndex");
  Py_RETURN_NONE;
}

static PyObject *keyindex_erase(KeyIndexObject *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"keys", "rebuild", NULL};
  PyObject *keys_obj;
  int rebuild = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$p:erase", kwlist, &keys_obj, &rebuild)) return NULL;
  if (!keyindex_open(self)) return NULL;
  InArray keys;
  if (rdxpy_in_array(keys_obj, "KeyIndex.erase: keys", rdxpy_dtype_mask(self->dtype), KEYS_WANTED(self), 0, &keys) < 0)
    return NULL;
  if (rdxpy_in_reach(self->context, &keys) < 0) {
    rdxpy_in_release(&keys);
    return NULL;
  }
  rdx_update_options o = RDX_UPDATE_OPTIONS_INIT;
  if (rebuild) o.flags |= RDX_UPDATE_REBUILD;
  int64_t n_erased = 0;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->idx != NULL, ON_DEVICE(keys),
         rdx_index_erase(self->context->ctx, self->idx, keys.a, &o, &n_erased));
  rdxpy_in_release(&keys);
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "KeyIndex");
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
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "KeyIndex");
  Py_RETURN_NONE;
}

static PyObject *keyindex_close(KeyIndexObject *self, PyObject *unused) {
  (void)unused;
  keyindex_destroy(self);
  Py_RETURN_NONE;
}

PyObject *rdxpy_keyindex_enter(PyObject *self, PyObject *unused) {
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
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "KeyIndex");
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
  return (PyObject *)PyArray_DescrFromType(rdxpy_dtype_npy(self->dtype));
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
                                rdxpy_dtype_numpy_name(self->dtype));
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK); /* an update may run on another thread */
  long long n = self->idx != NULL ? (long long)rdx_index_count(self->idx) : 0;
  PyThread_release_lock(self->context->lock);
  return PyUnicode_FromFormat("<raydex.KeyIndex kind=%s dtype=%s backend=%s n=%lld>",
                              rdx_kind_name(self->kind), rdxpy_dtype_numpy_name(self->dtype),
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
    {"__enter__", (PyCFunction)rdxpy_keyindex_enter, METH_NOARGS, NULL},
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

PyTypeObject rdxpy_KeyIndexType = {
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

PyObject *rdxpy_module_load(PyObject *module, PyObject *args, PyObject *kwds) {
  (void)module;
  static char *kwlist[] = {"path", "backend", "context", NULL};
  PyObject *path = NULL, *context_obj = Py_None;
  const char *backend_name = "auto";
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|s$O:load", kwlist, PyUnicode_FSConverter, &path,
                                   &backend_name, &context_obj))
    return NULL;
  ContextObject *context = rdxpy_resolve_context(context_obj, backend_name, "load");
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
    return rdxpy_raise_status(st, msg, "load");
  }
  return (PyObject *)keyindex_wrap(&rdxpy_KeyIndexType, context, idx);
}

