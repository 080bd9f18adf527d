// templates/gemm/mainloop_wgmma.cuh: the products with warpgroup MMA
// (sm_90a, 128-row blocks on the cp.async path).
#pragma once

__device__ __forceinline__ void gemm_fence_async_proxy() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

__device__ __forceinline__ void gemm_wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void gemm_wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}

// Waits until at most kPending committed groups of this warpgroup's products
// are still running.
template <int kPending>
__device__ __forceinline__ void gemm_wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
#endif
}

// Shared-memory matrix descriptor of a K-major tile with 128-byte rows in
// the 128-byte swizzle: start address, leading offset (unused by this
// layout, 1), stride between 8-row groups 1024 bytes, layout 1 (SW128).
__device__ __forceinline__ unsigned long long gemm_descriptor(const float* tile) {
  const unsigned long long address = fusegen_shared_address(tile);
  return ((address & 0x3FFFFull) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

// acc (m64n64, fp32) = a (64 x 8) * b (64 x 8)^T [+ acc if accumulate],
// both operands K-major tf32 in shared memory (descriptors).
__device__ __forceinline__ void gemm_wgmma_n64(float (&d)[8][4], unsigned long long a, unsigned long long b,
                                               int accumulate) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
               "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
               "%32, %33, p, 1, 1;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
                 "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                 "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
                 "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                 "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                 "+f"(d[7][2]), "+f"(d[7][3])
               : "l"(a), "l"(b), "r"(accumulate));
#else
  (void)d;
  (void)a;
  (void)b;
  (void)accumulate;
#endif
}

// acc (m64n128, fp32) = a (64 x 8) * b (128 x 8)^T [+ acc if accumulate],
// both operands K-major tf32 in shared memory (descriptors).
__device__ __forceinline__ void gemm_wgmma_n128(float (&d)[16][4], unsigned long long a, unsigned long long b,
                                               int accumulate) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
               "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
               "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
               "%56, %57, %58, %59, %60, %61, %62, %63}, "
               "%64, %65, p, 1, 1;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
                 "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                 "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
                 "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                 "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                 "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                 "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]),
                 "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
                 "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]),
                 "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
                 "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
               : "l"(a), "l"(b), "r"(accumulate));
#else
  (void)d;
  (void)a;
  (void)b;
  (void)accumulate;
#endif
}

// acc (m64n256, fp32) = a (64 x 8) * b (256 x 8)^T [+ acc if accumulate],
// both operands K-major tf32 in shared memory (descriptors).
__device__ __forceinline__ void gemm_wgmma_n256(float (&d)[32][4], unsigned long long a, unsigned long long b,
                                               int accumulate) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
               "{"
               "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
               "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
               "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
               "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
               "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
               "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
               "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
               "%123, %124, %125, %126, %127"
               "}, %128, %129, p, 1, 1;\n}\n"
               : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
                 "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                 "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
                 "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                 "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                 "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                 "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]),
                 "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]),
                 "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
                 "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]),
                 "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]),
                 "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]),
                 "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]),
                 "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]),
                 "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]),
                 "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]),
                 "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]),
                 "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), "+f"(d[24][0]),
                 "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]),
                 "+f"(d[25][2]), "+f"(d[25][3]), "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]),
                 "+f"(d[26][3]), "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]),
                 "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]),
                 "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), "+f"(d[30][0]), "+f"(d[30][1]),
                 "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]),
                 "+f"(d[31][3])
               : "l"(a), "l"(b), "r"(accumulate));
#else
  (void)d;
  (void)a;
  (void)b;
  (void)accumulate;
#endif
}

// One m64nN k8 step: the instruction for the block width (a template, so
// that configurations without wgmma instantiate neither).
template <int kN>
__device__ __forceinline__ void gemm_wgmma(float (&d)[kN][4], unsigned long long a, unsigned long long b,
                                           int accumulate) {
  static_assert(!kWgmma || kN == 32 || kN == 16 || kN == 8, "wgmma blocks are 256, 128 or 64 columns wide");
  if constexpr (kN == 32)
    gemm_wgmma_n256(d, a, b, accumulate);
  else if constexpr (kN == 16)
    gemm_wgmma_n128(d, a, b, accumulate);
  else if constexpr (kN == 8)
    gemm_wgmma_n64(d, a, b, accumulate);
}

// acc (m64n64 or m64n128, fp32) += a (64 x 8, tf32 fragments in registers:
// warp w of the warpgroup holds rows 16w.., as mma.sync's m16n8k8 A) * b
// (N x 8, K-major in shared memory)^T.
template <int kN>
__device__ __forceinline__ void gemm_wgmma_rs(float (&d)[kN][4], const unsigned int (&a)[4], unsigned long long b) {
  static_assert(!kWgmma || !kStrict || kN == 16 || kN == 8, "3xTF32 blocks are 128 or 64 columns wide");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (kN == 16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
                 "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
                 "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
                 "%56, %57, %58, %59, %60, %61, %62, %63}, "
                 "{%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
                   "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                   "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
                   "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                   "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                   "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                   "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]),
                   "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]),
                   "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
                   "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]),
                   "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]),
                   "+f"(d[15][2]), "+f"(d[15][3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
  else if constexpr (kN == 8)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
                 "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),
                   "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                   "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),
                   "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                   "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                   "+f"(d[7][2]), "+f"(d[7][3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
#else
  (void)d;
  (void)a;
  (void)b;
#endif
}

// This thread's A fragment of k step k8 of a landed slice for its
// warpgroup's rows, split into tf32 big and small parts: register r holds
// (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4) of the warp's 16 rows (g =
// lane / 4, t = lane % 4), read through the 128-byte swizzle (conflict-free:
// the 8 rows of a lane group sit in 8 different 16-byte chunks).
__device__ __forceinline__ void load_split_a(const float* slice, int k8, unsigned int (&big)[4],
                                             unsigned int (&small)[4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row = (threadIdx.x / 128) * 64 + ((threadIdx.x / 32) % 4) * 16 + g;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int rr = row + (r & 1) * 8, k = k8 * 8 + t + (r >> 1) * 4;
    gemm_split(slice[rr * kRowStride + (((k / 4) ^ (rr % 8)) * 4) + k % 4], big[r], small[r]);
  }
}

// Writes the small parts of `count` floats to `small` (same layout; the
// split is element-wise, so the swizzle does not matter) and leaves the
// floats as they are: the tensor cores read their tf32 part, the truncated
// big part, and small = rna(x - trunc(x)) leaves at most 2^-21 |x| (2^-22
// with a rounded big part, which costs writing the slice back: about 8% of
// the shared-memory traffic that bounds this loop; bench/NOTES.md v10).
// All of a thread's loads come first: `small` may alias `slice` as far as the
// compiler knows, so a load after a store would wait for the load before it
// (bench/NOTES.md v34).
template <int kCount>
__device__ __forceinline__ void split_floats(const float* slice, float* small) {
  constexpr int kVectors = kCount / 4;
  static_assert(!kWgmma || kVectors % kThreads == 0, "split vectors must divide evenly among the threads");
  constexpr int kPerThread = kVectors / kThreads;
  float4 x[kPerThread > 0 ? kPerThread : 1];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    x[i] = *reinterpret_cast<const float4*>(slice + (threadIdx.x + i * kThreads) * 4);
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
    *reinterpret_cast<float4*>(small + (threadIdx.x + i * kThreads) * 4) = make_float4(
        fusegen_tf32_rest(x[i].x), fusegen_tf32_rest(x[i].y), fusegen_tf32_rest(x[i].z), fusegen_tf32_rest(x[i].w));
}

// One slice's TF32 products with wgmma for this thread's warpgroup (rows
// 64 * (warp / 4) and up, over the block's width) added to `sums`,
// committed as one group.
__device__ __forceinline__ void issue_slice_wgmma(const float* slice, float (&sums)[kFragsN][4]) {
  const int group = threadIdx.x / 128;
  const unsigned long long a = gemm_descriptor(slice + group * 64 * kRowStride);
  const unsigned long long b = gemm_descriptor(slice + kBlockM * kRowStride);
#pragma unroll
  for (int k8 = 0; k8 < kTileK / 8; ++k8) {
    // k steps advance 32 bytes within the 128-byte rows: 2 in the
    // descriptor's 16-byte address units.
    const unsigned long long step = 2ull * k8;
    gemm_wgmma(sums, a + step, b + step, 1);
  }
  gemm_wgmma_commit();
}

// One slice's 3xTF32 products for this thread's warpgroup, A from registers,
// B in the slice (its big parts as the tensor cores read it) and its small
// parts in `b_small`: small*big +
// big*small + big*big added to `sums`, one commit group per k step. A's
// fragments go through two register sets: a set is refilled (shared loads
// and the split, while the previous step's products run) once the products
// two steps back, which read it, have finished.
__device__ __forceinline__ void issue_slice_wgmma_split(const float* slice, const float* b_small,
                                                        float (&sums)[kFragsN][4]) {
  const unsigned long long b = gemm_descriptor(slice + kBlockM * kRowStride);
  const unsigned long long b_rest = gemm_descriptor(b_small);
  unsigned int a_big[2][4], a_small[2][4];
#pragma unroll
  for (int k8 = 0; k8 < kTileK / 8; ++k8) {
    if (k8 >= 2)
      gemm_wgmma_wait<1>();
    load_split_a(slice, k8, a_big[k8 & 1], a_small[k8 & 1]);
    gemm_wgmma_fence(); // the fragments (and sums) were written by ordinary instructions
    const unsigned long long step = 2ull * k8; // 32 bytes in 16-byte units
    gemm_wgmma_rs(sums, a_small[k8 & 1], b + step);
    gemm_wgmma_rs(sums, a_big[k8 & 1], b_rest + step);
    gemm_wgmma_rs(sums, a_big[k8 & 1], b + step);
    gemm_wgmma_commit();
  }
}

// Waits for this warpgroup's products of a slice and adds their separate
// sums to the accumulators with rounded fp32 adds (strict precision: see
// multiply_into()).
__device__ __forceinline__ void add_slice_sums(float (&acc)[kFragsN][4], const float (&sums)[kFragsN][4]) {
  gemm_wgmma_wait<0>();
#pragma unroll
  for (int j = 0; j < kFragsN; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      acc[j][r] += sums[j][r];
}


// Starts copying slice `next` into its stage once every thread's products
// of the slice that stage held (next - kStages) have finished, and has the
// stage's "filled" barrier count this thread's copies.
template <bool kBHalves = false>
__device__ __forceinline__ void refill_stage(const FusegenArgs& args, const GemmExtents& e, long long a_base,
                                             long long b_base, long long m0, long long n0, long long next, float* smem,
                                             unsigned long long* filled, unsigned long long* freed) {
  if (next >= e.slices)
    return;
  const int stage = static_cast<int>(next % kStages);
  if (next >= kStages)
    gemm_barrier_wait(&freed[stage], static_cast<unsigned int>(next / kStages - 1) & 1u);
  copy_slice_async<kBHalves>(args, e, a_base, b_base, m0, n0, slice_k(e, next), smem + stage * kAsyncSliceFloats);
  gemm_barrier_arrive_on_copies(&filled[stage]);
}

// 3xTF32 products with wgmma where B's small parts arrive with each slice
// (kCopySmallB, v21), synchronized per stage (bench/NOTES.md v31) rather than
// by a block-wide barrier per slice. Every slice ends with a drain: its
// products go into separate sums that are added to acc with rounded fp32
// adds, as multiply_into() does. With a barrier per slice every warp waited
// there for the slowest one's drain; here a warpgroup waits only for its
// slice to land and, before refilling a stage, for both warpgroups'
// products that read it (2-3% off chain 39 strict). Copies run kStages - 1
// slices ahead: iteration s refills slice s - 1's stage after issuing its
// own products, so that it waits for the other warpgroup while they run.
__device__ __forceinline__ void accumulate_stages_wgmma(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                        long long a_base, long long b_base, long long m0, long long n0,
                                                        float (&acc)[kFragsM][kFragsN][4]) {
  constexpr int kAhead = kStages - 1;
  __shared__ unsigned long long filled[kStages], freed[kStages];
  init_stage_barriers(filled, freed);
  const long long slices = e.slices;
#pragma unroll 1
  for (long long next = 0; next < kAhead; ++next)
    refill_stage(args, e, a_base, b_base, m0, n0, next, smem, filled, freed);
#pragma unroll 1
  for (long long s = 0; s < slices; ++s) {
    const int stage = static_cast<int>(s % kStages);
    gemm_barrier_wait(&filled[stage], static_cast<unsigned int>(s / kStages) & 1u);
    gemm_fence_async_proxy(); // the tensor cores read what cp.async wrote
    float* slice = smem + stage * kAsyncSliceFloats;
    float sums[kFragsN][4] = {};
    issue_slice_wgmma_split(slice, slice + (kBlockM + kBlockN) * kRowStride, sums);
    refill_stage(args, e, a_base, b_base, m0, n0, s + kAhead, smem, filled, freed);
    add_slice_sums(acc[0], sums);
    gemm_barrier_arrive(&freed[stage]);
  }
  __syncthreads(); // shared memory is free for the epilogue, the barriers for inval
  inval_stage_barriers(filled, freed);
}

// FP16x3's pipelines (gemm/mainloop_fp16x3.cuh, included after this file).
__device__ __forceinline__ bool accumulate_stages_fp16x3(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                         long long a_base, long long b_base, long long m0,
                                                         long long n0, float (&acc)[kFragsM][kFragsN][4]);
__device__ __forceinline__ bool accumulate_split_here_fp16x3(const FusegenArgs& args, float* smem,
                                                             const GemmExtents& e, long long a_base,
                                                             long long b_base, long long m0, long long n0,
                                                             float (&acc)[kFragsM][kFragsN][4]);

// The block's products with wgmma.
//   TF32: copies run kStages - 2 slices ahead and one group of products stays
//   in flight (wait_group 1), so a stage is refilled only after the products
//   that read it, two slices back, finished in both warpgroups. The tensor
//   cores take the fp32 bits as they are (they read the tf32 part). (Per-stage
//   barriers as in accumulate_stages_wgmma() measured 4% slower here, v31.)
//   3xTF32 with B split here: copies run kStages - 1 ahead. Each landed
//   slice's B is split once (every thread a share: small parts into one of
//   two buffers, the tensor cores truncate the slice itself to the big parts)
//   while slice s's products are on the tensor cores; each warpgroup loads
//   and splits its own rows of A in registers (wgmma's register-A form), so
//   the tensor cores read only B from shared memory (bench/NOTES.md v9). The
//   products of a slice go into separate sums that are added to acc with
//   rounded fp32 adds, as multiply_into() does.
//   3xTF32 with B's small parts copied: accumulate_stages_wgmma().
//   FP16x3: accumulate_stages_fp16x3(); a block whose operands left its
//   range multiplies again with 3xTF32, splitting B here.
__device__ __forceinline__ void accumulate_block_wgmma(const FusegenArgs& args, float* smem, const GemmExtents& e,
                                                       long long batch, long long m0, long long n0,
                                                       float (&acc)[kFragsM][kFragsN][4]) {
  constexpr int kAhead = kStrict ? kStages - 1 : kStages - 2;
  static_assert(!kWgmma || kAhead >= 2, "the wgmma pipeline needs more stages");
  const long long a_base = a_offset(args, batch), b_base = b_offset(args, batch);
  const long long slices = e.slices;
  float* small = smem + kStages * kAsyncSliceFloats; // 3xTF32: two buffers of B's small parts
  constexpr int kBFloats = kBlockN * kRowStride;
  if constexpr (kCopySmallB) {
    accumulate_stages_wgmma(args, smem, e, a_base, b_base, m0, n0, acc);
  } else if constexpr (!kStrict) {
    copy_first_slices<kAhead>(args, e, a_base, b_base, m0, n0, slices, smem);
    gemm_wgmma_fence(); // acc was zeroed by ordinary instructions
#pragma unroll 1
    for (long long s = 0; s < slices; ++s) {
      fusegen_copy_wait<kAhead - 1>();
      gemm_fence_async_proxy(); // the tensor cores read what cp.async wrote
      __syncthreads();          // slice s has landed everywhere; slice s - 2's products finished
      const long long next = s + kAhead;
      if (next < slices)
        copy_slice_async(args, e, a_base, b_base, m0, n0, slice_k(e, next),
                         smem + (next % kStages) * kAsyncSliceFloats);
      fusegen_copy_commit();
      issue_slice_wgmma(smem + (s % kStages) * kAsyncSliceFloats, acc[0]);
      gemm_wgmma_wait<1>();
    }
    gemm_wgmma_wait<0>();
    fusegen_copy_wait<0>();
    __syncthreads(); // shared memory is free for the epilogue
  } else {
    if constexpr (kFp16x3) {
      const bool in_range = kBSplit ? accumulate_stages_fp16x3(args, smem, e, a_base, b_base, m0, n0, acc)
                                    : accumulate_split_here_fp16x3(args, smem, e, a_base, b_base, m0, n0, acc);
      if (in_range)
        return;
#pragma unroll
      for (int j = 0; j < kFragsN; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          acc[0][j][r] = 0.0f;
    }
    copy_first_slices<kAhead>(args, e, a_base, b_base, m0, n0, slices, smem);
    if (slices > 0) {
      fusegen_copy_wait<kAhead - 1>();
      __syncthreads(); // slice 0 has landed
      split_floats<kBFloats>(smem + kBlockM * kRowStride, small);
      gemm_fence_async_proxy(); // the tensor cores read what the split wrote
      __syncthreads();
    }
#pragma unroll 1
    for (long long s = 0; s < slices; ++s) {
      // Slice s - 1's stage: its products finished and everyone passed the
      // barrier that ended the last iteration.
      const long long next = s + kAhead;
      if (next < slices)
        copy_slice_async(args, e, a_base, b_base, m0, n0, slice_k(e, next),
                         smem + (next % kStages) * kAsyncSliceFloats);
      fusegen_copy_commit();
      float sums[kFragsN][4] = {};
      issue_slice_wgmma_split(smem + (s % kStages) * kAsyncSliceFloats, small + (s & 1) * kBFloats, sums);
      if (s + 1 < slices) {
        fusegen_copy_wait<kAhead - 1>();
        __syncthreads(); // slice s + 1 has landed
        split_floats<kBFloats>(smem + ((s + 1) % kStages) * kAsyncSliceFloats + kBlockM * kRowStride,
                               small + ((s + 1) & 1) * kBFloats);
      }
      add_slice_sums(acc[0], sums);
      gemm_fence_async_proxy();
      __syncthreads(); // the split is visible; slice s's buffers are free
    }
    fusegen_copy_wait<0>();
    __syncthreads(); // shared memory is free for the epilogue
  }
}
