// fusegen._torchread: reads torch tensors for the C call path
// (_fastcall.c) through torch's C++ API. Built with the package
// (python/cmake/TorchReader.cmake) only where torch is importable at build
// time, against that torch: the module records its
// version (torch_version), and the package uses it only when the torch it
// runs with has the same one (fusegen/_function.py); otherwise, or where it
// was not built, _fastcall reads tensors through their Python accessors.
#include "_tensor_reader.h"

#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/python_variable.h>
#if __has_include(<ATen/ops/empty.h>)
#include <ATen/ops/empty.h>
#else
#include <ATen/ATen.h>
#endif

namespace {

int read_tensor(PyObject* tensor, long device, void** data, int64_t* sizes, int capacity, int* rank) {
  // Tensor and Parameter only: a subclass may override what it reports, and
  // its Python accessors are what the call must see.
  if (!THPVariable_CheckExact(tensor))
    return 0;
  try {
    const at::Tensor& t = THPVariable_Unpack(tensor);
    if (!t.defined() || t.scalar_type() != at::kFloat || !t.is_cuda() || t.get_device() != device ||
        t.dim() > capacity || !t.is_contiguous() || (t.requires_grad() && c10::GradMode::is_enabled()))
      return 0; // grad: the Python path refuses it (fusions have no backward)
    *data = t.data_ptr();
    const at::IntArrayRef shape = t.sizes();
    for (size_t d = 0; d < shape.size(); ++d)
      sizes[d] = shape[d];
    *rank = static_cast<int>(shape.size());
    return 1;
  } catch (...) { // symbolic sizes, no storage, ...: the Python way words it
    return 0;
  }
}

PyObject* empty(const int64_t* sizes, int rank, long device, void** data) {
  try {
    at::Tensor t = at::empty(at::IntArrayRef(sizes, static_cast<size_t>(rank)),
                             at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, static_cast<int8_t>(device)));
    void* pointer = t.data_ptr();
    PyObject* wrapped = THPVariable_Wrap(std::move(t));
    if (!wrapped) {
      PyErr_Clear();
      return nullptr;
    }
    *data = pointer;
    return wrapped;
  } catch (...) { // out of memory, ...: torch.empty raises torch's own error
    return nullptr;
  }
}

const fusegen_tensor_reader kReader = {FUSEGEN_TENSOR_READER_VERSION, read_tensor, empty};

PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_torchread",
    "fusegen's torch tensor reader for the C call path (built against one torch version).",
    -1,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

} // namespace

PyMODINIT_FUNC PyInit__torchread() {
  PyObject* m = PyModule_Create(&module);
  if (!m)
    return nullptr;
  PyObject* reader =
      PyCapsule_New(const_cast<fusegen_tensor_reader*>(&kReader), FUSEGEN_TENSOR_READER_CAPSULE, nullptr);
  if (!reader || PyModule_AddObject(m, "reader", reader) < 0) { // steals reader only on success
    Py_XDECREF(reader);
    Py_DECREF(m);
    return nullptr;
  }
  if (PyModule_AddStringConstant(m, "torch_version", FUSEGEN_TORCH_VERSION) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
