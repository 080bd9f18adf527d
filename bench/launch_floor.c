/* The least a Python call that launches one kernel can cost: a C function
 * called from Python with one argument (the stream) that launches an empty
 * kernel through the driver API, nothing else (bench/NOTES.md, "The launch
 * floor"). Built and loaded by launch_floor.py; no CUDA headers, libcuda.so.1
 * opened at load time.
 *
 *   init() -> None              loads the kernel into the current context
 *   launch(stream: int) -> None one cuLaunchKernel of it, 1 block of 32
 *   call(entry, *arguments) -> status
 *                               a C call of the library's entry point at
 *                               address `entry` with these arguments (ints
 *                               passed as pointers and int32s where the
 *                               entry takes them): fusegen_function_call
 *                               (6 arguments) or fusegen_bound_call_launch
 *                               (4), the library's part of a call with no
 *                               Python call path around it
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdint.h>

typedef int CUresult;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;

typedef CUresult (*ctx_get_current_fn)(CUcontext*);
typedef CUresult (*module_load_data_fn)(CUmodule*, const void*);
typedef CUresult (*module_get_function_fn)(CUfunction*, CUmodule, const char*);
typedef CUresult (*launch_kernel_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     CUstream, void**, void**);

/* One 320-byte parameter, the size of fusegen's kernels' argument. */
static const char kPtx[] = ".version 7.8\n"
                           ".target sm_90\n"
                           ".address_size 64\n"
                           ".visible .entry empty(.param .align 8 .b8 args[320])\n"
                           "{\n"
                           "  ret;\n"
                           "}\n";

static launch_kernel_fn launch_kernel;
static CUfunction kernel;
static unsigned char args[320];

static PyObject* init(PyObject* module, PyObject* unused) {
  (void)module;
  (void)unused;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return PyErr_Format(PyExc_RuntimeError, "launch_floor: cannot open libcuda.so.1: %s", dlerror());
  ctx_get_current_fn ctx_get_current = (ctx_get_current_fn)dlsym(library, "cuCtxGetCurrent");
  module_load_data_fn module_load_data = (module_load_data_fn)dlsym(library, "cuModuleLoadData");
  module_get_function_fn module_get_function = (module_get_function_fn)dlsym(library, "cuModuleGetFunction");
  launch_kernel = (launch_kernel_fn)dlsym(library, "cuLaunchKernel");
  if (!ctx_get_current || !module_load_data || !module_get_function || !launch_kernel)
    return PyErr_Format(PyExc_RuntimeError, "launch_floor: libcuda.so.1 lacks a driver entry point");
  CUcontext context = NULL;
  if (ctx_get_current(&context) != 0 || !context)
    return PyErr_Format(PyExc_RuntimeError, "launch_floor: no current CUDA context (initialize torch.cuda first)");
  CUmodule loaded = NULL;
  CUresult status = module_load_data(&loaded, kPtx);
  if (status == 0)
    status = module_get_function(&kernel, loaded, "empty");
  if (status != 0)
    return PyErr_Format(PyExc_RuntimeError, "launch_floor: loading the empty kernel failed (CUresult %d)", status);
  Py_RETURN_NONE;
}

static PyObject* launch(PyObject* module, PyObject* stream) {
  (void)module;
  void* handle = PyLong_AsVoidPtr(stream);
  if (!handle && PyErr_Occurred())
    return NULL;
  if (!kernel)
    return PyErr_Format(PyExc_RuntimeError, "launch_floor: init() first");
  void* params[] = {args};
  CUresult status = launch_kernel(kernel, 1, 1, 1, 32, 1, 1, 0, (CUstream)handle, params, NULL);
  if (status != 0)
    return PyErr_Format(PyExc_RuntimeError, "launch_floor: cuLaunchKernel failed (CUresult %d)", status);
  Py_RETURN_NONE;
}

typedef int (*function_call_fn)(const void*, const void*, int32_t, const void*, int32_t, void*);
typedef int (*bound_launch_fn)(const void*, const void* const*, const void* const*, void*);

static PyObject* call(PyObject* module, PyObject* const* args, Py_ssize_t n) {
  (void)module;
  if (n != 7 && n != 5)
    return PyErr_Format(PyExc_TypeError, "call takes an entry point and 6 or 4 arguments");
  void* values[7];
  for (Py_ssize_t i = 0; i < n; ++i) {
    values[i] = PyLong_AsVoidPtr(args[i]);
    if (!values[i] && PyErr_Occurred())
      return NULL;
  }
  if (!values[0])
    return PyErr_Format(PyExc_ValueError, "call: the entry point's address is null");
  if (n == 5)
    return PyLong_FromLong(((bound_launch_fn)values[0])(values[1], values[2], values[3], values[4]));
  return PyLong_FromLong(((function_call_fn)values[0])(values[1], values[2], (int32_t)(intptr_t)values[3], values[4],
                                                       (int32_t)(intptr_t)values[5], values[6]));
}

static PyMethodDef methods[] = {
    {"init", init, METH_NOARGS, "Load the empty kernel into the current context."},
    {"launch", launch, METH_O, "Launch the empty kernel on the given stream handle."},
    {"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL, "Call fusegen_function_call from C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "launch_floor", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_launch_floor(void) { return PyModule_Create(&module_def); }
