/* What fusegen._torchread (C++, built against torch) gives fusegen._fastcall
 * (C, no torch headers): a torch tensor read through torch's C++ API,
 * without its six Python-level accessors (about 0.1 us each per tensor).
 * Passed as a PyCapsule named FUSEGEN_TENSOR_READER_CAPSULE. */
#ifndef FUSEGEN_TENSOR_READER_H
#define FUSEGEN_TENSOR_READER_H

#include <Python.h>
#include <stdint.h>

#define FUSEGEN_TENSOR_READER_CAPSULE "fusegen._torchread.reader"
#define FUSEGEN_TENSOR_READER_VERSION 2

typedef struct {
  int version; /* FUSEGEN_TENSOR_READER_VERSION */
  /* 1: `tensor` is a torch.Tensor or nn.Parameter (exactly those types),
   * float32, contiguous, not requiring grad while grad mode is on (version
   * 2), and on CUDA device `device`, of rank at most
   * `capacity`: *data, *rank and sizes[0, rank) are set. 0: anything else
   * (the caller reads it the Python way, which words any error). Never sets
   * a Python error; runs no Python code. */
  int (*read)(PyObject* tensor, long device, void** data, int64_t* sizes, int capacity, int* rank);
  /* A new contiguous float32 torch.Tensor of `sizes` on CUDA device
   * `device` (as torch.empty makes one), with its data pointer in *data; or
   * NULL, with no Python error set, where it cannot (the caller then
   * allocates the Python way, which raises torch's own error). Python code
   * may run meanwhile (a torch dispatch mode, the garbage collector), as
   * with any allocation: the caller re-checks its plan after allocating. */
  PyObject* (*empty)(const int64_t* sizes, int rank, long device, void** data);
} fusegen_tensor_reader;

#endif
