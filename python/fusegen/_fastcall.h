/* What the two files of fusegen's C call path share: _fastcall.c (the
 * Caller and FunctionBase types and the call itself; its opening comment
 * says how the path works) and _fastcall_tensor.c (reading a torch tensor's
 * dtype, device, layout, data pointer and shape). */
#ifndef FUSEGEN_FASTCALL_H
#define FUSEGEN_FASTCALL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "_tensor_reader.h"
#include "fusegen.h"

/* The package supports Python 3.8; these came in 3.9 and 3.10. */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject* Py_NewRef(PyObject* o) {
  Py_INCREF(o);
  return o;
}
#endif
#if PY_VERSION_HEX < 0x03090000
#define PyObject_CallMethodNoArgs(o, name) PyObject_CallMethodObjArgs((o), (name), NULL)
#define PyObject_CallOneArg(f, arg) PyObject_CallFunctionObjArgs((f), (arg), NULL)
#define PyObject_CallNoArgs(f) PyObject_CallFunctionObjArgs((f), NULL)
#define PyObject_Vectorcall _PyObject_Vectorcall
#endif

typedef fusegen_status (*bind_fn)(const fusegen_function*, const fusegen_tensor*, int32_t, const fusegen_tensor*,
                                  int32_t, fusegen_bound_call**);
typedef fusegen_status (*launch_fn)(const fusegen_bound_call*, const void* const*, const void* const*, void*);
typedef void (*destroy_fn)(fusegen_bound_call*);

/* The seven tensor accessors the call reads, in order. get_device() alone
 * does not say that the device is a CUDA device (other devices have
 * indices too): is_cuda does. requires_grad: such a tensor, in grad mode,
 * goes to the Python path, which refuses it (fusions have no backward). */
enum { kDtype, kIsCuda, kGetDevice, kIsContiguous, kDataPtr, kShape, kRequiresGrad, kAccessors };

/* Ranks the reader's paths take (more: read the Python way), and the most
 * arguments (and outputs) the C path takes. */
enum { kMaxRank = 16, kMaxTensors = 32 };

typedef struct {
  PyObject ob_base;   /* PyObject_HEAD */
  bind_fn bind;       /* fusegen_function_bind */
  launch_fn launch;   /* fusegen_bound_call_launch */
  destroy_fn destroy; /* fusegen_bound_call_destroy */
  const fusegen_function* function;
  PyObject* names;        /* tuple of str: argument names in order */
  PyObject* out_names;    /* tuple of str: output names in order */
  PyObject* plans;        /* dict: tuple of argument shapes -> plan (has .fast) */
  long device;            /* the runtime's device index */
  PyObject* device_index; /* the same, as an int object (raw_stream's argument) */
  PyObject* tensor_type;  /* torch.Tensor */
  PyObject* float32;      /* torch.float32 */
  PyObject* raw_stream;   /* device index -> current stream handle (int) */
  PyObject* empty;        /* torch.empty */
  PyObject* empty_kwargs; /* {"dtype": float32, "device": torch.device} */
  PyObject* empty_like;   /* torch.empty_like, or None */
  PyObject* raise_status; /* status (int) -> raises the library's error */
  PyObject* grad_enabled; /* torch.is_grad_enabled, or None (never) */
  /* torch.Tensor's own descriptors of the accessors, and the types whose
   * instances are read through them (torch.Tensor and those subclasses that
   * resolve all six to the same descriptors; NULL where unused). */
  PyObject* accessors[kAccessors];
  PyObject* direct_types[2];
  /* Reads those types through torch's C++ API instead, where the package has
   * fusegen._torchread for the torch it runs with (NULL otherwise). */
  const fusegen_tensor_reader* reader;
  PyObject* reader_capsule;
  /* The plan of the last call here (NULL before one), a copy of its arrays
   * (whose shapes point into memory the plan keeps) and its bound call
   * (owned by the plan's `bound`): a call with the same argument shapes
   * takes them without a dict lookup. */
  PyObject* last_plan;
  fusegen_tensor last_args[kMaxTensors];
  fusegen_tensor last_outs[kMaxTensors];
  const fusegen_bound_call* last_bound;
  int out_is_argument;      /* an argument is named "out": f(out=) passes it */
  unsigned long long taken; /* calls this path ran (tests read it) */
} Caller;

/* A tensor's shape as the call reads it (the ranks the call path takes). */
typedef struct {
  int rank;
  int64_t sizes[kMaxRank];
} Shape;

/* _fastcall_tensor.c */

/* Interns the accessors' names (the module's init): 0, or -1 with an error. */
int fastcall_intern_accessors(void);
/* Looks up torch.Tensor's own accessors for `self` and the types it reads
 * through them: 0, or -1 with an error (the comment at its definition). */
int fastcall_find_accessors(Caller* self, PyObject* tensor_type, PyObject* subclass);
/* t's accessor `which` (kDtype...): a new reference, or NULL with an error. */
PyObject* fastcall_read_accessor(Caller* self, PyObject* t, int which);
/* Whether `t` is a float32, contiguous torch tensor on the caller's device
 * (*shape, *data filled): 1; 0 where not (no error); -1 with an error. */
int fastcall_usable_tensor(Caller* self, PyObject* t, Shape* shape, void** data);

#endif
