// templates/gemm/mainloop_fp16x3.cuh: strict precision's FP16x3 products on
// wgmma (sm_90a, kInnerProduct 3), with a per-block fallback to 3xTF32.
//
// Each fp32 operand x is hi + lo * 2^-11 with hi = fp16(x) and lo =
// fp16((x - hi) * 2^11) (fusegen_fp16x3_split2): 22 significant bits, as
// 3xTF32's big and small parts, but fp16 products run at twice TF32's rate.
// Scaling lo by 2^11 keeps it a normal fp16 wherever hi is one. A slice's
// hi*hi products go into separate sums added to acc with rounded fp32 adds
// (as 3xTF32's); the corrections hi*lo + lo*hi, 2^11 times too large, stay
// on the tensor cores for the whole depth and are scaled into acc at the
// end (their truncation error is 2^-11 of theirs).
//
// B's rows reach the tensor cores as 32 hi halves then 32 lo halves per
// 32-deep slice, 128 bytes, a K-major fp16 tile 64 deep (hi at k 0..31, lo
// at k 32..63) in the 128-byte swizzle: split by the pass before the kernel
// in that layout (kBSplit: the stages hold it as copied), or split here from
// each landed fp32 slice into one of two buffers. A is split in registers
// (wgmma's register-A form).
//
// The guard: x's split is exact to 2^-22 |x| when 2^-14 <= |x| < 65504.
// Larger values overflow hi; rows or columns whose largest value is below
// 2^-14 lose relative precision (their lo parts become subnormal). A block
// tracks the largest magnitude of each of its rows of A and columns of B
// over the depth; if one is out of range (or inf or NaN), the whole block
// recomputes its products with 3xTF32 from the fp32 B, before its epilogue
// has written anything (docs/kernels-gemm.md "FP16x3").
#pragma once

// |x| bits of the range limits: fp16's largest finite value and smallest
// normal one, as fp32 and as fp16.
constexpr int kFp16x3MaxBits = 0x477fe000; // 65504.0f
constexpr int kFp16x3MinBits = 0x38800000; // 2^-14
constexpr int kHalfInfBits = 0x7c00;       // fp16 inf (NaN above)
constexpr int kHalfMinNormalBits = 0x0400; // fp16 2^-14
constexpr float kFp16x3LoUnscale = 1.0f / 2048.0f;

// Stamps out the 4 accumulator operands of fragment j of d.
#define FUSEGEN_WGMMA_D(d, j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])

// d (m64n128 or m64n64, fp32) += a (64 x 16 fp16, in registers: warp w of
// the warpgroup holds rows 16w.., register r (g, 2t..2t+1), (g + 8, ..),
// (g, 2t + 8..), (g + 8, 2t + 8..)) * b (N x 16 fp16, K-major in shared
// memory)^T.
template <int kN>
__device__ __forceinline__ void gemm_wgmma_f16_rs(float (&d)[kN][4], const unsigned int (&a)[4], unsigned long long b) {
  static_assert(!kFp16x3 || kN == 16 || kN == 8, "FP16x3 blocks are 128 or 64 columns wide");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (kN == 16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
                 "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
                 "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
                 "%56, %57, %58, %59, %60, %61, %62, %63}, "
                 "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
                 : FUSEGEN_WGMMA_D(d, 0), FUSEGEN_WGMMA_D(d, 1), FUSEGEN_WGMMA_D(d, 2), FUSEGEN_WGMMA_D(d, 3),
                   FUSEGEN_WGMMA_D(d, 4), FUSEGEN_WGMMA_D(d, 5), FUSEGEN_WGMMA_D(d, 6), FUSEGEN_WGMMA_D(d, 7),
                   FUSEGEN_WGMMA_D(d, 8), FUSEGEN_WGMMA_D(d, 9), FUSEGEN_WGMMA_D(d, 10), FUSEGEN_WGMMA_D(d, 11),
                   FUSEGEN_WGMMA_D(d, 12), FUSEGEN_WGMMA_D(d, 13), FUSEGEN_WGMMA_D(d, 14), FUSEGEN_WGMMA_D(d, 15)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
  else if constexpr (kN == 8)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
                 "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
                 : FUSEGEN_WGMMA_D(d, 0), FUSEGEN_WGMMA_D(d, 1), FUSEGEN_WGMMA_D(d, 2), FUSEGEN_WGMMA_D(d, 3),
                   FUSEGEN_WGMMA_D(d, 4), FUSEGEN_WGMMA_D(d, 5), FUSEGEN_WGMMA_D(d, 6), FUSEGEN_WGMMA_D(d, 7)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
#else
  (void)d;
  (void)a;
  (void)b;
#endif
}

#undef FUSEGEN_WGMMA_D

// This thread's A fragment of k16 step `step` of a landed slice for its
// warpgroup's rows, split into hi and lo halves (two k per register), read
// through the 128-byte swizzle as float2. row_max[i] keeps the largest |x|
// bits seen in row g + 8i.
__device__ __forceinline__ void load_split_a_fp16(const float* slice, int step, unsigned int (&hi)[4],
                                                  unsigned int (&lo)[4], int (&row_max)[2]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row = (threadIdx.x / 128) * 64 + ((threadIdx.x / 32) % 4) * 16 + g;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int rr = row + (r & 1) * 8, k = step * 16 + 2 * t + (r >> 1) * 8;
    const float2 x = *reinterpret_cast<const float2*>(slice + rr * kRowStride + (((k / 4) ^ (rr % 8)) * 4) + k % 4);
    fusegen_fp16x3_split2(x.x, x.y, hi[r], lo[r]);
    const int bits = max(__float_as_int(x.x) & 0x7fffffff, __float_as_int(x.y) & 0x7fffffff);
    row_max[r & 1] = max(row_max[r & 1], bits);
  }
}

// Splits a landed slice's fp32 B rows into hi|lo rows in `halves` (same
// swizzle), four k of a row per vector, and keeps the largest |x| bits of
// each of this thread's rows (the same ones every slice).
constexpr int kBSplitVectors = kFp16x3 ? kBlockN * kTileK / 4 / kThreads : 1;
__device__ __forceinline__ void split_b_halves(const float* bs, float* halves, int (&col_max)[kBSplitVectors]) {
  float4 x[kBSplitVectors];
#pragma unroll
  for (int i = 0; i < kBSplitVectors; ++i) { // all loads first (halves may alias bs as far as the compiler knows)
    const int v = static_cast<int>(threadIdx.x) + i * kThreads, n = v / 8, q = v % 8;
    x[i] = *reinterpret_cast<const float4*>(bs + n * kRowStride + ((q ^ (n % 8)) * 4));
  }
#pragma unroll
  for (int i = 0; i < kBSplitVectors; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads, n = v / 8, q = v % 8;
    unsigned int hi01, lo01, hi23, lo23;
    fusegen_fp16x3_split2(x[i].x, x[i].y, hi01, lo01);
    fusegen_fp16x3_split2(x[i].z, x[i].w, hi23, lo23);
    const int bits = max(max(__float_as_int(x[i].x) & 0x7fffffff, __float_as_int(x[i].y) & 0x7fffffff),
                         max(__float_as_int(x[i].z) & 0x7fffffff, __float_as_int(x[i].w) & 0x7fffffff));
    col_max[i] = max(col_max[i], bits);
    // k 4q..4q+3: hi at byte 8q of the row (chunk q / 2), lo 64 bytes on.
    char* row = reinterpret_cast<char*>(halves + n * kRowStride);
    const int within = 8 * (q % 2);
    *reinterpret_cast<uint2*>(row + (((q / 2) ^ (n % 8)) * 16) + within) = make_uint2(hi01, hi23);
    *reinterpret_cast<uint2*>(row + (((4 + q / 2) ^ (n % 8)) * 16) + within) = make_uint2(lo01, lo23);
  }
}

// Checks of B's hi halves in a landed slice: thread i reads 16 bytes (8 hi
// halves) of kBChecks rows, the same rows every slice, and keeps the
// largest |hi| bits of each.
constexpr int kBChecks = kFp16x3 ? kBlockN * 4 / kThreads : 1;
__device__ __forceinline__ void check_b_halves(const float* bs, int (&col_max)[kBChecks]) {
#pragma unroll
  for (int i = 0; i < kBChecks; ++i) {
    const int v = static_cast<int>(threadIdx.x) + i * kThreads, n = v / 4, c = v % 4;
    const uint4 w = *reinterpret_cast<const uint4*>(bs + n * kRowStride + ((c ^ (n % 8)) * 4));
    const unsigned int words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int j = 0; j < 4; ++j)
      col_max[i] =
          max(col_max[i], max(static_cast<int>(words[j] & 0x7fffu), static_cast<int>((words[j] >> 16) & 0x7fffu)));
  }
}

// The largest of x over kLanes adjacent lanes (a power of two).
template <int kLanes> __device__ __forceinline__ int lanes_max(int x) {
#pragma unroll
  for (int mask = 1; mask < kLanes; mask *= 2)
    x = max(x, __shfl_xor_sync(0xffffffffu, x, mask));
  return x;
}

// Whether a row or column whose largest |x| has these bits is out of
// FP16x3's range: as fp32 bits, or as fp16 bits of its hi halves.
__device__ __forceinline__ bool fp32_out_of_range(int m) {
  return m >= kFp16x3MaxBits || (m != 0 && m < kFp16x3MinBits);
}
__device__ __forceinline__ bool half_out_of_range(int m) {
  return m >= kHalfInfBits || (m != 0 && m < kHalfMinNormalBits);
}

// Whether every row of A and column of B this block multiplied is in
// FP16x3's range (the same answer in every thread; a block barrier). A
// row's k are spread over the 4 lanes of its quad; a column of B over
// kColumnLanes adjacent lanes, its largest value as fp32 bits or (kHalfBits)
// as its hi halves' bits.
template <int kColumnLanes, bool kHalfBits, int kColumns>
__device__ __forceinline__ bool fp16x3_in_range(const int (&row_max)[2], const int (&col_max)[kColumns]) {
  // Every lane shuffles whatever it found so far (no short-circuit): the
  // shuffles need the whole warp.
  bool out = false;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int m = lanes_max<4>(row_max[i]);
    out = fp32_out_of_range(m) || out;
  }
#pragma unroll
  for (int i = 0; i < kColumns; ++i) {
    const int m = lanes_max<kColumnLanes>(col_max[i]);
    out = (kHalfBits ? half_out_of_range(m) : fp32_out_of_range(m)) || out;
  }
  return __syncthreads_or(out) == 0;
}

// acc += corr * 2^-11: the corrections, at last on acc's scale.
__device__ __forceinline__ void add_corrections(float (&acc)[kFragsN][4], const float (&corr)[kFragsN][4]) {
#pragma unroll
  for (int j = 0; j < kFragsN; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      acc[j][r] += corr[j][r] * kFp16x3LoUnscale;
}

// One slice's FP16x3 products for this thread's warpgroup, A from the
// slice and B's hi|lo rows from b_halves: hi*hi into `sums`, hi*lo + lo*hi
// into `corr`, one commit group per k16 step.
__device__ __forceinline__ void issue_slice_fp16x3(const float* slice, const float* b_halves, float (&sums)[kFragsN][4],
                                                   float (&corr)[kFragsN][4], int (&row_max)[2]) {
  const unsigned long long b = gemm_descriptor(b_halves);
  constexpr int kSteps = kTileK >= 16 ? kTileK / 16 : 1; // (kTileK is 32 on wgmma)
  unsigned int a_hi[kSteps][4], a_lo[kSteps][4];
#pragma unroll
  for (int step = 0; step < kSteps; ++step) {
    load_split_a_fp16(slice, step, a_hi[step], a_lo[step], row_max);
    gemm_wgmma_fence(); // the fragments (and sums) were written by ordinary instructions
    // k16 steps advance 32 bytes (2 descriptor units); the lo halves start
    // 64 bytes into the rows.
    const unsigned long long b_hi = b + 2ull * step, b_lo = b_hi + 4ull;
    gemm_wgmma_f16_rs(sums, a_hi[step], b_hi);
    gemm_wgmma_f16_rs(corr, a_hi[step], b_lo);
    gemm_wgmma_f16_rs(corr, a_lo[step], b_hi);
    gemm_wgmma_commit();
  }
}

// The block's FP16x3 products into acc from B split before the kernel,
// pipelined as accumulate_stages_wgmma()
// (per-stage barriers, copies kStages - 1 slices ahead). Returns false (the
// same in every thread) when an operand left FP16x3's range: acc is then
// not the product and the caller recomputes it.
__device__ __forceinline__ bool accumulate_stages_fp16x3(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                         long long a_base, long long b_base, long long m0, long long n0,
                                                         float (&acc)[kFragsM][kFragsN][4]) {
  constexpr int kAhead = kStages - 1;
  __shared__ unsigned long long filled[kStages], freed[kStages];
  init_stage_barriers(filled, freed);
  float corr[kFragsN][4] = {};
  int row_max[2] = {0, 0}, col_max[kBChecks] = {};
  const long long slices = e.slices;
#pragma unroll 1
  for (long long next = 0; next < kAhead; ++next)
    refill_stage<true>(args, e, a_base, b_base, m0, n0, next, smem, filled, freed);
#pragma unroll 1
  for (long long s = 0; s < slices; ++s) {
    const int stage = static_cast<int>(s % kStages);
    gemm_barrier_wait(&filled[stage], static_cast<unsigned int>(s / kStages) & 1u);
    gemm_fence_async_proxy(); // the tensor cores read what cp.async wrote
    float* slice = smem + stage * kAsyncSliceFloats;
    float sums[kFragsN][4] = {};
    issue_slice_fp16x3(slice, slice + kBlockM * kRowStride, sums, corr, row_max);
    check_b_halves(slice + kBlockM * kRowStride, col_max);
    refill_stage<true>(args, e, a_base, b_base, m0, n0, s + kAhead, smem, filled, freed);
    add_slice_sums(acc[0], sums);
    gemm_barrier_arrive(&freed[stage]);
  }
  add_corrections(acc[0], corr);
  const bool in_range = fp16x3_in_range<4, true>(row_max, col_max); // also: every thread is done with the stages
  inval_stage_barriers(filled, freed);
  return in_range;
}

// The block's FP16x3 products into acc, splitting B here, pipelined as
// accumulate_block_wgmma()'s 3xTF32 loop that does the same: a block
// barrier per slice, whose B is split while the slice before is on the
// tensor cores. Returns false as accumulate_stages_fp16x3() does.
__device__ __forceinline__ bool accumulate_split_here_fp16x3(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                             long long a_base, long long b_base, long long m0,
                                                             long long n0, float (&acc)[kFragsM][kFragsN][4]) {
  constexpr int kAhead = kStages - 1;
  constexpr int kBFloats = kBlockN * kRowStride;
  const long long slices = e.slices;
  float* halves = smem + kStages * kAsyncSliceFloats; // two slices' hi|lo rows of B
  float corr[kFragsN][4] = {};
  int row_max[2] = {0, 0}, col_max[kBSplitVectors] = {};
  copy_first_slices<kAhead>(args, e, a_base, b_base, m0, n0, slices, smem);
  if (slices > 0) {
    fusegen_copy_wait<kAhead - 1>();
    __syncthreads(); // slice 0 has landed
    split_b_halves(smem + kBlockM * kRowStride, halves, col_max);
    gemm_fence_async_proxy(); // the tensor cores read what the split wrote
    __syncthreads();
  }
#pragma unroll 1
  for (long long s = 0; s < slices; ++s) {
    const long long next = s + kAhead; // into slice s - 1's stage, free since the last barrier
    if (next < slices)
      copy_slice_async(args, e, a_base, b_base, m0, n0, slice_k(e, next), smem + (next % kStages) * kAsyncSliceFloats);
    fusegen_copy_commit();
    float sums[kFragsN][4] = {};
    issue_slice_fp16x3(smem + (s % kStages) * kAsyncSliceFloats, halves + (s & 1) * kBFloats, sums, corr, row_max);
    if (s + 1 < slices) {
      fusegen_copy_wait<kAhead - 1>();
      __syncthreads(); // slice s + 1 has landed
      split_b_halves(smem + ((s + 1) % kStages) * kAsyncSliceFloats + kBlockM * kRowStride,
                     halves + ((s + 1) & 1) * kBFloats, col_max);
    }
    add_slice_sums(acc[0], sums);
    gemm_fence_async_proxy();
    __syncthreads(); // the split is visible; slice s's buffers are free
  }
  fusegen_copy_wait<0>();
  add_corrections(acc[0], corr);
  return fp16x3_in_range<8, false>(row_max, col_max); // also: shared memory is free for what follows
}
