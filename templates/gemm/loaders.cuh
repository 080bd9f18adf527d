// templates/gemm/loaders.cuh: where operand elements are, and the loads of a
// k slice into shared memory: through registers, or with cp.async.
#pragma once

// A's depth offsets (kADepthTable > 0), filled by fill_depth_table() at the
// start of the kernel. Static shared memory: the emitter keeps it small.
__shared__ int gemm_a_depth_table[kADepthTable > 0 ? kADepthTable : 1];

__device__ __forceinline__ void fill_depth_table(const FusegenArgs& args) {
  if constexpr (kADepthTable > 0) {
    for (int k = threadIdx.x; k < kADepthTable; k += kThreads)
      gemm_a_depth_table[k] = a_depth_offset(args, k);
    __syncthreads();
  }
}

// Where A element (m, k) is (m < M, k < K).
__device__ __forceinline__ const float* a_element(const FusegenArgs& args, long long a_base, long long m,
                                                  long long k) {
  if constexpr (kADepthTable > 0)
    return a_row(args, a_base, m) + gemm_a_depth_table[k];
  else
    return a_address(args, a_base, m, k);
}

// The problem's extents and the k slices this block multiplies: all of them,
// or with split-K its cluster rank's share.
struct GemmExtents {
  long long rows, cols, depth;
  long long first_slice, slices;
};

// Where slice s of this block's share starts along k.
__device__ __forceinline__ long long slice_k(const GemmExtents& e, long long s) { return (e.first_slice + s) * kTileK; }

// Where load slot `slot` of an operand slice goes: the vector of kWidth
// elements starting at (k, x) (x is m for A, n for B), laid out along k or x.
template <bool kAlongK, int kExtent, int kWidth>
__device__ __forceinline__ void slice_position(int slot, int& kk, int& xx) {
  kk = kAlongK ? (slot % (kTileK / kWidth)) * kWidth : slot / (kExtent / kWidth);
  xx = kAlongK ? slot / (kTileK / kWidth) : (slot % (kExtent / kWidth)) * kWidth;
}

// One operand element or 16-byte vector (zeros for a null address).
template <int kWidth>
__device__ __forceinline__ void load_vector(const float* at, float (&v)[kWidth]) {
  if constexpr (kWidth == 4) {
    const float4 q = at ? __ldg(reinterpret_cast<const float4*>(at)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
  } else {
    v[0] = at ? __ldg(at) : 0.0f;
  }
}

// Loads this thread's part of the k slice starting at k0 into registers
// (zero outside the problem), in the order store_slice() expects.
__device__ __forceinline__ void load_slice(const FusegenArgs& args, const GemmExtents& e, long long a_base,
                                           long long b_base, long long m0, long long n0, long long k0,
                                           float (&a)[kALoads][kAWidth], float (&b)[kBLoads][kBWidth]) {
  const int tid = threadIdx.x;
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    int kk, mm;
    slice_position<kLoadAAlongK, kBlockM, kAWidth>(tid + i * kThreads, kk, mm);
    const long long m = m0 + mm, k = k0 + kk;
    load_vector<kAWidth>(m < e.rows && k < e.depth ? a_element(args, a_base, m, k) : nullptr, a[i]);
  }
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    int kk, nn;
    slice_position<kLoadBAlongK, kBlockN, kBWidth>(tid + i * kThreads, kk, nn);
    const long long n = n0 + nn, k = k0 + kk;
    load_vector<kBWidth>(n < e.cols && k < e.depth ? b_address(args, b_base, k, n) : nullptr, b[i]);
  }
}

// Stores the registers of load_slice() as As[k][m] and Bs[k][n].
__device__ __forceinline__ void store_slice(float* slice, const float (&a)[kALoads][kAWidth],
                                            const float (&b)[kBLoads][kBWidth]) {
  const int tid = threadIdx.x;
  float* as = slice;
  float* bs = slice + kTileK * kAStride;
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    int kk, mm;
    slice_position<kLoadAAlongK, kBlockM, kAWidth>(tid + i * kThreads, kk, mm);
#pragma unroll
    for (int q = 0; q < kAWidth; ++q)
      as[(kk + (kLoadAAlongK ? q : 0)) * kAStride + mm + (kLoadAAlongK ? 0 : q)] = a[i][q];
  }
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    int kk, nn;
    slice_position<kLoadBAlongK, kBlockN, kBWidth>(tid + i * kThreads, kk, nn);
#pragma unroll
    for (int q = 0; q < kBWidth; ++q)
      bs[(kk + (kLoadBAlongK ? q : 0)) * kBStride + nn + (kLoadBAlongK ? 0 : q)] = b[i][q];
  }
}

// Where row r, column k (a multiple of 4) of a row-major slice lives.
__device__ __forceinline__ int slice_offset(int r, int k) {
  if constexpr (kWgmma)
    return r * kRowStride + (((k / 4) ^ (r % 8)) * 4);
  else
    return r * kRowStride + k;
}

// Starts copying the k slice at k0 into `slice` (As[m][k], Bs[n][k]; zeros
// outside the problem). kBHalves: B's rows come from its fp16 halves
// (FP16x3, b_small_address), 4 bytes for each float of B.
template <bool kBHalves = false>
__device__ __forceinline__ void copy_slice_async(const FusegenArgs& args, const GemmExtents& e, long long a_base,
                                                 long long b_base, long long m0, long long n0, long long k0,
                                                 float* slice) {
  constexpr int kVectorsPerRow = kTileK / 4;
  constexpr int kACopies = kBlockM * kVectorsPerRow / kThreads;
  constexpr int kBCopies = kBlockN * kVectorsPerRow / kThreads;
  static_assert(!kAsync ||
                    (kACopies * kThreads == kBlockM * kVectorsPerRow && kBCopies * kThreads == kBlockN * kVectorsPerRow),
                "slice copies must divide evenly among the threads");
  const float* stand_in = args.buf[0];
  // This thread's vectors: column kk of rows r0, r0 + kRowStep, ... The
  // operands' addresses are affine in their coordinates on this path (hook
  // contract), so one address per operand and a row step (a constant where
  // the extents are) give every copy's: a handful of instructions per
  // slice instead of an address computed per copy (bench/NOTES.md v32).
  constexpr int kRowStep = kThreads / kVectorsPerRow;
  const int r0 = static_cast<int>(threadIdx.x) / kVectorsPerRow, kk = (static_cast<int>(threadIdx.x) % kVectorsPerRow) * 4;
  const long long k = k0 + kk;
  const bool k_inside = k < e.depth;
  if constexpr (kAAffine) {
    const float* a = a_element(args, a_base, m0 + r0, k);
    const long long a_step = a_element(args, a_base, m0 + r0 + kRowStep, k) - a;
#pragma unroll
    for (int i = 0; i < kACopies; ++i) {
      const int mm = r0 + i * kRowStep;
      fusegen_copy16_async(slice + slice_offset(mm, kk), m0 + mm < e.rows && k_inside ? a + i * a_step : nullptr,
                           stand_in);
    }
  } else { // gathered rows: an address per copy (null for padding)
#pragma unroll
    for (int i = 0; i < kACopies; ++i) {
      const int mm = r0 + i * kRowStep;
      fusegen_copy16_async(slice + slice_offset(mm, kk),
                           m0 + mm < e.rows && k_inside ? a_element(args, a_base, m0 + mm, k) : nullptr, stand_in);
    }
  }
  float* bs = slice + kBlockM * kRowStride;
  const float* b = kBHalves ? b_small_address(args, b_base, k, n0 + r0) : b_address(args, b_base, k, n0 + r0);
  const long long b_step = b_address(args, b_base, k, n0 + r0 + kRowStep) - b_address(args, b_base, k, n0 + r0);
  const float* b_small = kCopySmallB ? b_small_address(args, b_base, k, n0 + r0) : nullptr;
#pragma unroll
  for (int i = 0; i < kBCopies; ++i) {
    const int nn = r0 + i * kRowStep;
    const bool inside = n0 + nn < e.cols && k_inside;
    fusegen_copy16_async(bs + slice_offset(nn, kk), inside ? b + i * b_step : nullptr, stand_in);
    if constexpr (kCopySmallB)
      fusegen_copy16_async(bs + kBlockN * kRowStride + slice_offset(nn, kk), inside ? b_small + i * b_step : nullptr,
                           stand_in);
  }
}

// Starts copying slices 0 .. kAhead - 1 into stages 0 .. kAhead - 1, one
// commit group each (empty past the last slice, so group counts stay
// uniform): the prologue of both cp.async pipelines.
template <int kAhead>
__device__ __forceinline__ void copy_first_slices(const FusegenArgs& args, const GemmExtents& e, long long a_base,
                                                  long long b_base, long long m0, long long n0, long long slices,
                                                  float* smem) {
#pragma unroll
  for (int stage = 0; stage < kAhead; ++stage) {
    if (stage < slices)
      copy_slice_async(args, e, a_base, b_base, m0, n0, slice_k(e, stage), smem + stage * kAsyncSliceFloats);
    fusegen_copy_commit();
  }
}
