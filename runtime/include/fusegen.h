/* fusegen C API: the JIT runtime for any language that can call C.
 *
 *   fusegen_runtime* rt;  fusegen_program* prog;  fusegen_function* fn;
 *   if (fusegen_runtime_create(0, NULL, &rt) != FUSEGEN_OK) puts(fusegen_last_error());
 *   fusegen_program_load_file(rt, "spec.fg", &prog);
 *   fusegen_program_function(prog, "gemm_groupnorm", &fn);
 *   int64_t xs[] = {1024, 8192}, ...;
 *   fusegen_tensor args[] = {{"x", x, xs, 2, FUSEGEN_FLOAT32}, ...};
 *   fusegen_tensor outs[] = {{"y", y, ys, 2, FUSEGEN_FLOAT32}};
 *   fusegen_function_call(fn, args, 3, outs, 1, stream);
 *
 * Every function returns a status (or a value that says "none"); on failure
 * fusegen_last_error() holds the message for the calling thread, with
 * file:line:col for spec errors. Nothing aborts; no C++ exception crosses
 * this boundary. Handles are independent: a program or function keeps what
 * it needs alive, so they may be destroyed in any order. Calls on one
 * function are thread-safe. The C++ API (fusegen/Runtime.h) is the primary
 * one; this is a thin layer over it. See docs/jit-api.md.
 */
#ifndef FUSEGEN_H
#define FUSEGEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FUSEGEN_API __attribute__((visibility("default")))
#else
#define FUSEGEN_API
#endif

/* Bumped when a declaration here changes incompatibly. */
#define FUSEGEN_C_API_VERSION 3 /* 2: remote_cache options, remote_* stats; 3: fusegen_runtime_tuning */

typedef enum fusegen_status {
  FUSEGEN_OK = 0,
  FUSEGEN_ERROR_SPEC = 1,      /* the spec has errors (file:line:col in the message) */
  FUSEGEN_ERROR_ARGUMENT = 2,  /* a call's tensors, names, shapes or pointers do not fit */
  FUSEGEN_ERROR_COMPILE = 3,   /* code generation or NVRTC failed */
  FUSEGEN_ERROR_NO_DRIVER = 4, /* no CUDA driver or no such device here */
  FUSEGEN_ERROR_DRIVER = 5,    /* a CUDA driver call failed */
  FUSEGEN_ERROR_IO = 6,        /* a file could not be read */
  FUSEGEN_ERROR_INVALID = 7,   /* misuse of this API: a null handle, null out-pointer, bad enum or index */
  FUSEGEN_ERROR_INTERNAL = 8   /* an unexpected failure inside fusegen (a bug; please report) */
} fusegen_status;

typedef enum fusegen_dtype { FUSEGEN_FLOAT32 = 0 } fusegen_dtype;

typedef enum fusegen_precision {
  FUSEGEN_PRECISION_DEFAULT = 0, /* each fusion's own `precision` */
  FUSEGEN_PRECISION_STRICT = 1,  /* within 1e-4 of float64 */
  FUSEGEN_PRECISION_TF32 = 2     /* tensor-core TF32 products */
} fusegen_precision;

typedef enum fusegen_tensor_kind {
  FUSEGEN_TENSOR_INPUT = 0,
  FUSEGEN_TENSOR_PARAM = 1,
  FUSEGEN_TENSOR_STATE = 2, /* read and updated in place */
  FUSEGEN_TENSOR_OUTPUT = 3
} fusegen_tensor_kind;

typedef struct fusegen_runtime fusegen_runtime;
typedef struct fusegen_program fusegen_program;
typedef struct fusegen_function fusegen_function;
typedef struct fusegen_bound_call fusegen_bound_call;

/* A tensor of a call: contiguous row-major data in device memory. */
typedef struct fusegen_tensor {
  const char* name;
  void* data;
  const int64_t* shape; /* `rank` dims */
  int32_t rank;
  int32_t dtype; /* fusegen_dtype */
} fusegen_tensor;

typedef struct fusegen_runtime_options {
  int32_t precision;      /* fusegen_precision */
  int32_t disk_cache;     /* nonzero: keep compiled kernels in the disk cache */
  const char* cache_dir;  /* NULL or "": $FUSEGEN_CACHE_DIR, $XDG_CACHE_HOME/fusegen or ~/.cache/fusegen */
  int32_t check_pointers; /* nonzero: ask the driver where every pointer lives before launching */
  int32_t autotune;       /* 1: time candidate kernels on the GPU once per (fusion, dims) and keep the fastest;
                             0: off; -1 (default): on when FUSEGEN_AUTOTUNE=1 is in the environment */
  const char* remote_cache;   /* NULL or "": $FUSEGEN_REMOTE_CACHE (redis://host:port[/db]); "off": none */
  const char* cache_key_file; /* NULL or "": $FUSEGEN_CACHE_KEY_FILE, the fleet's HMAC key; no key: no remote cache */
} fusegen_runtime_options;

typedef struct fusegen_stats {
  uint64_t calls;        /* calls that launched kernels */
  uint64_t memory_hits;  /* calls and prepares served by an already loaded module */
  uint64_t generations;  /* CUDA sources generated */
  uint64_t compiles;     /* NVRTC compilations */
  uint64_t disk_loads;   /* kernels taken from the disk cache */
  uint64_t disk_writes;  /* disk cache entries written */
  uint64_t disk_rejects; /* bad disk cache entries deleted and rebuilt */
  uint64_t tunings;      /* (fusion, dims) autotuned */
  uint64_t remote_loads; /* kernels taken from the remote cache (signature checked) */
  uint64_t remote_writes;  /* entries published to the remote cache */
  uint64_t remote_rejects; /* remote entries refused (bad signature, malformed, too large) */
  uint64_t remote_waits;   /* misses that waited for another process's compile */
} fusegen_stats;

/* One autotuning by a runtime (options.autotune): the candidate that won against the heuristic's kernels,
 * both timed by the autotuner on scratch tensors. Strings live as long as the runtime. */
typedef struct fusegen_tuning {
  const char* fusion;
  const char* dims;      /* "N=128"; "-" without dims */
  const char* chosen;    /* "heuristic", or the forced GEMM block: "128x64", "64x64:8" (split-K 8); ", fp16x3"
                            added for FP16x3 products: "heuristic, fp16x3" */
  const char* heuristic; /* "heuristic", or the forced block with the same kernels: "64x64:8 (heuristic)" */
  double chosen_ms;      /* per run of the launch sequence; 0 when nothing was timed */
  double heuristic_ms;
  const char* chosen_variants; /* each kernel's template and variant as `fusegen plan` shows them, "; " between */
  const char* heuristic_variants;
  const char* report; /* every candidate and its time */
  int32_t timed;      /* 1 when candidates were timed; 0: one candidate, or timing failed */
} fusegen_tuning;

/* Describes one tensor of a function's signature. Strings live as long as the function handle. */
typedef struct fusegen_tensor_info {
  const char* name;
  int32_t kind; /* fusegen_tensor_kind */
  int32_t rank;
  const char* const* dims; /* `rank` strings: a number ("8192") or a symbol ("N") */
} fusegen_tensor_info;

/* ---- errors and versions ---- */
FUSEGEN_API const char* fusegen_version(void);            /* "0.1.0" */
FUSEGEN_API int32_t fusegen_c_api_version(void);          /* FUSEGEN_C_API_VERSION of the library */
FUSEGEN_API const char* fusegen_status_name(int32_t status); /* "argument", ...; "unknown" otherwise */
/* The message of the last failed call on this thread ("" if none). Valid until this thread's next fusegen call. */
FUSEGEN_API const char* fusegen_last_error(void);

/* ---- runtime ---- */
FUSEGEN_API void fusegen_runtime_options_init(fusegen_runtime_options* options); /* the defaults */
/* `options` may be NULL (defaults). The device is opened on first use, so this succeeds without a GPU. */
FUSEGEN_API fusegen_status fusegen_runtime_create(int32_t device, const fusegen_runtime_options* options,
                                                  fusegen_runtime** out);
FUSEGEN_API void fusegen_runtime_destroy(fusegen_runtime* runtime); /* NULL is ignored */
FUSEGEN_API fusegen_status fusegen_runtime_stats(const fusegen_runtime* runtime, fusegen_stats* out);
/* How many autotunings the runtime did; the index-th of them (0 first; FUSEGEN_ERROR_INVALID out of range). */
FUSEGEN_API int32_t fusegen_runtime_tuning_count(const fusegen_runtime* runtime); /* -1 for NULL */
FUSEGEN_API fusegen_status fusegen_runtime_tuning(const fusegen_runtime* runtime, int32_t index, fusegen_tuning* out);
/* The disk cache directory in use; "" when off. Valid as long as the runtime. */
FUSEGEN_API const char* fusegen_runtime_cache_dir(const fusegen_runtime* runtime);
/* The device's name and compute capability (90 for sm_90). Opens the device. */
FUSEGEN_API fusegen_status fusegen_runtime_device(fusegen_runtime* runtime, const char** name, int32_t* arch);
FUSEGEN_API fusegen_status fusegen_runtime_synchronize(fusegen_runtime* runtime, void* stream);
/* Makes the work enqueued later on `stream` wait for the work enqueued so far on `producer`, without blocking the
 * host: records an event on `producer` and has `stream` wait for it. Both are CUstream (cudaStream_t) handles of this
 * runtime's device, as __cuda_array_interface__'s `stream` gives them: NULL and CU_STREAM_LEGACY ((void*)1) are the
 * legacy default stream, CU_STREAM_PER_THREAD ((void*)2) the per-thread one. When they are the same stream nothing is
 * done (and the device is not opened). The event is made once per runtime and context and reused; thread-safe. */
FUSEGEN_API fusegen_status fusegen_runtime_stream_wait(fusegen_runtime* runtime, void* stream, void* producer);

/* ---- programs ---- */
FUSEGEN_API fusegen_status fusegen_program_load_file(fusegen_runtime* runtime, const char* path,
                                                     fusegen_program** out);
/* `name` (may be NULL) is the file name used in diagnostics. */
FUSEGEN_API fusegen_status fusegen_program_load_string(fusegen_runtime* runtime, const char* text,
                                                       const char* name, fusegen_program** out);
FUSEGEN_API void fusegen_program_destroy(fusegen_program* program);
FUSEGEN_API int32_t fusegen_program_function_count(const fusegen_program* program); /* -1 for NULL */
FUSEGEN_API const char* fusegen_program_function_name(const fusegen_program* program, int32_t index); /* NULL if out of range */
FUSEGEN_API fusegen_status fusegen_program_function(const fusegen_program* program, const char* name,
                                                    fusegen_function** out);

/* ---- functions ---- */
FUSEGEN_API void fusegen_function_destroy(fusegen_function* function);
FUSEGEN_API const char* fusegen_function_name(const fusegen_function* function);
/* "name(x: f32[N, 8192], ...) -> (y: f32[N, 8192])" */
FUSEGEN_API const char* fusegen_function_signature(const fusegen_function* function);
/* Tensors of the signature: arguments (inputs, params, state in declaration order), then outputs. */
FUSEGEN_API int32_t fusegen_function_tensor_count(const fusegen_function* function); /* -1 for NULL */
FUSEGEN_API fusegen_status fusegen_function_tensor_info(const fusegen_function* function, int32_t index,
                                                        fusegen_tensor_info* out);
/* The outputs' shapes for these arguments (only names and shapes are read; data may be NULL).
 * Writes every output's dims one after another, in output order, into `shapes` (capacity entries). */
FUSEGEN_API fusegen_status fusegen_function_output_shapes(const fusegen_function* function,
                                                          const fusegen_tensor* arguments, int32_t argument_count,
                                                          int64_t* shapes, int32_t capacity);
/* Checks every tensor, then enqueues the fusion on `stream` (a CUstream or cudaStream_t; NULL is the
 * legacy default stream). State tensors are updated in place. Nothing is launched if a check fails. */
FUSEGEN_API fusegen_status fusegen_function_call(const fusegen_function* function, const fusegen_tensor* arguments,
                                                 int32_t argument_count, const fusegen_tensor* outputs,
                                                 int32_t output_count, void* stream);
/* Compiles and loads the kernels for these dim values without launching. */
FUSEGEN_API fusegen_status fusegen_function_prepare(const fusegen_function* function, const char* const* dim_names,
                                                    const int64_t* dim_values, int32_t count);

/* ---- bound calls: repeated calls of one shape ---- */
/* Binds calls with tensors of these names and shapes, in this order (data is not read), and loads their
 * kernels: each fusegen_bound_call_launch then takes only the data pointers, skipping the names and shapes
 * that fusegen_function_call matches on every call. Fails as loading fails (spec, compile, driver errors);
 * the tensors themselves are checked at launch. The bound call stays valid after the function is
 * destroyed; destroy it with fusegen_bound_call_destroy. */
FUSEGEN_API fusegen_status fusegen_function_bind(const fusegen_function* function, const fusegen_tensor* arguments,
                                                 int32_t argument_count, const fusegen_tensor* outputs,
                                                 int32_t output_count, fusegen_bound_call** out);
/* fusegen_function_call with the bound tensors and these data pointers: argument_data[i] and output_data[j]
 * for the bind's i-th argument and j-th output. The same checks, errors and results. Thread-safe. */
FUSEGEN_API fusegen_status fusegen_bound_call_launch(const fusegen_bound_call* call, const void* const* argument_data,
                                                     const void* const* output_data, void* stream);
FUSEGEN_API void fusegen_bound_call_destroy(fusegen_bound_call* call);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUSEGEN_H */
