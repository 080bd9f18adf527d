// fusegen device helpers, shared by every template and generated kernel:
//  * FUSEGEN_HOOK, the annotation marking a template's hook points;
//  * FusegenArgs, the one argument block every generated kernel takes;
//  * the float functions generated code calls for pointwise ops (see the
//    `cuda` entries of compiler/src/ops/Pointwise.cpp). Each follows
//    PyTorch's CUDA formula for float32 so results match eager mode; NaN
//    propagates where torch propagates it. No fast-math intrinsics: strict
//    precision must stay within 1e-4 of float64;
//  * statistics and reduction pieces more than one template uses (Welford
//    merge, a team sum over warp lanes, order-independent float atomics, the
//    last-arrival merge of partial statistics).
//
// Templates include this file under `#ifndef FUSEGEN_HELPERS_DEFINED`; the
// generator emits it once at the top of a generated file, so that include is
// skipped there. It has no hooks and compiles alone with nvcc and NVRTC.

#ifndef FUSEGEN_HELPERS_DEFINED
#define FUSEGEN_HELPERS_DEFINED

#define FUSEGEN_HOOK(name) __attribute__((annotate("fusegen_hook:" name)))

// kFusegenMaxBuffers and kFusegenMaxDims, shared with the host (found with
// -I compiler/include; fusegen-template-tool embeds it).
#include "fusegen/KernelLimits.h"

// The argument block of every generated kernel, passed by value. buf[i] is
// buffer i of the fusion's plan (arguments, outputs, workspace buffers);
// dim[i] the value of the fusion's i-th symbolic dim (sorted by name).
struct FusegenArgs {
  float* buf[kFusegenMaxBuffers];
  long long dim[kFusegenMaxDims];
};

// fusegen_grid_dependencies() is the first thing in most generated kernels.
// The runtime launches each kernel of a fusion after the first as a
// programmatic dependent launch (sm_90): it may start while the kernel
// before it still runs, and waits (fusegen_grid_wait) until that grid has
// finished and its memory writes are visible. Then it lets the kernel after
// it start early in turn (which waits the same way). A GEMM's split tail
// reads nothing the kernel before it writes: it lets the next start first
// and waits last. So does a GEMM whose products read nothing the kernels
// before it write, which also waits before its epilogue (gemm.cu
// "wait_late"). Without such a launch these are no-ops.
__device__ __forceinline__ void fusegen_grid_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void fusegen_grid_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void fusegen_grid_dependencies() {
  fusegen_grid_wait();
  fusegen_grid_launch_dependents();
}

// The shared-memory window address of `pointer` (this block's shared memory).
__device__ __forceinline__ unsigned int fusegen_shared_address(const void* pointer) {
  unsigned int address;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(address) : "l"(pointer));
  return address;
}

// cp.async (sm_80): copies into shared memory that run behind the thread's
// work, in groups it commits and waits for (gemm.cu's and skinny_gemm.cu's
// pipelines).

// Copies 16 bytes from global to shared memory without passing through
// registers; a null source writes zeros (src-size 0 reads nothing, so any
// valid address may stand in for it).
__device__ __forceinline__ void fusegen_copy16_async(float* destination, const float* source, const float* stand_in) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(fusegen_shared_address(destination)),
               "l"(source ? source : stand_in), "r"(source ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void fusegen_copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most kPending committed copy groups are still in flight.
template <int kPending>
__device__ __forceinline__ void fusegen_copy_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// Thread-block clusters (sm_90): a cluster's blocks synchronize and read
// each other's shared memory (split-K shares in gemm.cu, a long row's
// statistics in row_reduce.cu). No-ops below sm_90, where no cluster runs.

// The calling block's rank in its cluster (0 without one).
__device__ __forceinline__ unsigned int fusegen_cluster_rank() {
  unsigned int rank = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
#endif
  return rank;
}

// A cluster barrier in two halves, to do work between this thread's
// arrival and its wait for everyone else's: shared-memory writes before a
// thread arrives are visible to the whole cluster after its wait.
__device__ __forceinline__ void fusegen_cluster_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void fusegen_cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// Every thread of the cluster arrives; shared-memory writes before it are
// visible to the whole cluster after it.
__device__ __forceinline__ void fusegen_cluster_sync() {
  fusegen_cluster_arrive();
  fusegen_cluster_wait();
}

// The shared::cluster address of `pointer` (this block's shared memory) in
// the block of cluster rank `rank`.
__device__ __forceinline__ unsigned int fusegen_cluster_address(const void* pointer, unsigned int rank) {
  unsigned int address = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(address)
               : "r"(fusegen_shared_address(pointer)), "r"(rank));
#else
  (void)pointer;
  (void)rank;
#endif
  return address;
}

__device__ __forceinline__ float fusegen_cluster_load(unsigned int address) {
  float value = 0.0f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(value) : "r"(address) : "memory");
#else
  (void)address;
#endif
  return value;
}

// The sum of the float at `pointer` (this block's shared memory) over the
// same place in cluster ranks 0 .. kRanks - 1, added in rank order: every
// rank that asks gets the same sum (split-K's partial sums).
template <int kRanks>
__device__ __forceinline__ float fusegen_cluster_sum(const float* pointer) {
  float sum = fusegen_cluster_load(fusegen_cluster_address(pointer, 0));
#pragma unroll
  for (int q = 1; q < kRanks; ++q)
    sum += fusegen_cluster_load(fusegen_cluster_address(pointer, q));
  return sum;
}

__device__ __forceinline__ void fusegen_cluster_store(unsigned int address, float value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(address), "f"(value) : "memory");
#else
  (void)address;
  (void)value;
#endif
}

// The stores of an epilogue hook, deferred: the hook puts each value it
// stores, with its address, in a FusegenStores, and the template writes them
// after it has run the hook on the next elements. A store may alias a later
// load as far as the compiler knows, so it keeps them in program order; in a
// loop of hook calls each element's parameter loads then waited behind the
// element before's stores (bench/NOTES.md v51). kCount: the stores of one
// element, known to the generator. T: float, or float4 for a hook that
// stores four adjacent elements at once.
template <int kCount, typename T = float>
struct FusegenStores {
  T* at[kCount > 0 ? kCount : 1] = {}; // null: nothing to store (a hook may return early)
  T value[kCount > 0 ? kCount : 1];

  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int i = 0; i < kCount; ++i)
      at[i] = nullptr;
  }

  __device__ __forceinline__ void write() const {
#pragma unroll
    for (int i = 0; i < kCount; ++i)
      if (at[i])
        *at[i] = value[i];
  }
};

__device__ __forceinline__ float fusegen_is_nan(float x) { return x != x; }

__device__ __forceinline__ float fusegen_maximum(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
}

__device__ __forceinline__ float fusegen_minimum(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fc00000) : fminf(a, b);
}

// torch.clamp: min(max(x, lo), hi), so hi wins when lo > hi; NaN stays NaN.
__device__ __forceinline__ float fusegen_clamp(float x, float lo, float hi) {
  return x != x ? x : fminf(fmaxf(x, lo), hi);
}

__device__ __forceinline__ float fusegen_relu(float x) { return (x > 0.0f || x != x) ? x : 0.0f; }

__device__ __forceinline__ float fusegen_leaky_relu(float x, float slope) {
  return x > 0.0f ? x : x * slope;
}

__device__ __forceinline__ float fusegen_gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.707106781186547524f));
}

__device__ __forceinline__ float fusegen_gelu_tanh(float x) {
  const float kBeta = 0.797884560802865355f; // sqrt(2 / pi)
  const float kKappa = 0.044715f;
  return 0.5f * x * (1.0f + tanhf(kBeta * (x + kKappa * x * x * x)));
}

__device__ __forceinline__ float fusegen_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float fusegen_silu(float x) { return x / (1.0f + expf(-x)); }

__device__ __forceinline__ float fusegen_mish(float x) { return x * tanhf(log1pf(expf(x))); }

__device__ __forceinline__ float fusegen_softplus(float x, float beta, float threshold) {
  return x * beta > threshold ? x : log1pf(expf(x * beta)) / beta;
}

__device__ __forceinline__ float fusegen_hardsigmoid(float x) {
  return fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
}

__device__ __forceinline__ float fusegen_hardswish(float x) {
  return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
}

__device__ __forceinline__ float fusegen_elu(float x, float alpha) {
  return x > 0.0f ? x : alpha * expm1f(x);
}

// 1/sqrt rounded twice is closer to float64 than the approximate rsqrtf.
__device__ __forceinline__ float fusegen_rsqrt(float x) { return 1.0f / sqrtf(x); }

// Sum over a team of kLanes adjacent lanes (a power of two <= 32), every lane
// of the team taking part. The xor butterfly leaves the same, order-fixed sum
// in every lane of the team.
template <int kLanes>
__device__ __forceinline__ float fusegen_team_sum(float value) {
#pragma unroll
  for (int offset = 1; offset < kLanes; offset <<= 1)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

// Welford/Chan statistics: count, mean, M2 (sum of squared deviations).
struct FusegenWelford {
  float count;
  float mean;
  float m2;
};

__device__ __forceinline__ FusegenWelford fusegen_welford_add(FusegenWelford s, float x) {
  s.count += 1.0f;
  float delta = x - s.mean;
  s.mean += delta / s.count;
  s.m2 += delta * (x - s.mean);
  return s;
}

// fp32 -> tf32 rounded to nearest (ties away), as a 32-bit pattern. Before
// sm_80, where no tensor core reads tf32, the bits as they are.
__device__ __forceinline__ unsigned int fusegen_tf32_bits(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned int bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return bits;
#else
  return __float_as_uint(x);
#endif
}

// x - trunc_tf32(x) rounded to tf32 (to nearest, ties away): the small part
// of x's 3xTF32 split when the tensor cores read x itself as the big part
// (they drop its low 13 bits). Used by the GEMM's in-loop split of B and by
// the pass that splits B once per call, so both give the same bits.
__device__ __forceinline__ float fusegen_tf32_rest(float x) {
  return __uint_as_float(fusegen_tf32_bits(x - __uint_as_float(__float_as_uint(x) & 0xffffe000u)));
}

// x0, x1 -> hi (fp16 pair, x0 in the low half) and lo = (x - hi) * 2^11
// (fp16 pair): FP16x3's split, exact to 2^-22 |x| for 2^-14 <= |x| < 65504
// (templates/gemm/mainloop_fp16x3.cuh). Used by the GEMM's split of A and
// by the pass that splits B once per call, so both give the same bits.
__device__ __forceinline__ void fusegen_fp16x3_split2(float x0, float x1, unsigned int& hi, unsigned int& lo) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float h0, h1;
  asm("{\n.reg .f16 l, h;\ncvt.rn.f16x2.f32 %0, %3, %2;\nmov.b32 {l, h}, %0;\ncvt.f32.f16 %1, l;\n}"
      : "=r"(hi), "=f"(h0)
      : "f"(x0), "f"(x1));
  asm("{\n.reg .f16 l, h;\nmov.b32 {l, h}, %1;\ncvt.f32.f16 %0, h;\n}" : "=f"(h1) : "r"(hi));
  asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(lo) : "f"((x0 - h0) * 2048.0f), "f"((x1 - h1) * 2048.0f));
#else
  (void)x0;
  (void)x1;
  hi = lo = 0;
#endif
}

// The partial statistics (count, mean, M2) stored at p.
__device__ __forceinline__ FusegenWelford fusegen_welford_at(const float* p) { return FusegenWelford{p[0], p[1], p[2]}; }

// Chan et al.: merge two partial statistics without cancellation.
__device__ __forceinline__ FusegenWelford fusegen_welford_merge(FusegenWelford a, FusegenWelford b) {
  if (b.count == 0.0f) return a;
  if (a.count == 0.0f) return b;
  FusegenWelford r;
  r.count = a.count + b.count;
  float delta = b.mean - a.mean;
  float weight = b.count / r.count;
  r.mean = a.mean + delta * weight;
  r.m2 = a.m2 + b.m2 + delta * delta * a.count * weight;
  return r;
}

// Order-independent float atomics for row minimum/maximum across tiles: the
// integer order of IEEE floats matches their value order when the sign bit is
// clear and reverses when it is set. Test the sign bit, not `value >= 0`:
// -0.0 compares equal to 0 but has the sign bit set.
__device__ __forceinline__ void fusegen_atomic_min(float* address, float value) {
  if (__float_as_int(value) >= 0)
    atomicMin(reinterpret_cast<int*>(address), __float_as_int(value));
  else
    atomicMax(reinterpret_cast<unsigned int*>(address), __float_as_uint(value));
}

__device__ __forceinline__ void fusegen_atomic_max(float* address, float value) {
  if (__float_as_int(value) >= 0)
    atomicMax(reinterpret_cast<int*>(address), __float_as_int(value));
  else
    atomicMin(reinterpret_cast<unsigned int*>(address), __float_as_uint(value));
}

// Last-arrival statistics merge: a kernel that produces partial statistics
// and finalizes them itself (a GEMM ahead of a training batch_norm) has each
// block arrive on a counter once its partials are written; the block that
// arrives last merges them, so no finalize kernel is launched.
//
// Whether this block is the last of `expected` arrivals on `counter`: every
// thread of the block calls it, once its writes are done, and all get the
// same answer. The last arrival sets the counter back to 0, so it is zero
// for the next launch too (the runtime zeroes workspaces when it allocates
// them). __threadfence before the atomic publishes this block's writes; the
// one after it, in the last block, orders its reads after everyone's.
__device__ __forceinline__ bool fusegen_arrive_last(unsigned int* counter, unsigned int expected) {
  __shared__ int fusegen_last_arrival;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned int earlier = atomicAdd(counter, 1u);
    fusegen_last_arrival = earlier + 1u == expected;
    if (fusegen_last_arrival)
      atomicExch(counter, 0u);
  }
  __syncthreads();
  const bool last = fusegen_last_arrival != 0;
  __syncthreads(); // the flag is rewritten by the block's next arrival
  if (last)
    __threadfence();
  return last;
}

// The partial triple at `p`, written by another block of this kernel: read
// through L2 (ld.global.cg), never from a stale L1 line.
__device__ __forceinline__ FusegenWelford fusegen_welford_at_coherent(const float* p) {
  return FusegenWelford{__ldcg(p), __ldcg(p + 1), __ldcg(p + 2)};
}

// Merges `parts` triples for each of `rows` rows in a fixed order, whatever
// the scheduling: thread (part lane l, row lane r) merges parts l, l + L, ...
// of row first + r, then the L lanes of a row combine in a tree through
// `lanes` (kBlockThreads FusegenWelford in shared memory). part(row, p)
// points to a triple; done(row, total) takes each row's result.
template <int kBlockThreads, class Part, class Done>
__device__ __forceinline__ void fusegen_merge_rows(long long rows, long long parts, FusegenWelford* lanes, Part part,
                                                   Done done) {
  constexpr int kRowLanes = 32, kPartLanes = kBlockThreads / kRowLanes;
  static_assert(kBlockThreads % 32 == 0 && (kPartLanes & (kPartLanes - 1)) == 0,
                "a whole number of warps, a power of 2 of them");
  const int row_lane = static_cast<int>(threadIdx.x) % kRowLanes, part_lane = static_cast<int>(threadIdx.x) / kRowLanes;
  for (long long first = 0; first < rows; first += kRowLanes) {
    const long long row = first + row_lane;
    FusegenWelford acc = {0.0f, 0.0f, 0.0f};
    if (row < rows)
      for (long long p = part_lane; p < parts; p += kPartLanes)
        acc = fusegen_welford_merge(acc, fusegen_welford_at_coherent(part(row, p)));
    lanes[part_lane * kRowLanes + row_lane] = acc;
    __syncthreads();
    for (int half = kPartLanes / 2; half > 0; half /= 2) {
      if (part_lane < half)
        lanes[part_lane * kRowLanes + row_lane] = fusegen_welford_merge(
            lanes[part_lane * kRowLanes + row_lane], lanes[(part_lane + half) * kRowLanes + row_lane]);
      __syncthreads();
    }
    if (part_lane == 0 && row < rows)
      done(row, lanes[row_lane]);
    __syncthreads(); // `lanes` is reused by the next rows
  }
}

// A training batch_norm's statistics finalized by the kernel that writes
// their partials, per (sample, part, channel) (a convolution's epilogue;
// part(sample, p, channel) points to a triple): the last block of each
// sample to arrive merges the sample's `parts` into sample_slot(sample,
// channel), and the last of those merges the samples and hands each
// channel's total to finalize(channel, total). `counters` holds samples + 1
// counters, zero between launches; `lanes` is kBlockThreads triples of
// shared memory that the block no longer uses. Two levels, so that no block
// merges every partial alone after the others are done.
template <int kBlockThreads, class Part, class SampleSlot, class Finalize>
__device__ __forceinline__ void fusegen_finalize_sample_stats(unsigned int* counters, long long sample,
                                                              long long samples, long long channels, long long parts,
                                                              unsigned int arrivals_per_sample, FusegenWelford* lanes,
                                                              Part part, SampleSlot sample_slot, Finalize finalize) {
  if (!fusegen_arrive_last(counters + sample, arrivals_per_sample))
    return;
  fusegen_merge_rows<kBlockThreads>(
      channels, parts, lanes, [&](long long channel, long long p) { return part(sample, p, channel); },
      [&](long long channel, FusegenWelford total) {
        float* slot = sample_slot(sample, channel);
        slot[0] = total.count;
        slot[1] = total.mean;
        slot[2] = total.m2;
      });
  if (!fusegen_arrive_last(counters + samples, static_cast<unsigned int>(samples)))
    return;
  fusegen_merge_rows<kBlockThreads>(
      channels, samples, lanes, [&](long long channel, long long n) { return sample_slot(n, channel); }, finalize);
}

#endif // FUSEGEN_HELPERS_DEFINED
