/* The torch branch of fusegen.Function's call in C (bench/NOTES.md v18,
 * v24, v26: the call path's Python and the ctypes conversion were 4-5 us of
 * a 9-12 us call).
 *
 * FunctionBase is the base class of fusegen.Function: f(**keywords) is its
 * tp_call, which hands the common case to the Function's Caller with no
 * Python frame. A Caller belongs to one Function; run_call either runs the
 * whole call or returns NotImplemented, and then the Python path runs it
 * instead (and words every error): anything that is not the common case
 * declines here. The common case: every argument and output a torch.Tensor
 * (or subclass) of float32, on the function's device, contiguous, whose
 * shapes have a plan the Python path built before.
 *
 * Each plan (one set of argument shapes) gets a bound call of the library
 * (fusegen_function_bind with the plan's names and shapes, kept in
 * plan.bound), and a call is fusegen_bound_call_launch with the data
 * pointers: the library does not match names and shapes again. The Caller
 * keeps the last plan it used, so a call with the shapes of the one before
 * finds its plan without building a key or looking in the dict (see
 * run_call).
 * Errors of the call itself (status != 0) go to the Function's own raiser,
 * so they read exactly as on the Python path.
 *
 * No torch headers here. _fastcall_tensor.c reads the tensors: a
 * torch.Tensor or nn.Parameter through torch's C++ API where the package
 * has fusegen._torchread for the torch it runs with (_tensor_reader.h);
 * otherwise, and for other subclasses, through
 * torch's Python-level accessors: for those two types straight through
 * torch.Tensor's own descriptors, looked up once, and for other subclasses
 * by name (an override is then what the call sees).
 */
#include "_fastcall.h"

/* The package supports Python 3.8; this came in 3.10. */
#if PY_VERSION_HEX < 0x030A0000
static int PyModule_AddObjectRef(PyObject* module, const char* name, PyObject* value) {
  Py_INCREF(value);
  if (PyModule_AddObject(module, name, value) < 0) {
    Py_DECREF(value);
    return -1;
  }
  return 0;
}
#endif

static PyObject* s_fast;
static PyObject* s_bound;
static PyObject* s_out;
static PyObject* s_python_call;

/* Whether the plan's tensor `planned` has `shape`. */
static int has_shape(const fusegen_tensor* planned, const Shape* shape) {
  return planned->rank == shape->rank &&
         (shape->rank == 0 || memcmp(planned->shape, shape->sizes, sizeof(int64_t) * (size_t)shape->rank) == 0);
}

/* The key of `plans` for these argument shapes: a tuple of tuples of ints
 * (equal to the tuple of torch.Size the Python path stores, and hashed alike). */
static PyObject* plan_key(const Shape* shapes, Py_ssize_t n) {
  PyObject* key = PyTuple_New(n);
  if (!key)
    return NULL;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* shape = PyTuple_New(shapes[i].rank);
    if (!shape) {
      Py_DECREF(key);
      return NULL;
    }
    PyTuple_SET_ITEM(key, i, shape); /* steals the reference */
    for (int d = 0; d < shapes[i].rank; ++d) {
      PyObject* size = PyLong_FromLongLong(shapes[i].sizes[d]);
      if (!size) {
        Py_DECREF(key);
        return NULL;
      }
      PyTuple_SET_ITEM(shape, d, size);
    }
  }
  return key;
}

/* The plan's (argument array address, output array address, output shapes,
 * per output the argument of its shape or -1), borrowed from plan.fast
 * (*fast, a new reference), or 0 when it is not usable. */
static int plan_arrays(PyObject* plan, fusegen_tensor** args, fusegen_tensor** outs, PyObject** out_shapes,
                       PyObject** like, PyObject** fast) {
  *fast = PyObject_GetAttr(plan, s_fast);
  if (!*fast)
    return -1;
  if (!PyTuple_Check(*fast) || PyTuple_GET_SIZE(*fast) != 4)
    return 0;
  *args = (fusegen_tensor*)PyLong_AsVoidPtr(PyTuple_GET_ITEM(*fast, 0));
  *outs = (fusegen_tensor*)PyLong_AsVoidPtr(PyTuple_GET_ITEM(*fast, 1));
  *out_shapes = PyTuple_GET_ITEM(*fast, 2);
  *like = PyTuple_GET_ITEM(*fast, 3);
  if (PyErr_Occurred())
    return -1;
  return *args && *outs && PyTuple_Check(*out_shapes) && PyTuple_Check(*like) &&
                 PyTuple_GET_SIZE(*like) == PyTuple_GET_SIZE(*out_shapes)
             ? 1
             : 0;
}

static const char kBoundCapsule[] = "fusegen.bound_call";

static void destroy_bound(PyObject* capsule) {
  destroy_fn destroy = (destroy_fn)PyCapsule_GetContext(capsule);
  fusegen_bound_call* bound = PyCapsule_GetPointer(capsule, kBoundCapsule);
  if (destroy && bound)
    destroy(bound);
}

/* Raises the library's error for `status` through the Function's raiser. */
static void raise_status(Caller* self, fusegen_status status) {
  PyObject* raised = PyObject_CallFunction(self->raise_status, "i", (int)status);
  Py_XDECREF(raised); /* it raises; NULL with the error set */
  if (raised)
    PyErr_SetString(PyExc_RuntimeError, "fusegen: the call failed and its error could not be read");
}

/* The plan's bound call: plan.bound, or bound now from the plan's arrays
 * (names and shapes) and kept there. NULL with an error set (the library's
 * own where binding failed: a kernel that could not be loaded). */
static const fusegen_bound_call* bound_call_of(Caller* self, PyObject* plan, const fusegen_tensor* args,
                                               Py_ssize_t n_args, const fusegen_tensor* outs, Py_ssize_t n_outs) {
  PyObject* capsule = PyObject_GetAttr(plan, s_bound);
  if (!capsule)
    return NULL;
  if (capsule == Py_None) {
    Py_DECREF(capsule);
    fusegen_bound_call* bound = NULL;
    const fusegen_status status = self->bind(self->function, args, (int32_t)n_args, outs, (int32_t)n_outs, &bound);
    if (status != FUSEGEN_OK) {
      raise_status(self, status);
      return NULL;
    }
    capsule = PyCapsule_New(bound, kBoundCapsule, destroy_bound);
    if (!capsule || PyCapsule_SetContext(capsule, (void*)self->destroy) < 0) {
      if (capsule)
        PyCapsule_SetDestructor(capsule, NULL);
      Py_XDECREF(capsule);
      self->destroy(bound);
      return NULL;
    }
    if (PyObject_SetAttr(plan, s_bound, capsule) < 0) {
      Py_DECREF(capsule);
      return NULL;
    }
  }
  const fusegen_bound_call* bound = PyCapsule_GetPointer(capsule, kBoundCapsule);
  Py_DECREF(capsule); /* the plan holds it */
  return bound;
}

/* Makes `plan` the Caller's last plan: a copy of its arrays (whose shapes
 * point into memory the plan keeps) and its bound call. 1, 0 where the plan
 * is not usable, -1 with an error set. */
static int remember_plan(Caller* self, PyObject* plan, Py_ssize_t n_args, Py_ssize_t n_outs) {
  fusegen_tensor* args;
  fusegen_tensor* outs;
  PyObject *out_shapes, *like, *fast;
  const int arrays = plan_arrays(plan, &args, &outs, &out_shapes, &like, &fast);
  int usable = arrays > 0 && PyTuple_GET_SIZE(out_shapes) == n_outs ? 1 : arrays < 0 ? -1 : 0;
  const fusegen_bound_call* bound = usable > 0 ? bound_call_of(self, plan, args, n_args, outs, n_outs) : NULL;
  if (usable > 0 && !bound)
    usable = -1;
  if (usable > 0) {
    memcpy(self->last_args, args, sizeof(fusegen_tensor) * (size_t)n_args);
    memcpy(self->last_outs, outs, sizeof(fusegen_tensor) * (size_t)n_outs);
    self->last_bound = bound;
    Py_XSETREF(self->last_plan, Py_NewRef(plan));
  }
  Py_XDECREF(fast);
  return usable;
}

/* Reads the outputs given with out= (usable tensors) into results, data[]
 * and shapes[] (compared with the plan's once it is known). 1: done; 0: not
 * the common case; -1: error. */
static int given_outputs(Caller* self, PyObject* out, PyObject* results, void** data, Shape* shapes) {
  for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(results); ++j) {
    PyObject* t = PyDict_GetItemWithError(out, PyTuple_GET_ITEM(self->out_names, j));
    if (!t)
      return PyErr_Occurred() ? -1 : 0;
    PyTuple_SET_ITEM(results, j, Py_NewRef(t));
    const int usable = fastcall_usable_tensor(self, t, &shapes[j], &data[j]);
    if (usable <= 0)
      return usable;
  }
  return 1;
}

/* Allocates the outputs of the plan's shapes (`outs`) into results and
 * data[]: through torch's C++ API where the reader can; else like the
 * argument of the same shape where there is one (a plain float32 tensor, so
 * empty_like makes one as asked), else with torch.empty. 0 on success, -1
 * with an error set. */
static int allocate_outputs(Caller* self, PyObject* plan, const fusegen_tensor* outs, PyObject* const* inputs,
                            Py_ssize_t n_args, PyObject* results, void** data) {
  PyObject* fast = NULL; /* plan.fast, read where torch's Python functions allocate */
  fusegen_tensor *plan_args, *plan_outs;
  PyObject *out_shapes = NULL, *like = NULL;
  int status = -1;
  for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(results); ++j) {
    PyObject* made = self->reader ? self->reader->empty(outs[j].shape, outs[j].rank, self->device, &data[j]) : NULL;
    if (made) {
      PyTuple_SET_ITEM(results, j, made); /* steals the reference */
      continue;
    }
    if (!fast && plan_arrays(plan, &plan_args, &plan_outs, &out_shapes, &like, &fast) <= 0) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "fusegen: a call plan lost its output shapes");
      goto done;
    }
    const long same_shape = self->empty_like == Py_None ? -1 : PyLong_AsLong(PyTuple_GET_ITEM(like, j));
    if (same_shape == -1 && PyErr_Occurred())
      goto done;
    PyObject* t;
    if (same_shape >= 0 && same_shape < n_args && Py_TYPE(inputs[same_shape]) == (PyTypeObject*)self->tensor_type) {
      t = PyObject_CallOneArg(self->empty_like, inputs[same_shape]);
    } else {
      PyObject* empty_args = PyTuple_Pack(1, PyTuple_GET_ITEM(out_shapes, j));
      if (!empty_args)
        goto done;
      t = PyObject_Call(self->empty, empty_args, self->empty_kwargs);
      Py_DECREF(empty_args);
    }
    if (!t)
      goto done;
    PyTuple_SET_ITEM(results, j, t); /* steals the reference */
    PyObject* pointer = fastcall_read_accessor(self, t, kDataPtr);
    if (!pointer)
      goto done;
    data[j] = PyLong_AsVoidPtr(pointer);
    Py_DECREF(pointer);
    if (PyErr_Occurred())
      goto done;
  }
  status = 0;
done:
  Py_XDECREF(fast);
  return status;
}

/* The call with `tensors` (a dict holding at least the argument names;
 * the callers check its size) and `out` (None or a dict), or NotImplemented
 * for the Python path.
 *
 * The plan comes from the Caller's last plan when the shapes are the same
 * (no key built, no dict lookup), else from `plans`, and then becomes the
 * last one. The call passes arrays of its own, copied from the plan's, with
 * its data pointers: the plan's arrays are never written here, so the
 * Python path (which takes a plan out of the dict while it writes it) and
 * calls in other threads (allocation may let one run) share nothing. */
static PyObject* run_call(Caller* self, PyObject* tensors, PyObject* out) {
  const Py_ssize_t n_args = PyTuple_GET_SIZE(self->names);
  const Py_ssize_t n_outs = PyTuple_GET_SIZE(self->out_names);
  if (n_args > kMaxTensors || n_outs > kMaxTensors)
    Py_RETURN_NOTIMPLEMENTED;
  if (out != Py_None && (!PyDict_Check(out) || PyDict_GET_SIZE(out) != n_outs))
    Py_RETURN_NOTIMPLEMENTED;

  PyObject* result = NULL;
  PyObject* plan = NULL;
  PyObject* results = NULL;
  void* pointers[kMaxTensors];
  void* out_pointers[kMaxTensors];
  Shape shapes[kMaxTensors];
  Shape out_given_shapes[kMaxTensors];
  PyObject* inputs[kMaxTensors]; /* borrowed from `tensors` */
  fusegen_tensor outs[kMaxTensors];
  for (Py_ssize_t i = 0; i < n_args; ++i) {
    PyObject* t = PyDict_GetItemWithError(tensors, PyTuple_GET_ITEM(self->names, i));
    if (!t) {
      if (!PyErr_Occurred())
        result = Py_NewRef(Py_NotImplemented);
      goto done;
    }
    inputs[i] = t;
    const int usable = fastcall_usable_tensor(self, t, &shapes[i], &pointers[i]);
    if (usable <= 0) {
      if (usable == 0)
        result = Py_NewRef(Py_NotImplemented);
      goto done;
    }
  }
  results = PyTuple_New(n_outs);
  if (!results)
    goto done;
  if (out != Py_None) {
    const int given = given_outputs(self, out, results, out_pointers, out_given_shapes);
    if (given <= 0) {
      if (given == 0)
        result = Py_NewRef(Py_NotImplemented);
      goto done;
    }
  }
  PyObject* stream_handle = PyObject_CallOneArg(self->raw_stream, self->device_index);
  if (!stream_handle)
    goto done;
  void* stream = PyLong_AsVoidPtr(stream_handle);
  Py_DECREF(stream_handle);
  if (PyErr_Occurred())
    goto done;

  int same = self->last_plan != NULL;
  for (Py_ssize_t i = 0; same && i < n_args; ++i)
    same = has_shape(&self->last_args[i], &shapes[i]);
  if (!same) {
    PyObject* key = plan_key(shapes, n_args);
    if (!key)
      goto done;
    PyObject* found = PyDict_GetItemWithError(self->plans, key);
    Py_DECREF(key);
    if (!found) {
      if (!PyErr_Occurred())
        result = Py_NewRef(Py_NotImplemented); /* the Python path builds it */
      goto done;
    }
    const int remembered = remember_plan(self, found, n_args, n_outs);
    if (remembered <= 0) {
      if (remembered == 0)
        result = Py_NewRef(Py_NotImplemented);
      goto done;
    }
  }
  plan = Py_NewRef(self->last_plan); /* keeps the bound call and what the arrays point to */
  const fusegen_bound_call* bound = self->last_bound;
  memcpy(outs, self->last_outs, sizeof(fusegen_tensor) * (size_t)n_outs);
  if (out == Py_None) {
    if (allocate_outputs(self, plan, outs, inputs, n_args, results, out_pointers) < 0)
      goto done;
  } else {
    for (Py_ssize_t j = 0; j < n_outs; ++j)
      if (!has_shape(&outs[j], &out_given_shapes[j])) {
        result = Py_NewRef(Py_NotImplemented); /* the Python path words the mismatch */
        goto done;
      }
  }

  const fusegen_status status =
      self->launch(bound, (const void* const*)pointers, (const void* const*)out_pointers, stream);
  if (status != FUSEGEN_OK) {
    raise_status(self, status);
    goto done;
  }
  ++self->taken;
  result = n_outs == 1 ? Py_NewRef(PyTuple_GET_ITEM(results, 0)) : Py_NewRef(results);

done:
  Py_XDECREF(plan);
  Py_XDECREF(results);
  return result;
}

/* run(tensors, out): Function.call's entry (a dict of exactly the
 * arguments, and out= as given). */
static PyObject* caller_run(Caller* self, PyObject* const* call_args, Py_ssize_t n_call_args) {
  if (n_call_args != 2) {
    PyErr_SetString(PyExc_TypeError, "Caller.run takes (tensors, out)");
    return NULL;
  }
  PyObject* tensors = call_args[0];
  if (!PyDict_Check(tensors) || PyDict_GET_SIZE(tensors) != PyTuple_GET_SIZE(self->names))
    Py_RETURN_NOTIMPLEMENTED;
  return run_call(self, tensors, call_args[1]);
}

/* f(**keywords): the keywords hold the arguments and perhaps out= (which is
 * an argument like any other where the fusion has one of that name). */
static PyObject* run_keywords(Caller* self, PyObject* keywords) {
  PyObject* out = NULL;
  if (!self->out_is_argument) {
    out = PyDict_GetItemWithError(keywords, s_out);
    if (!out && PyErr_Occurred())
      return NULL;
  }
  if (PyDict_GET_SIZE(keywords) != PyTuple_GET_SIZE(self->names) + (out ? 1 : 0))
    Py_RETURN_NOTIMPLEMENTED;
  out = Py_NewRef(out ? out : Py_None); /* held, as a caller holds run's arguments */
  PyObject* result = run_call(self, keywords, out);
  Py_DECREF(out);
  return result;
}

static int caller_init(Caller* self, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"bound_calls",  "function", "names",      "out_names", "plans",      "device",
                             "tensor_type",  "float32",  "raw_stream", "empty",     "empty_like", "torch_device",
                             "raise_status", "subclass", "reader",     "grad_enabled", NULL};
  PyObject *bound_calls, *function, *names, *out_names, *plans, *tensor_type, *float32, *raw_stream, *empty;
  PyObject *empty_like, *torch_device, *raise_status;
  PyObject* subclass = Py_None;
  PyObject* reader = Py_None;
  PyObject* grad_enabled = Py_None;
  long device;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OO!O!O!lO!OOOOOO|OOO", keywords, &PyTuple_Type, &bound_calls,
                                   &function, &PyTuple_Type, &names, &PyTuple_Type, &out_names, &PyDict_Type, &plans,
                                   &device, &PyType_Type, &tensor_type, &float32, &raw_stream, &empty, &empty_like,
                                   &torch_device, &raise_status, &subclass, &reader, &grad_enabled))
    return -1;
  if (fastcall_find_accessors(self, tensor_type, subclass) < 0)
    return -1;
  self->reader = NULL;
  Py_CLEAR(self->reader_capsule);
  if (reader != Py_None) {
    const fusegen_tensor_reader* found = PyCapsule_GetPointer(reader, FUSEGEN_TENSOR_READER_CAPSULE);
    if (!found)
      return -1;
    if (found->version != FUSEGEN_TENSOR_READER_VERSION) {
      PyErr_Format(PyExc_ValueError, "reader: version %d, but this call path takes version %d", found->version,
                   FUSEGEN_TENSOR_READER_VERSION);
      return -1;
    }
    self->reader = found;
    self->reader_capsule = Py_NewRef(reader);
  }
  if (PyTuple_GET_SIZE(bound_calls) != 3) {
    PyErr_SetString(PyExc_ValueError, "bound_calls: the addresses of fusegen_function_bind, "
                                      "fusegen_bound_call_launch and fusegen_bound_call_destroy");
    return -1;
  }
  self->bind = (bind_fn)PyLong_AsVoidPtr(PyTuple_GET_ITEM(bound_calls, 0));
  self->launch = (launch_fn)PyLong_AsVoidPtr(PyTuple_GET_ITEM(bound_calls, 1));
  self->destroy = (destroy_fn)PyLong_AsVoidPtr(PyTuple_GET_ITEM(bound_calls, 2));
  self->function = (const fusegen_function*)PyLong_AsVoidPtr(function);
  if (PyErr_Occurred())
    return -1;
  if (!self->bind || !self->launch || !self->destroy || !self->function) {
    PyErr_SetString(PyExc_ValueError, "bound_calls and function must be non-null addresses");
    return -1;
  }
  PyObject* empty_kwargs = Py_BuildValue("{sOsO}", "dtype", float32, "device", torch_device);
  if (!empty_kwargs)
    return -1;
  Py_XSETREF(self->empty_kwargs, empty_kwargs);
  Py_XSETREF(self->names, Py_NewRef(names));
  Py_XSETREF(self->out_names, Py_NewRef(out_names));
  Py_XSETREF(self->plans, Py_NewRef(plans));
  Py_XSETREF(self->tensor_type, Py_NewRef(tensor_type));
  Py_XSETREF(self->float32, Py_NewRef(float32));
  Py_XSETREF(self->raw_stream, Py_NewRef(raw_stream));
  Py_XSETREF(self->empty, Py_NewRef(empty));
  Py_XSETREF(self->empty_like, Py_NewRef(empty_like));
  Py_XSETREF(self->raise_status, Py_NewRef(raise_status));
  Py_XSETREF(self->grad_enabled, Py_NewRef(grad_enabled));
  PyObject* device_index = PyLong_FromLong(device);
  if (!device_index)
    return -1;
  Py_XSETREF(self->device_index, device_index);
  self->device = device;
  Py_CLEAR(self->last_plan); /* of the plans before */
  self->last_bound = NULL;
  self->out_is_argument = 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) {
    const int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(names, i), s_out, Py_EQ);
    if (same < 0)
      return -1;
    self->out_is_argument |= same;
  }
  return 0;
}

static int caller_traverse(Caller* self, visitproc visit, void* arg) {
  Py_VISIT(self->names);
  Py_VISIT(self->out_names);
  Py_VISIT(self->plans);
  Py_VISIT(self->tensor_type);
  Py_VISIT(self->float32);
  Py_VISIT(self->raw_stream);
  Py_VISIT(self->empty);
  Py_VISIT(self->empty_kwargs);
  Py_VISIT(self->empty_like);
  Py_VISIT(self->raise_status);
  Py_VISIT(self->grad_enabled);
  Py_VISIT(self->device_index);
  for (int k = 0; k < kAccessors; ++k)
    Py_VISIT(self->accessors[k]);
  Py_VISIT(self->direct_types[0]);
  Py_VISIT(self->direct_types[1]);
  Py_VISIT(self->reader_capsule);
  Py_VISIT(self->last_plan);
  return 0;
}

static int caller_clear(Caller* self) {
  Py_CLEAR(self->names);
  Py_CLEAR(self->out_names);
  Py_CLEAR(self->plans);
  Py_CLEAR(self->tensor_type);
  Py_CLEAR(self->float32);
  Py_CLEAR(self->raw_stream);
  Py_CLEAR(self->empty);
  Py_CLEAR(self->empty_kwargs);
  Py_CLEAR(self->empty_like);
  Py_CLEAR(self->raise_status);
  Py_CLEAR(self->grad_enabled);
  Py_CLEAR(self->device_index);
  for (int k = 0; k < kAccessors; ++k)
    Py_CLEAR(self->accessors[k]);
  Py_CLEAR(self->direct_types[0]);
  Py_CLEAR(self->direct_types[1]);
  self->reader = NULL;
  Py_CLEAR(self->reader_capsule);
  Py_CLEAR(self->last_plan);
  self->last_bound = NULL;
  return 0;
}

static void caller_dealloc(Caller* self) {
  PyObject_GC_UnTrack(self);
  caller_clear(self);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* caller_taken(Caller* self, void* closure) {
  (void)closure;
  return PyLong_FromUnsignedLongLong(self->taken);
}

static PyMethodDef caller_methods[] = {
    {"run", (PyCFunction)(void (*)(void))caller_run, METH_FASTCALL,
     "run(tensors, out): the call's result, or NotImplemented where the Python path must take it"},
    {NULL, NULL, 0, NULL},
};

static PyObject* caller_direct_types(Caller* self, void* closure) {
  (void)closure;
  int n = 0;
  PyObject* types[2];
  for (int i = 0; i < 2; ++i)
    if (self->direct_types[i])
      types[n++] = self->direct_types[i];
  return n == 2 ? PyTuple_Pack(2, types[0], types[1]) : n == 1 ? PyTuple_Pack(1, types[0]) : PyTuple_New(0);
}

static PyObject* caller_reads_with_torch(Caller* self, void* closure) {
  (void)closure;
  return PyBool_FromLong(self->reader != NULL);
}

static PyGetSetDef caller_getset[] = {
    {"reads_with_torch", (getter)caller_reads_with_torch, NULL,
     "whether those types are read through torch's C++ API (fusegen._torchread)", NULL},
    {"taken", (getter)caller_taken, NULL, "calls this path ran", NULL},
    {"direct_types", (getter)caller_direct_types, NULL,
     "the tensor types read through torch.Tensor's own descriptors (the rest are read by name)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* PyVarObject_HEAD_INIT ends in a comma that clang-format cannot see. */
// clang-format off
static PyTypeObject CallerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "fusegen._fastcall.Caller",
    .tp_basicsize = sizeof(Caller),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The torch branch of one Function's call path (see the module's source).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)caller_init,
    .tp_traverse = (traverseproc)caller_traverse,
    .tp_clear = (inquiry)caller_clear,
    .tp_dealloc = (destructor)caller_dealloc,
    .tp_methods = caller_methods,
    .tp_getset = caller_getset,
};
// clang-format on

/* FunctionBase: the base of fusegen.Function, whose call f(**keywords) is
 * this type's tp_call, so that the common case runs without a Python frame:
 * with a Caller set (Function._caller, once torch is loaded) and keywords
 * only, its run_keywords; whatever that declines goes to the Function's
 * _python_call(*args, **keywords), which words every error. */
typedef struct {
  PyObject ob_base; /* PyObject_HEAD */
  PyObject* caller; /* a Caller, or NULL */
} FunctionBase;

static PyObject* function_base_call(FunctionBase* self, PyObject* args, PyObject* keywords) {
  if (self->caller && keywords && PyTuple_GET_SIZE(args) == 0) {
    PyObject* caller = Py_NewRef(self->caller); /* the call may replace it */
    PyObject* result = run_keywords((Caller*)caller, keywords);
    Py_DECREF(caller);
    if (result != Py_NotImplemented)
      return result; /* or NULL: its error */
    Py_DECREF(result);
  }
  PyObject* python_call = PyObject_GetAttr((PyObject*)self, s_python_call);
  if (!python_call)
    return NULL;
  PyObject* result = PyObject_Call(python_call, args, keywords);
  Py_DECREF(python_call);
  return result;
}

static PyObject* function_base_get_caller(FunctionBase* self, void* closure) {
  (void)closure;
  return Py_NewRef(self->caller ? self->caller : Py_None);
}

static int function_base_set_caller(FunctionBase* self, PyObject* value, void* closure) {
  (void)closure;
  if (value && value != Py_None && !PyObject_TypeCheck(value, &CallerType)) {
    PyErr_SetString(PyExc_TypeError, "_caller must be a Caller or None");
    return -1;
  }
  Py_XSETREF(self->caller, value && value != Py_None ? Py_NewRef(value) : NULL);
  return 0;
}

static int function_base_traverse(FunctionBase* self, visitproc visit, void* arg) {
  Py_VISIT(self->caller);
  return 0;
}

static int function_base_clear(FunctionBase* self) {
  Py_CLEAR(self->caller);
  return 0;
}

static void function_base_dealloc(FunctionBase* self) {
  PyObject_GC_UnTrack(self);
  function_base_clear(self);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyGetSetDef function_base_getset[] = {
    {"_caller", (getter)function_base_get_caller, (setter)function_base_set_caller,
     "the C call path of this function (a Caller), or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

// clang-format off
static PyTypeObject FunctionBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "fusegen._fastcall.FunctionBase",
    .tp_basicsize = sizeof(FunctionBase),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The base of fusegen.Function: its call in C (see the module's source).",
    .tp_new = PyType_GenericNew,
    .tp_call = (ternaryfunc)function_base_call,
    .tp_traverse = (traverseproc)function_base_traverse,
    .tp_clear = (inquiry)function_base_clear,
    .tp_dealloc = (destructor)function_base_dealloc,
    .tp_getset = function_base_getset,
};
// clang-format on

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_fastcall",
    .m_doc = "fusegen's call path for torch tensors in C.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__fastcall(void) {
  if (PyType_Ready(&CallerType) < 0 || PyType_Ready(&FunctionBaseType) < 0)
    return NULL;
  if (fastcall_intern_accessors() < 0)
    return NULL;
  s_fast = PyUnicode_InternFromString("fast");
  s_bound = PyUnicode_InternFromString("bound");
  s_out = PyUnicode_InternFromString("out");
  s_python_call = PyUnicode_InternFromString("_python_call");
  if (!s_fast || !s_bound || !s_out || !s_python_call)
    return NULL;
  PyObject* m = PyModule_Create(&module);
  if (!m)
    return NULL;
  if (PyModule_AddObjectRef(m, "Caller", (PyObject*)&CallerType) < 0 ||
      PyModule_AddObjectRef(m, "FunctionBase", (PyObject*)&FunctionBaseType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
