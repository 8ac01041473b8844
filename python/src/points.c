/* points.c: raydex.PointIndex and raydex.load_points, of raydex._raydex. */
#include "module.h"

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
  if (rdxpy_in_array(xy_obj, "PointIndex: xy", M_F32 | M_F64, "float32 or float64", 2, &xy) < 0) return NULL;
  ContextObject *context = rdxpy_resolve_context(context_obj, backend_name, "PointIndex");
  if (context == NULL || rdxpy_in_reach(context, &xy) < 0) {
    Py_XDECREF(context);
    rdxpy_in_release(&xy);
    return NULL;
  }
  rdx_points *pts = NULL;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(context, st, msg, 1, ON_DEVICE(xy), rdx_points_build(context->ctx, xy.a, &o, &pts));
  rdxpy_in_release(&xy);
  if (st != RDX_OK) {
    Py_DECREF(context);
    return rdxpy_raise_status(st, msg, "PointIndex");
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
  if (rdxpy_in_array(q_obj, what, rdxpy_dtype_mask(self->dtype), POINTS_WANTED(self), columns, &q) < 0) return NULL;
  if (rdxpy_in_reach(self->context, &q) < 0) {
    rdxpy_in_release(&q);
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
  rdxpy_in_release(&q);
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "PointIndex");
  return rdxpy_csr_out(self->context, r, as_arrow);
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
  if (rdxpy_in_array(arg, "PointIndex.insert: xy", rdxpy_dtype_mask(self->dtype), POINTS_WANTED(self), 2, &xy) < 0)
    return NULL;
  if (rdxpy_in_reach(self->context, &xy) < 0) {
    rdxpy_in_release(&xy);
    return NULL;
  }
  uint64_t first = 0;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->pts != NULL, ON_DEVICE(xy),
         rdx_points_insert(self->context->ctx, self->pts, xy.a, &first));
  rdxpy_in_release(&xy);
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "PointIndex");
  return PyLong_FromUnsignedLongLong((unsigned long long)first);
}

static PyObject *points_erase(PointIndexObject *self, PyObject *arg) {
  if (!points_open(self)) return NULL;
  InArray ids;
  if (rdxpy_in_array(arg, "PointIndex.erase: ids", M_U32 | M_U64, "uint32 or uint64", 0, &ids) < 0) return NULL;
  if (rdxpy_in_reach(self->context, &ids) < 0) {
    rdxpy_in_release(&ids);
    return NULL;
  }
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->pts != NULL, ON_DEVICE(ids),
         rdx_points_erase(self->context->ctx, self->pts, ids.a));
  rdxpy_in_release(&ids);
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "PointIndex");
  Py_RETURN_NONE;
}

static PyObject *points_move(PointIndexObject *self, PyObject *args) {
  PyObject *ids_obj, *xy_obj;
  if (!PyArg_ParseTuple(args, "OO:move", &ids_obj, &xy_obj)) return NULL;
  if (!points_open(self)) return NULL;
  InArray ids, xy;
  if (rdxpy_in_array(ids_obj, "PointIndex.move: ids", M_U32 | M_U64, "uint32 or uint64", 0, &ids) < 0) return NULL;
  if (rdxpy_in_array(xy_obj, "PointIndex.move: xy", rdxpy_dtype_mask(self->dtype), POINTS_WANTED(self), 2, &xy) < 0) {
    rdxpy_in_release(&ids);
    return NULL;
  }
  if (rdxpy_in_reach(self->context, &ids) < 0 || rdxpy_in_reach(self->context, &xy) < 0) {
    rdxpy_in_release(&ids);
    rdxpy_in_release(&xy);
    return NULL;
  }
  rdx_status st;
  char msg[MESSAGE_BYTES];
  RUN_ON(self->context, st, msg, self->pts != NULL, ON_DEVICE(ids) || ON_DEVICE(xy),
         rdx_points_move(self->context->ctx, self->pts, ids.a, xy.a));
  rdxpy_in_release(&ids);
  rdxpy_in_release(&xy);
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "PointIndex");
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
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "PointIndex");
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
  if (st != RDX_OK) return rdxpy_raise_status(st, msg, "PointIndex");
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
  return (PyObject *)PyArray_DescrFromType(rdxpy_dtype_npy(self->dtype));
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
                                rdxpy_dtype_numpy_name(self->dtype));
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK); /* an update may run on another thread */
  long long n = self->pts != NULL ? (long long)rdx_points_count(self->pts) : 0;
  PyThread_release_lock(self->context->lock);
  return PyUnicode_FromFormat("<raydex.PointIndex index=%s dtype=%s backend=%s n=%lld>",
                              self->kind == RDX_POINTS_KDTREE ? "kdtree" : "quadtree",
                              rdxpy_dtype_numpy_name(self->dtype),
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
    {"__enter__", (PyCFunction)rdxpy_keyindex_enter, METH_NOARGS, NULL},
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

PyTypeObject rdxpy_PointIndexType = {
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

PyObject *rdxpy_module_load_points(PyObject *module, PyObject *args, PyObject *kwds) {
  (void)module;
  static char *kwlist[] = {"path", "backend", "context", NULL};
  PyObject *path = NULL, *context_obj = Py_None;
  const char *backend_name = "auto";
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|s$O:load_points", kwlist, PyUnicode_FSConverter, &path,
                                   &backend_name, &context_obj))
    return NULL;
  ContextObject *context = rdxpy_resolve_context(context_obj, backend_name, "load_points");
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
    return rdxpy_raise_status(st, msg, "load_points");
  }
  return (PyObject *)points_wrap(&rdxpy_PointIndexType, context, pts, RDX_POINTS_QUADTREE);
}

