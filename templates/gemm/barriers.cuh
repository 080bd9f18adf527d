// templates/gemm/barriers.cuh: mbarriers (sm_90), for the wgmma pipeline
// and split-K's pushes.
#pragma once

// ---- per-stage barriers (mbarrier, sm_90a) ----
// A stage's "filled" barrier completes once every thread's copies into it
// have landed (kThreads arrivals, each triggered by the thread's cp.async
// completing); its "freed" barrier once every thread's products that read it
// have finished (kThreads arrivals). A thread waiting on these waits for
// what it reads or overwrites, not for every warp of the block
// (bench/NOTES.md v31).

__device__ __forceinline__ void gemm_barrier_init(unsigned long long* barrier, unsigned int count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(fusegen_shared_address(barrier)), "r"(count) : "memory");
#else
  (void)barrier;
  (void)count;
#endif
}

__device__ __forceinline__ void gemm_barrier_inval(unsigned long long* barrier) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(fusegen_shared_address(barrier)) : "memory");
#else
  (void)barrier;
#endif
}

// A wgmma pipeline's "filled" and "freed" barrier per stage, each counting
// every thread: initialized by thread 0, then a block barrier.
template <int kCount>
__device__ __forceinline__ void init_stage_barriers(unsigned long long (&filled)[kCount],
                                                    unsigned long long (&freed)[kCount]) {
  if (threadIdx.x == 0)
    for (int stage = 0; stage < kCount; ++stage) {
      gemm_barrier_init(&filled[stage], kThreads);
      gemm_barrier_init(&freed[stage], kThreads);
    }
  __syncthreads(); // the barriers are initialized
}

// Invalidates them (thread 0), once every thread is past a block barrier
// that follows their last use.
template <int kCount>
__device__ __forceinline__ void inval_stage_barriers(unsigned long long (&filled)[kCount],
                                                     unsigned long long (&freed)[kCount]) {
  if (threadIdx.x == 0)
    for (int stage = 0; stage < kCount; ++stage) {
      gemm_barrier_inval(&filled[stage]);
      gemm_barrier_inval(&freed[stage]);
    }
}

// Arrives on `barrier` once every copy this thread has issued so far landed.
__device__ __forceinline__ void gemm_barrier_arrive_on_copies(unsigned long long* barrier) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(fusegen_shared_address(barrier))
               : "memory");
#else
  (void)barrier;
#endif
}

// Arrives on `barrier` (release: this thread's reads before it are done).
__device__ __forceinline__ void gemm_barrier_arrive(unsigned long long* barrier) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{ .reg .b64 state; mbarrier.arrive.shared::cta.b64 state, [%0]; }" ::"r"(fusegen_shared_address(barrier))
      : "memory");
#else
  (void)barrier;
#endif
}

// Waits (acquire, at the block's scope or with kCluster the cluster's) until
// the phase of `barrier` with parity `parity` completed.
template <bool kCluster = false>
__device__ __forceinline__ void gemm_barrier_wait(unsigned long long* barrier, unsigned int parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned int address = fusegen_shared_address(barrier);
  unsigned int done = 0;
  do {
    if constexpr (kCluster)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 "
                   "%0, 1, 0, p; }"
                   : "=r"(done)
                   : "r"(address), "r"(parity)
                   : "memory");
    else
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done)
                   : "r"(address), "r"(parity)
                   : "memory");
  } while (!done);
#else
  (void)barrier;
  (void)parity;
#endif
}
