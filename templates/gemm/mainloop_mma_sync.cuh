// templates/gemm/mainloop_mma_sync.cuh: the products on tensor cores with
// mma.sync (sm_80 and later): register-staged and cp.async main loops.
#pragma once

// x = big + small, both tf32; |x - big - small| <= 2^-22 |x| or so.
// kRoundSmall false leaves the small part's low bits for the tensor cores
// to drop (<= 2^-21 |x|): half the instructions of the split (cvt.rna is
// emulated by four), which the register-staged gather path is bound by
// (chain 85's conv: 1.45 -> 1.31 ms, error unchanged at 2e-6).
template <bool kRoundSmall = true>
__device__ __forceinline__ void gemm_split(float x, unsigned int& big, unsigned int& small) {
  big = fusegen_tf32_bits(x);
  const float rest = x - __uint_as_float(big);
  small = kRoundSmall ? fusegen_tf32_bits(rest) : __float_as_uint(rest);
}

// acc (m16n8, fp32) += a (m16k8, tf32, row) * b (k8n8, tf32, col).
__device__ __forceinline__ void gemm_mma(float (&acc)[4], const unsigned int (&a)[4], const unsigned int (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};"
               : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The products of one k slice for kRows row fragments of this warp's tile,
// from row fragment first_row on (a constant once unrolled). Fragment layouts
// are the PTX ISA's for m16n8k8 tf32 (g = lane / 4, t = lane % 4): A holds
// (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4); B holds (t, g), (t + 4, g).
// Slices are k-major (As[k][m], Bs[k][n]; element (k, x) at k * stride + x),
// or row-major on the cp.async path (As[m][k], Bs[n][k]; x * kRowStride + k).
template <int kRows>
__device__ __forceinline__ void multiply_slice_tc(const float* slice, int warp_m, int warp_n, int first_row,
                                                  float (&acc)[kRows][kFragsN][4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // Distance between elements 1 apart along k, and along m or n.
  constexpr int kAK = kAsync ? 1 : kAStride, kAX = kAsync ? kRowStride : 1;
  constexpr int kBK = kAsync ? 1 : kBStride, kBX = kAsync ? kRowStride : 1;
  const float* as = slice + (warp_m * kWarpM + first_row * 16 + g) * kAX + t * kAK;
  const float* bs = slice + (kAsync ? kBlockM * kRowStride : kTileK * kAStride) + (warp_n * kWarpN + g) * kBX + t * kBK;
#pragma unroll
  for (int k8 = 0; k8 < kTileK; k8 += 8) {
    // B's fragments for every column fragment, then A's one row fragment at
    // a time (fewer live registers than all of A at once).
    unsigned int b_big[kFragsN][2], b_small[kFragsN][2];
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      const float* b = bs + k8 * kBK + j * 8 * kBX;
      const float v[2] = {b[0], b[4 * kBK]};
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        if (kStrict)
          gemm_split<!kGathers>(v[r], b_big[j][r], b_small[j][r]);
        else
          b_big[j][r] = fusegen_tf32_bits(v[r]);
      }
    }
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const float* a = as + k8 * kAK + i * 16 * kAX;
      const float v[4] = {a[0], a[8 * kAX], a[4 * kAK], a[4 * kAK + 8 * kAX]};
      unsigned int a_big[4], a_small[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        if (kStrict)
          gemm_split<!kGathers>(v[r], a_big[r], a_small[r]);
        else
          a_big[r] = fusegen_tf32_bits(v[r]);
      }
      // The small terms first: they join the running sum before the big
      // product of the same step, which keeps more of their bits.
#pragma unroll
      for (int j = 0; j < kFragsN; ++j) {
        if (kStrict) {
          gemm_mma(acc[i][j], a_small, b_big[j]);
          gemm_mma(acc[i][j], a_big, b_small[j]);
        }
        gemm_mma(acc[i][j], a_big, b_big[j]);
      }
    }
  }
}

// The products of one slice added to acc. Strict precision: the tensor
// cores' fp32 accumulation truncates, and over thousands of steps that bias
// grows past 1e-4 after a GroupNorm, so each slice's products are summed
// apart (few truncations, small values) and added to acc with rounded fp32
// adds, two row fragments at a time so that the separate sums fit in registers.
__device__ __forceinline__ void multiply_into(const float* slice, int warp_m, int warp_n,
                                              float (&acc)[kFragsM][kFragsN][4]) {
  if constexpr (kStrict) {
    constexpr int kChunk = kFragsM < 2 ? kFragsM : 2;
#pragma unroll
    for (int first = 0; first < kFragsM; first += kChunk) {
      float part[kChunk][kFragsN][4] = {};
      multiply_slice_tc<kChunk>(slice, warp_m, warp_n, first, part);
#pragma unroll
      for (int i = 0; i < kChunk; ++i)
#pragma unroll
        for (int j = 0; j < kFragsN; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r)
            acc[first + i][j][r] += part[i][j][r];
    }
  } else {
    multiply_slice_tc<kFragsM>(slice, warp_m, warp_n, 0, acc);
  }
}

// The block's products on the cp.async path: kStages - 1 slices in flight
// while one is multiplied, one barrier per slice.
__device__ __forceinline__ void accumulate_block_async(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                       long long batch, long long m0, long long n0,
                                                       float (&acc)[kFragsM][kFragsN][4]) {
  const int warp = threadIdx.x / 32, warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const long long a_base = a_offset(args, batch), b_base = b_offset(args, batch);
  const long long slices = e.slices;
  copy_first_slices<kStages - 1>(args, e, a_base, b_base, m0, n0, slices, smem);
#pragma unroll 1
  for (long long s = 0; s < slices; ++s) {
    fusegen_copy_wait<kStages - 2>();
    __syncthreads(); // slice s is visible to all; slice s - 1's buffer is free
    const long long next = s + kStages - 1;
    if (next < slices)
      copy_slice_async(args, e, a_base, b_base, m0, n0, slice_k(e, next), smem + (next % kStages) * kAsyncSliceFloats);
    fusegen_copy_commit();
    multiply_into(smem + (s % kStages) * kAsyncSliceFloats, warp_m, warp_n, acc);
  }
  fusegen_copy_wait<0>();
  __syncthreads(); // shared memory is free for the epilogue
}

// The block's products where the cp.async path does not apply: slices
// double-buffered through registers, one barrier per slice. The next slice's
// loads are issued before the multiply so that their latency overlaps it
// (past the last slice the bounds checks yield zeros without touching
// memory, and storing them into the idle buffer is harmless).
__device__ __forceinline__ void accumulate_block_tc(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                    long long batch, long long m0, long long n0,
                                                    float (&acc)[kFragsM][kFragsN][4]) {
  const int warp = threadIdx.x / 32, warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const long long a_base = a_offset(args, batch), b_base = b_offset(args, batch);
  const long long slices = e.slices;
  if (slices <= 0)
    return;
  float a[kALoads][kAWidth], b[kBLoads][kBWidth];
  load_slice(args, e, a_base, b_base, m0, n0, slice_k(e, 0), a, b);
  store_slice(smem, a, b);
  __syncthreads();
#pragma unroll 1
  for (long long s = 0; s < slices; ++s) {
    load_slice(args, e, a_base, b_base, m0, n0, slice_k(e, s + 1), a, b);
    multiply_into(smem + (s & 1) * kSliceFloats, warp_m, warp_n, acc);
    store_slice(smem + ((s + 1) & 1) * kSliceFloats, a, b);
    __syncthreads();
  }
}
