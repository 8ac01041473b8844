/* polygons.c: raydex.PolygonLayer and the polygon joins raydex.join and raydex.pip, of
 * raydex._raydex. */
#include "module.h"

/* ---------------------------------------------------------------------------------------- */
/* PolygonLayer, join, pip                                                                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  ContextObject *context;  /* strong reference */
  rdx_polygons *layer;     /* NULL once closed */
  rdx_dtype dtype;         /* the coordinates' dtype as given (f32 or f64) */
} PolygonLayerObject;

static PyObject *raise_layer_status(rdx_status st, const char *message, const char *what) {
  if (st == CLOSED_STATUS) return PyErr_Format(PyExc_ValueError, "%s: the layer is closed", what);
  return rdxpy_raise_status(st, message, what);
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
  if (rdxpy_in_array(coords_obj, "PolygonLayer.from_arrays: coords", M_F32 | M_F64, "float32 or float64", 2,
                     &coords) < 0)
    return NULL;
  if (rdxpy_in_array(rings_obj, "PolygonLayer.from_arrays: ring_offsets", M_U64, "uint64", 0, &rings) < 0) {
    rdxpy_in_release(&coords);
    return NULL;
  }
  if (rdxpy_in_array(features_obj, "PolygonLayer.from_arrays: feature_offsets", M_U64, "uint64", 0, &features) < 0) {
    rdxpy_in_release(&coords);
    rdxpy_in_release(&rings);
    return NULL;
  }
  ContextObject *context = rdxpy_resolve_context(context_obj, backend_name, "PolygonLayer");
  if (context == NULL || rdxpy_in_reach(context, &coords) < 0 || rdxpy_in_reach(context, &rings) < 0 ||
      rdxpy_in_reach(context, &features) < 0) {
    Py_XDECREF(context);
    rdxpy_in_release(&coords);
    rdxpy_in_release(&rings);
    rdxpy_in_release(&features);
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
  rdxpy_in_release(&coords);
  rdxpy_in_release(&rings);
  rdxpy_in_release(&features);
  if (st != RDX_OK) {
    Py_DECREF(context);
    return rdxpy_raise_status(st, msg, "PolygonLayer");
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
  ContextObject *context = rdxpy_resolve_context(context_obj, backend_name, "PolygonLayer.from_file");
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
    return rdxpy_raise_status(st, msg, "PolygonLayer.from_file");
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
                       "n_edges", (long long)info.n_edges, "dtype", rdxpy_dtype_numpy_name(info.dtype), "box",
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
  return (PyObject *)PyArray_DescrFromType(rdxpy_dtype_npy(self->dtype));
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
    return PyUnicode_FromFormat("<raydex.PolygonLayer dtype=%s closed>", rdxpy_dtype_numpy_name(self->dtype));
  rdx_polygons_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  PyThread_acquire_lock(self->context->lock, WAIT_LOCK);
  rdx_status st = self->layer != NULL ? rdx_polygons_describe(self->context->ctx, self->layer, &info) : CLOSED_STATUS;
  PyThread_release_lock(self->context->lock);
  return PyUnicode_FromFormat("<raydex.PolygonLayer dtype=%s backend=%s features=%lld rings=%lld vertices=%lld>",
                              rdxpy_dtype_numpy_name(self->dtype),
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
    {"__enter__", (PyCFunction)rdxpy_keyindex_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)layer_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef layer_getset[] = {
    {"dtype", (getter)layer_get_dtype, NULL, "the coordinates' dtype as given (float32 or float64)", NULL},
    {"backend", (getter)layer_get_backend, NULL, "the backend of the layer's context", NULL},
    {"context", (getter)layer_get_context, NULL, "the raydex.Context the layer lives in", NULL},
    {"closed", (getter)layer_get_closed, NULL, "True after close()", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods layer_sequence = {.sq_length = (lenfunc)layer_len};

PyTypeObject rdxpy_PolygonLayerType = {
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
  if (!PyObject_TypeCheck(obj, &rdxpy_PolygonLayerType)) {
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
      return st != RDX_OK ? rdxpy_raise_status(st, msg, "join") : NULL;
    }
    return want_areas ? Py_BuildValue("(NNN)", rs, ss, areas) : Py_BuildValue("(NN)", rs, ss);
  }
  ResultOwnerObject *owner = rdxpy_owner_new(context);
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

PyObject *rdxpy_module_join(PyObject *module, PyObject *args, PyObject *kwds) {
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
  rdx_status st = rdxpy_block_take(c, (size_t)xy.count * sizeof(int64_t), &owner->block, &owner->block_bytes);
  return st != RDX_OK ? st : rdx_join_pip_first(c->ctx, layer, xy, o, rdx_device_array(owner->block, xy.count, RDX_I64));
}

PyObject *rdxpy_module_pip(PyObject *module, PyObject *args, PyObject *kwds) {
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
  if (rdxpy_in_array(xy_obj, "pip: xy", M_F32 | M_F64, "float32 or float64", 2, &xy) < 0) return NULL;
  if (rdxpy_in_reach(layer->context, &xy) < 0) {
    rdxpy_in_release(&xy);
    return NULL;
  }
  rdx_join_options o;
  join_options(&o, pad_ulps, group_threshold, planar);
  ContextObject *context = layer->context;
  rdx_status st;
  char msg[MESSAGE_BYTES];
  if (first && ON_DEVICE(xy)) {
    ResultOwnerObject *owner = rdxpy_owner_new(context);
    if (owner == NULL) {
      rdxpy_in_release(&xy);
      return NULL;
    }
    RUN_ON(context, st, msg, layer->layer != NULL, 1, pip_first_device(context, layer->layer, xy.a, &o, owner));
    int64_t n = xy.a.count;
    rdxpy_in_release(&xy);
    PyObject *out = st == RDX_OK ? rdxpy_device_array(owner, owner->block, n, 1, RDX_I64)
                                 : raise_layer_status(st, msg, "pip");
    Py_DECREF(owner);
    return out;
  }
  if (first) {
    npy_intp n = (npy_intp)xy.a.count;
    PyObject *out = PyArray_EMPTY(1, &n, NPY_INT64, 0);
    if (out == NULL) {
      rdxpy_in_release(&xy);
      return NULL;
    }
    rdx_array f = rdx_host_array(PyArray_DATA((PyArrayObject *)out), xy.a.count, RDX_I64);
    RUN(context, st, msg, layer->layer != NULL, rdx_join_pip_first(context->ctx, layer->layer, xy.a, &o, f));
    rdxpy_in_release(&xy);
    if (st != RDX_OK) {
      Py_DECREF(out);
      return raise_layer_status(st, msg, "pip");
    }
    return out;
  }
  rdx_result *res = NULL;
  RUN_ON(context, st, msg, layer->layer != NULL, ON_DEVICE(xy),
         rdx_join_pip_alloc(context->ctx, layer->layer, xy.a, &o, &res));
  rdxpy_in_release(&xy);
  if (st != RDX_OK) return raise_layer_status(st, msg, "pip");
  return rdxpy_csr_out(context, res, as_arrow);
}

