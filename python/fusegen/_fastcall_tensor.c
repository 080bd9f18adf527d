/* Reading a torch tensor for fusegen's C call path (_fastcall.c): its
 * dtype, device, layout, grad state, data pointer and shape, through torch's
 * C++ API where the package has fusegen._torchread, else through torch's
 * Python-level accessors (torch.Tensor's own descriptors, looked up once,
 * for torch.Tensor and nn.Parameter; by name for other subclasses). */
#include "_fastcall.h"

static const char* const accessor_names[kAccessors] = {"dtype",    "is_cuda", "get_device",   "is_contiguous",
                                                       "data_ptr", "shape",   "requires_grad"};
/* Attributes (data descriptors, read through tp_descr_get) or methods
 * without arguments (called through vectorcall). */
static const int accessor_is_method[kAccessors] = {0, 0, 1, 1, 1, 0, 0};
static PyObject* accessor_strings[kAccessors]; /* the names, interned */

int fastcall_intern_accessors(void) {
  for (int k = 0; k < kAccessors; ++k)
    if (!(accessor_strings[k] = PyUnicode_InternFromString(accessor_names[k])))
      return -1;
  return 0;
}

/* Whether t's type is read directly (torch.Tensor's own descriptors, or the reader). */
static int is_direct(const Caller* self, PyObject* t) {
  PyObject* type = (PyObject*)Py_TYPE(t);
  return type == self->direct_types[0] || type == self->direct_types[1];
}

/* t's accessor `which`: its value (a new reference) or NULL with an error. */
PyObject* fastcall_read_accessor(Caller* self, PyObject* t, int which) {
  if (is_direct(self, t)) {
    PyObject* descriptor = self->accessors[which];
    if (accessor_is_method[which])
      return PyObject_Vectorcall(descriptor, &t, 1, NULL);
    return Py_TYPE(descriptor)->tp_descr_get(descriptor, t, (PyObject*)Py_TYPE(t));
  }
  if (accessor_is_method[which])
    return PyObject_CallMethodNoArgs(t, accessor_strings[which]);
  return PyObject_GetAttr(t, accessor_strings[which]);
}

/* Whether t's accessor `which` gives the object `expected` (float32, True):
 * 1 or 0, or -1 with an error. */
static int accessor_is(Caller* self, PyObject* t, int which, PyObject* expected) {
  PyObject* value = fastcall_read_accessor(self, t, which);
  if (!value)
    return -1;
  const int same = value == expected;
  Py_DECREF(value);
  return same;
}

/* A shape object (torch.Size, a tuple of ints) as a Shape: 1, 0 where it is
 * not one of at most kMaxRank dims (no Python error set), -1 with an error. */
static int shape_of(PyObject* object, Shape* shape) {
  if (!PyTuple_Check(object) || PyTuple_GET_SIZE(object) > kMaxRank)
    return 0;
  shape->rank = (int)PyTuple_GET_SIZE(object);
  for (int d = 0; d < shape->rank; ++d) {
    PyObject* size = PyTuple_GET_ITEM(object, d);
    if (!PyLong_Check(size))
      return 0;
    shape->sizes[d] = PyLong_AsLongLong(size);
    if (shape->sizes[d] == -1 && PyErr_Occurred())
      return -1;
  }
  return 1;
}

/* 1 where `t` does not require grad or grad mode is off; 0 where autograd
 * would want a graph through it (the Python path refuses the call); -1 with
 * an error. A stand-in tensor type without requires_grad never requires it. */
static int needs_no_grad(Caller* self, PyObject* t) {
  PyObject* requires = fastcall_read_accessor(self, t, kRequiresGrad);
  if (!requires) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
      return -1;
    PyErr_Clear();
    return 1;
  }
  const int wants = PyObject_IsTrue(requires);
  Py_DECREF(requires);
  if (wants <= 0 || self->grad_enabled == Py_None)
    return wants < 0 ? -1 : 1;
  PyObject* enabled = PyObject_CallNoArgs(self->grad_enabled);
  if (!enabled)
    return -1;
  const int on = PyObject_IsTrue(enabled);
  Py_DECREF(enabled);
  return on < 0 ? -1 : !on;
}

/* Whether `t` is a float32, contiguous torch tensor on the caller's device;
 * on success *shape is its shape and *data its data pointer. 0: it is not
 * (no Python error set); -1: a Python error is set. */
int fastcall_usable_tensor(Caller* self, PyObject* t, Shape* shape, void** data) {
  if (!PyObject_TypeCheck(t, (PyTypeObject*)self->tensor_type))
    return 0;
  if (self->reader && is_direct(self, t)) {
    if (self->reader->read(t, self->device, data, shape->sizes, kMaxRank, &shape->rank))
      return 1;
    /* Not the common case: the accessors below find out why. */
  }
  int usable = accessor_is(self, t, kDtype, self->float32);
  if (usable > 0)
    usable = accessor_is(self, t, kIsCuda, Py_True);
  if (usable <= 0)
    return usable;
  PyObject* device = fastcall_read_accessor(self, t, kGetDevice);
  if (!device)
    return -1;
  long index = PyLong_AsLong(device);
  Py_DECREF(device);
  if (index == -1 && PyErr_Occurred())
    return -1;
  if (index != self->device)
    return 0;
  usable = accessor_is(self, t, kIsContiguous, Py_True);
  if (usable <= 0)
    return usable;
  usable = needs_no_grad(self, t);
  if (usable <= 0)
    return usable;
  PyObject* pointer = fastcall_read_accessor(self, t, kDataPtr);
  if (!pointer)
    return -1;
  *data = PyLong_AsVoidPtr(pointer);
  Py_DECREF(pointer);
  if (PyErr_Occurred())
    return -1;
  PyObject* sizes = fastcall_read_accessor(self, t, kShape);
  if (!sizes)
    return -1;
  usable = shape_of(sizes, shape);
  Py_DECREF(sizes);
  return usable;
}

/* Fills self->accessors from tensor_type and self->direct_types with
 * tensor_type and, where it resolves every accessor to the same descriptor,
 * `subclass` (None for none). Where a descriptor is not what the direct path
 * needs (an attribute that is a data descriptor, so that no instance can
 * shadow it; a method of a C type) no type is read directly: the calls then
 * go by name, as Python's own lookup would. 0, or -1 with an error set. */
int fastcall_find_accessors(Caller* self, PyObject* tensor_type, PyObject* subclass) {
  int usable = 1;
  for (int k = 0; k < kAccessors; ++k) {
    PyObject* descriptor = PyObject_GetAttr(tensor_type, accessor_strings[k]);
    if (!descriptor) { /* an attribute of the instances only: read by name */
      if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
      PyErr_Clear();
      usable = 0;
      continue;
    }
    PyTypeObject* kind = Py_TYPE(descriptor);
    usable &= accessor_is_method[k] ? PyObject_TypeCheck(descriptor, &PyMethodDescr_Type)
                                    : kind->tp_descr_get != NULL && kind->tp_descr_set != NULL;
    Py_XSETREF(self->accessors[k], descriptor);
  }
  Py_CLEAR(self->direct_types[0]);
  Py_CLEAR(self->direct_types[1]);
  if (usable)
    self->direct_types[0] = Py_NewRef(tensor_type);
  if (!usable || subclass == Py_None)
    return 0;
  if (!PyType_Check(subclass) || !PyType_IsSubtype((PyTypeObject*)subclass, (PyTypeObject*)tensor_type)) {
    PyErr_SetString(PyExc_TypeError, "subclass must be a subclass of tensor_type, or None");
    return -1;
  }
  for (int k = 0; k < kAccessors; ++k) {
    PyObject* found = PyObject_GetAttr(subclass, accessor_strings[k]);
    if (!found) {
      if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
      PyErr_Clear();
      return 0;
    }
    const int same = found == self->accessors[k];
    Py_DECREF(found);
    if (!same)
      return 0;
  }
  self->direct_types[1] = Py_NewRef(subclass);
  return 0;
}
