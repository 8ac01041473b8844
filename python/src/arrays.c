/* arrays.c: arrays in (numpy/buffer, DLPack, Arrow readers: in_array) and arrays out (the
 * _ResultOwner, raydex.DeviceArray and raydex.ListArray types, csr_out) of raydex._raydex. */
#include "module.h"

/* ---------------------------------------------------------------------------------------- */
/* Arrays in: the buffer protocol                                                           */
/* ---------------------------------------------------------------------------------------- */

unsigned rdxpy_dtype_mask(rdx_dtype d) {
  switch (d) {
  case RDX_U32: return M_U32;
  case RDX_U64: return M_U64;
  case RDX_I64: return M_I64;
  case RDX_F32: return M_F32;
  case RDX_F64: return M_F64;
  }
  return 0;
}

const char *rdxpy_dtype_numpy_name(rdx_dtype d) {
  switch (d) {
  case RDX_U32: return "uint32";
  case RDX_U64: return "uint64";
  case RDX_I64: return "int64";
  case RDX_F32: return "float32";
  case RDX_F64: return "float64";
  }
  return "?";
}

int rdxpy_dtype_npy(rdx_dtype d) {
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
void rdxpy_in_release(InArray *in) {
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
  PyObject *dev = PyObject_CallMethodNoArgs(obj, rdxpy_names.dlpack_device);
  if (dev == NULL) return -1;
  int device_type = 0, device_id = 0;
  int ok = PyArg_ParseTuple(dev, "ii", &device_type, &device_id);
  Py_DECREF(dev);
  if (!ok) {
    PyErr_Format(PyExc_TypeError, "%s: __dlpack_device__() must return (device_type, device_id)", in->what);
    return -1;
  }
  if (device_type != kDLCPU && device_type != kDLCUDA && device_type != kDLCUDAHost) {
    PyErr_Format(rdxpy_InvalidArgumentError,
                 "%s is on DLPack device type %d; raydex reads CPU (1), CUDA (2) and CUDA host (3) memory",
                 in->what, device_type);
    return -1;
  }
  /* obj.__dlpack__(stream=..., max_version=(1, 0)), or without max_version for producers older
   * than DLPack 1.0, which refuse it with a TypeError */
  PyObject *call[3] = {obj, device_type == kDLCUDA ? rdxpy_names.one : Py_None, rdxpy_names.version_1_0};
  PyObject *cap = PyObject_VectorcallMethod(rdxpy_names.dlpack, call, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                            rdxpy_names.kw_stream_version);
  if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    cap = PyObject_VectorcallMethod(rdxpy_names.dlpack, call, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, rdxpy_names.kw_stream);
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
int rdxpy_in_array(PyObject *obj, const char *what, unsigned mask, const char *wanted, int columns,
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
  if (PyArray_Check(obj) || (PyObject_CheckBuffer(obj) && !has_attr(obj, rdxpy_names.dlpack)))
    rc = from_buffer(obj, want, in, &src);
  else if (has_attr(obj, rdxpy_names.arrow_array))
    rc = from_arrow_array(obj, in, &src);
  else if (has_attr(obj, rdxpy_names.arrow_stream))
    rc = from_arrow_stream(obj, in, &src);
  else if (has_attr(obj, rdxpy_names.dlpack))
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
    rdxpy_in_release(in);
    return -1;
  }
  int ndim_ok = columns == 0 ? src.ndim == 1 : src.ndim == 2 && src.columns == columns;
  if (src.dtype == 0 || (rdxpy_dtype_mask(src.dtype) & mask) == 0 || !ndim_ok) {
    PyErr_Format(PyExc_ValueError, "%s must be a %s array of %s; got %s with shape %s", what,
                 want_shape, wanted, src.dtype != 0 ? rdxpy_dtype_numpy_name(src.dtype) : src.got,
                 src.shape);
    rdxpy_in_release(in);
    return -1;
  }
  if ((uintptr_t)src.data % rdx_dtype_size(src.dtype) != 0) {
    PyErr_Format(PyExc_ValueError, "%s: data at %p is not aligned to its %zu-byte elements", what, src.data,
                 rdx_dtype_size(src.dtype));
    rdxpy_in_release(in);
    return -1;
  }
  in->a = columns == 0 ? rdx_host_array(src.data, src.rows, src.dtype)
                       : rdx_host_matrix(src.data, src.rows, columns, src.dtype);
  in->a.where = src.where;
  return 0;
}

/* Device inputs need a GPU context on the tensor's device; the check gives the argument's name,
 * where the library's own refusal could name only its parameter. */
int rdxpy_in_reach(const ContextObject *context, const InArray *in) {
  if (in->a.where != RDX_DEVICE) return 0;
  rdx_backend backend = rdx_context_backend(context->ctx);
  if (backend == RDX_BACKEND_CPU) {
    PyErr_Format(rdxpy_InvalidArgumentError,
                 "%s is CUDA device memory (DLPack device (2, %d)) but the context's backend is cpu: "
                 "use a GPU context (backend='cuda' or 'optix') or pass host memory",
                 in->what, in->device);
    return -1;
  }
  if (in->device != context->device) {
    PyErr_Format(rdxpy_InvalidArgumentError, "%s is on CUDA device %d but the context runs on device %d", in->what,
                 in->device, context->device);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Arrays out: results owned by the library, viewed by numpy, DLPack or Arrow                */
/* ---------------------------------------------------------------------------------------- */

static void owner_dealloc(ResultOwnerObject *self) {
  if (self->result != NULL || self->pairs != NULL || self->block != NULL) {
    /* With the GIL held: lock holders never wait for the GIL, so this cannot deadlock. Freeing
     * device memory waits for the device, so a consumer's kernels still reading it finish first. */
    PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
    if (self->result != NULL) rdx_result_free(self->context->ctx, self->result);
    if (self->pairs != NULL) rdx_join_pairs_free(self->context->ctx, self->pairs);
    if (self->block != NULL) rdxpy_block_give(self->context, self->block, self->block_bytes, self->exported);
    PyThread_release_lock(self->context->lock);
  }
  Py_XDECREF(self->context);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject rdxpy_ResultOwnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "raydex._raydex._ResultOwner",
    .tp_basicsize = sizeof(ResultOwnerObject),
    .tp_dealloc = (destructor)owner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Keeps a raydex result alive while numpy arrays, DLPack tensors or Arrow arrays view it.",
};

/* An owner holding nothing yet, or NULL with an exception set. */
ResultOwnerObject *rdxpy_owner_new(ContextObject *context) {
  ResultOwnerObject *owner = PyObject_New(ResultOwnerObject, &rdxpy_ResultOwnerType);
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

PyObject *rdxpy_device_array(ResultOwnerObject *owner, void *data, int64_t n, int64_t stride, rdx_dtype dtype) {
  DeviceArrayObject *self = PyObject_New(DeviceArrayObject, &rdxpy_DeviceArrayType);
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
  return (PyObject *)PyArray_DescrFromType(rdxpy_dtype_npy(self->dtype));
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
                              rdxpy_dtype_numpy_name(self->dtype), self->device);
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

PyTypeObject rdxpy_DeviceArrayType = {
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

PyTypeObject rdxpy_ListArrayType = {
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
PyObject *rdxpy_csr_out(ContextObject *context, rdx_result *result, int as_arrow) {
  ResultOwnerObject *owner = rdxpy_owner_new(context);
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
    offsets = rdxpy_device_array(owner, result->offsets, n + 1, 1, RDX_U64);
    if (offsets != NULL) rows = rdxpy_device_array(owner, result->row_ids, (int64_t)result->total, 1, RDX_U64);
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
  ListArrayObject *list = PyObject_New(ListArrayObject, &rdxpy_ListArrayType);
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

