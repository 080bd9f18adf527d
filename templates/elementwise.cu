// fusegen template: elementwise kernel over one output domain (fp32).
//
// A grid-stride loop over the domain's elements; the generator supplies the
// per-element work (decode the index into coordinates, load operands with
// broadcasting, evaluate the pointwise chain, store every output). With
// kVectorWidth 4 each step handles four consecutive elements through float4
// loads and stores, when vector_ok() says every pointer is 16-byte aligned.
//
// Hook contract (checked by fusegen-template-tool against TemplateHooks.h):
//   "block_size"   constexpr int kBlockSize     threads per block (multiple of 32)
//   "vector_width" constexpr int kVectorWidth   1, or 4 when the domain's
//                                               innermost dim that is not 1
//                                               is a multiple of 4
//   "numel"        long long numel(args)        elements in the domain
//   "vector_ok"    bool vector_ok(args)         float4 access is legal now
//   "compute"      void compute(args, index)    computes and stores element index
//   "compute4"     void compute4(args, index)   elements index..index+3
//                                               (index % 4 == 0)
//   "entry"        the __global__ kernel; the generator renames it
//
// Compiles alone with nvcc and NVRTC (helpers.cu is the only include, and
// the generator emits it once at the top of a generated file instead).

#ifndef FUSEGEN_HELPERS_DEFINED
#include "helpers.cu"
#endif

FUSEGEN_HOOK("block_size") constexpr int kBlockSize = 256;

FUSEGEN_HOOK("vector_width") constexpr int kVectorWidth = 1;

FUSEGEN_HOOK("numel")
__device__ __forceinline__ long long numel(const FusegenArgs& args) { return args.dim[0]; }

FUSEGEN_HOOK("vector_ok")
__device__ __forceinline__ bool vector_ok(const FusegenArgs& args) {
  return ((reinterpret_cast<unsigned long long>(args.buf[0]) |
           reinterpret_cast<unsigned long long>(args.buf[1])) & 15) == 0;
}

FUSEGEN_HOOK("compute")
__device__ __forceinline__ void compute(const FusegenArgs& args, long long index) {
  args.buf[1][index] = args.buf[0][index];
}

FUSEGEN_HOOK("compute4")
__device__ __forceinline__ void compute4(const FusegenArgs& args, long long index) {
  *reinterpret_cast<float4*>(args.buf[1] + index) = *reinterpret_cast<const float4*>(args.buf[0] + index);
}

static_assert(kBlockSize > 0 && kBlockSize <= 1024 && kBlockSize % 32 == 0,
              "kBlockSize must be a multiple of 32 in [32, 1024]");
static_assert(kVectorWidth == 1 || kVectorWidth == 4, "kVectorWidth must be 1 or 4");

__device__ __forceinline__ void elementwise_main(const FusegenArgs& args) {
  const long long total = numel(args);
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  if (kVectorWidth == 4 && vector_ok(args)) {
    const long long vectors = total / 4;
    for (long long v = thread; v < vectors; v += stride)
      compute4(args, v * 4);
    // Elements past the last whole vector, one per thread.
    const long long tail = vectors * 4 + thread;
    if (tail < total)
      compute(args, tail);
    return;
  }
  for (long long i = thread; i < total; i += stride)
    compute(args, i);
}

extern "C" {
FUSEGEN_HOOK("entry")
__global__ void __launch_bounds__(kBlockSize) fusegen_elementwise(const FusegenArgs args) {
  elementwise_main(args);
}
}
