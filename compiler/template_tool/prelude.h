// Forced include (-include) for fusegen-template-tool's Clang parse of CUDA
// templates.
//
// Templates are compiled for real by NVRTC and nvcc, which predefine the CUDA
// keywords, vector types and device intrinsics. The tool parses them with
// Clang and -nocudainc instead (no CUDA SDK headers needed), so this file
// supplies just enough declarations for templates to type-check. Nothing here
// is ever compiled to code. When a template needs another intrinsic, declare
// it here with NVRTC's signature.
#pragma once

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __align__(n) __attribute__((aligned(n)))

// threadIdx, blockIdx, blockDim, gridDim (they convert to uint3/dim3).
#include <__clang_cuda_builtin_vars.h>

#define warpSize 32

// Vector types, with NVRTC's layout and alignment.
struct __align__(8) int2 { int x, y; };
struct __align__(16) int4 { int x, y, z, w; };
struct uint3 { unsigned int x, y, z; };
struct __align__(8) uint2 { unsigned int x, y; };
struct __align__(16) uint4 { unsigned int x, y, z, w; };
struct __align__(8) float2 { float x, y; };
struct float3 { float x, y, z; };
struct __align__(16) float4 { float x, y, z, w; };
struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1,
                                     unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

__device__ float2 make_float2(float x, float y);
__device__ float4 make_float4(float x, float y, float z, float w);
__device__ uint2 make_uint2(unsigned int x, unsigned int y);
__device__ int4 make_int4(int x, int y, int z, int w);

// Single-precision math (CUDA declares these extern "C").
extern "C" {
__device__ float expf(float);
__device__ float exp2f(float);
__device__ float expm1f(float);
__device__ float logf(float);
__device__ float log2f(float);
__device__ float log1pf(float);
__device__ float powf(float, float);
__device__ float sqrtf(float);
__device__ float rsqrtf(float);
__device__ float cbrtf(float);
__device__ float sinf(float);
__device__ float cosf(float);
__device__ float tanf(float);
__device__ float tanhf(float);
__device__ float erff(float);
__device__ float erfcf(float);
__device__ float fmaxf(float, float);
__device__ float fminf(float, float);
__device__ float fabsf(float);
__device__ float fmaf(float, float, float);
__device__ float floorf(float);
__device__ float ceilf(float);
__device__ float roundf(float);
__device__ float truncf(float);
__device__ float fmodf(float, float);
__device__ float copysignf(float, float);
__device__ float __expf(float);
__device__ float __logf(float);
__device__ float __fdividef(float, float);
__device__ float __saturatef(float);
__device__ float __frcp_rn(float);
__device__ float __int_as_float(int);
__device__ int __float_as_int(float);
__device__ float __uint_as_float(unsigned int);
__device__ unsigned int __float_as_uint(float);
__device__ int __float2int_rn(float);
__device__ int __float2int_rz(float);
__device__ float __int2float_rn(int);
}

// C++ overloads NVRTC provides.
__device__ int min(int, int);
__device__ int max(int, int);
__device__ long long min(long long, long long);
__device__ long long max(long long, long long);
__device__ float min(float, float);
__device__ float max(float, float);
__device__ bool isnan(float);
__device__ bool isinf(float);
__device__ bool isfinite(float);

// Synchronization, warp shuffles and votes.
__device__ void __syncthreads();
__device__ void __threadfence();
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned int mask = 0xffffffffu);
__device__ unsigned int __activemask();
__device__ unsigned int __ballot_sync(unsigned int mask, int predicate);
__device__ float __shfl_sync(unsigned int mask, float var, int src_lane, int width = warpSize);
__device__ int __shfl_sync(unsigned int mask, int var, int src_lane, int width = warpSize);
__device__ float __shfl_xor_sync(unsigned int mask, float var, int lane_mask,
                                 int width = warpSize);
__device__ int __shfl_xor_sync(unsigned int mask, int var, int lane_mask, int width = warpSize);
__device__ float __shfl_down_sync(unsigned int mask, float var, unsigned int delta,
                                  int width = warpSize);
__device__ int __shfl_down_sync(unsigned int mask, int var, unsigned int delta,
                                int width = warpSize);
__device__ float __shfl_up_sync(unsigned int mask, float var, unsigned int delta,
                                int width = warpSize);
__device__ int __shfl_up_sync(unsigned int mask, int var, unsigned int delta,
                              int width = warpSize);

// Atomics.
__device__ float atomicAdd(float*, float);
__device__ int atomicAdd(int*, int);
__device__ unsigned int atomicAdd(unsigned int*, unsigned int);
__device__ unsigned long long atomicAdd(unsigned long long*, unsigned long long);
__device__ int atomicMax(int*, int);
__device__ unsigned int atomicMax(unsigned int*, unsigned int);
__device__ long long atomicMax(long long*, long long);
__device__ unsigned long long atomicMax(unsigned long long*, unsigned long long);
__device__ int atomicMin(int*, int);
__device__ unsigned int atomicMin(unsigned int*, unsigned int);
__device__ long long atomicMin(long long*, long long);
__device__ unsigned long long atomicMin(unsigned long long*, unsigned long long);
__device__ int atomicExch(int*, int);
__device__ unsigned int atomicExch(unsigned int*, unsigned int);
__device__ float atomicExch(float*, float);
__device__ int atomicCAS(int*, int, int);
__device__ unsigned int atomicCAS(unsigned int*, unsigned int, unsigned int);

// Read-only cache loads.
__device__ float __ldg(const float*);
__device__ float2 __ldg(const float2*);
__device__ float4 __ldg(const float4*);
__device__ float __ldcg(const float*);
__device__ int __ldg(const int*);
__device__ int4 __ldg(const int4*);
__device__ long long __ldg(const long long*);
