// The fusegen JIT runtime: load a spec, call a fusion on device pointers, and
// the runtime specializes, generates, compiles (NVRTC), caches and launches.
//
//   fusegen::Runtime rt;                                  // device 0
//   fusegen::Program prog = rt.load_file("spec.fg");
//   fusegen::Function f = prog.function("gemm_groupnorm_leakyrelu_sum");
//   f.call({{"x", x, {1024, 8192}}, {"w", w, {8192, 8192}}, ...},
//          {{"y", y, {1024, 8192}}}, stream);
//
// Every failure is a fusegen::RuntimeError (never an abort). Calls are
// stream-ordered and thread-safe. The CUDA driver is opened at run time, so a
// machine without one can still load specs; calls then fail with
// ErrorKind::NoDriver. See docs/jit-api.md.
#pragma once

#include "fusegen/IR.h"
#include "fusegen/RemoteCacheOptions.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fusegen {

// What went wrong, for callers that react differently (e.g. tests skipping
// without a GPU). The message always says the rest.
enum class ErrorKind {
  Spec,     // the spec (or the spec at these dims) has errors; file:line:col diagnostics
  Argument, // a call's tensors, shapes or pointers do not fit the fusion
  Compile,  // code generation or NVRTC failed (message has the log and source path)
  NoDriver, // no CUDA driver or no such device on this machine
  Driver,   // a CUDA driver call failed (message names the call)
  Io,       // a file could not be read
};
const char* error_kind_name(ErrorKind kind);

// The exception every runtime function throws. (fusegen::Error is the
// compiler library's error value in Result.h.)
class RuntimeError : public std::runtime_error {
public:
  RuntimeError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

private:
  ErrorKind kind_;
};

// A tensor argument of a call: a device pointer to contiguous row-major
// float32 data of `shape`. Inputs, params and state tensors (state is updated
// in place) are all passed this way.
struct TensorArg {
  std::string name;
  const void* data = nullptr;
  std::vector<int64_t> shape;
};

// An output of a call: written by the fusion.
struct TensorOut {
  std::string name;
  void* data = nullptr;
  std::vector<int64_t> shape;
};

// A tensor of a call by reference, for callers that hold their tensors in
// other forms (the C API does): nothing is copied, and the name, data and
// shape must stay valid during the call.
struct TensorRef {
  std::string_view name;
  const void* data = nullptr; // outputs are written through it
  const int64_t* shape = nullptr;
  size_t rank = 0;
};

// One tensor of a function's signature.
enum class TensorKind { Input, Param, State, Output };
struct TensorInfo {
  std::string name;
  TensorKind kind = TensorKind::Input;
  std::vector<std::string> dims; // each a number ("8192") or a symbol ("N")
};

// Counters since the Runtime was created.
struct Stats {
  uint64_t calls = 0;        // Function::call invocations that launched kernels
  uint64_t memory_hits = 0;  // calls and prepares served by an already loaded module
  uint64_t generations = 0;  // CUDA sources generated (specialize, plan, codegen)
  uint64_t compiles = 0;     // NVRTC compilations
  uint64_t disk_loads = 0;   // kernels taken from the disk cache
  uint64_t disk_writes = 0;  // disk cache entries written
  uint64_t disk_rejects = 0; // bad disk cache entries deleted and rebuilt
  uint64_t tunings = 0;      // (fusion, dims) autotuned: candidates compiled and timed on the GPU
  uint64_t remote_loads = 0; // kernels taken from the remote cache (signature checked)
  uint64_t remote_writes = 0;  // entries this process published to the remote cache
  uint64_t remote_rejects = 0; // remote entries refused (bad signature, malformed, too large)
  uint64_t remote_waits = 0;   // misses that waited for another process's compile
};

// One autotuning by a Runtime (RuntimeOptions::autotune): which candidate
// won and how it compares with the heuristic's kernels, both timed by the
// autotuner on scratch tensors.
struct Tuning {
  std::string fusion;
  std::string dims; // "N=128" ("-" without dims)
  // The winner: "heuristic", or the forced GEMM block, "128x64" or "64x64:8"
  // (split-K 8); ", fp16x3" added where it multiplies with FP16x3 (a
  // candidate in strict precision on sm_90 when strict_product is unset):
  // "heuristic, fp16x3", "128x128:8, fp16x3".
  std::string chosen;
  std::string heuristic;          // "heuristic", or the forced block whose kernels are the same: "64x64:8 (heuristic)"
  double chosen_ms = 0;           // per run of the launch sequence; 0 when nothing was timed
  double heuristic_ms = 0;        // the same for the heuristic's kernels
  std::string chosen_variants;    // each kernel's template and variant, as `fusegen plan` shows them
  std::string heuristic_variants; // "gemm.cu: 128x128 blocks, 3xtf32 products; reduce.cu"
  std::string report;             // every candidate timed: "64x64:8 (heuristic) 0.010 ms, 128x128 0.043 ms, ..."
  bool timed = false;             // candidates were timed (false: one candidate, or timing failed)
};

struct RuntimeOptions {
  // Overrides each fusion's own precision (strict: 1e-4 of float64; tf32).
  std::optional<Precision> precision;
  // How strict GEMMs multiply: unset, the code generator's default (3xTF32),
  // and with autotuning on, FP16x3 as a candidate where the GPU has it;
  // set, that product (FP16x3 where the GPU has it, docs/kernels-gemm.md
  // "FP16x3"), also when autotuning.
  std::optional<StrictProduct> strict_product;
  // The disk cache of compiled kernels. The directory is `cache_dir` if set,
  // else $FUSEGEN_CACHE_DIR, $XDG_CACHE_HOME/fusegen or ~/.cache/fusegen;
  // FUSEGEN_CACHE=0 in the environment turns it off as well.
  bool disk_cache = true;
  std::string cache_dir;
  // The fleet's remote cache (Redis), behind the disk cache: by default
  // $FUSEGEN_REMOTE_CACHE with the key in $FUSEGEN_CACHE_KEY_FILE; off
  // without a URL or a usable key (fusegen/RemoteCacheOptions.h).
  RemoteCacheOptions remote_cache;
  // Check with the driver that every pointer is device memory of this
  // Runtime's device and that the tensor fits in its allocation.
  bool check_pointers = true;
  // Autotuning: the first time a (fusion, dims) is built, compile each
  // candidate configuration (GEMM blocks), time it on the device with
  // scratch tensors and keep the fastest, stored in the disk cache as the
  // key's autotuned entry (which later runs use with autotuning on or off).
  // Unset: on when FUSEGEN_AUTOTUNE=1 is in the environment.
  std::optional<bool> autotune;
  // Where warnings go (e.g. a corrupt cache entry was rebuilt); stderr when
  // empty. Each distinct warning is reported once.
  std::function<void(const std::string&)> warning_sink;
};

class Runtime;
class Function;
class BoundCall;
struct RuntimeState;
struct ProgramState;
struct FunctionState;

// Device memory owned by a Runtime, for tools, tests and examples (the JIT
// API itself takes the caller's pointers). Freed when destroyed.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return reinterpret_cast<void*>(static_cast<uintptr_t>(address_)); }
  float* floats() const { return static_cast<float*>(data()); }
  size_t bytes() const { return bytes_; }

private:
  friend class Runtime;
  std::shared_ptr<RuntimeState> runtime_;
  unsigned long long address_ = 0;
  size_t bytes_ = 0;
};

// One fusion of a loaded spec. A cheap, copyable handle; calls are
// thread-safe.
class Function {
public:
  const std::string& name() const;
  // Argument names (inputs, params, state in declaration order), outputs.
  std::vector<std::string> argument_names() const;
  std::vector<std::string> output_names() const;
  // "name(x: f32[N, 8192], ...) -> (y: f32[N, 8192])"
  std::string signature() const;
  // Arguments (in the order above), then outputs.
  std::vector<TensorInfo> tensors() const;

  // The outputs' shapes, in output order, for arguments of these shapes
  // (data pointers are not read). Throws ErrorKind::Argument if the shapes do
  // not fit, ErrorKind::Spec if the fusion is invalid at the dims they bind.
  std::vector<std::vector<int64_t>> output_shapes(const std::vector<TensorArg>& arguments) const;

  // Runs the fusion on `stream` (a CUstream or cudaStream_t; null is the
  // legacy default stream). Every tensor is checked before anything is
  // launched. Returns once the work is enqueued. Dims of zero with empty
  // outputs return at once.
  void call(const std::vector<TensorArg>& arguments, const std::vector<TensorOut>& outputs,
            void* stream = nullptr) const;
  // The same with the tensors by reference: `arguments` and `outputs` are
  // arrays of `argument_count` and `output_count` tensors.
  void call(const TensorRef* arguments, size_t argument_count, const TensorRef* outputs, size_t output_count,
            void* stream = nullptr) const;

  // Compiles and loads the kernels for these dim values (e.g. {{"N", 1024}})
  // without launching, so that a later call does not wait.
  void prepare(const std::map<std::string, int64_t>& dims) const;

  // Binds calls with tensors of these names and shapes, in this order (data
  // pointers are not read): their kernels are loaded now, and each launch of
  // the BoundCall takes only the data pointers. Throws what loading throws
  // (ErrorKind::Spec, Compile, Driver); everything about the tensors is
  // checked at launch, as call() checks it.
  BoundCall bind(const TensorRef* arguments, size_t argument_count, const TensorRef* outputs,
                 size_t output_count) const;

private:
  friend class Program;
  friend class BoundCall;
  std::shared_ptr<RuntimeState> runtime_;
  std::shared_ptr<const FunctionState> state_;
};

// Calls of one Function with tensors of one set of names and shapes
// (Function::bind), for callers that repeat a shape (the Python package binds
// each one it sees): a launch is call() with those tensors and the given
// data pointers, with the same checks, errors and results, but without
// matching names and shapes again. Cheap to copy; launches are thread-safe.
class BoundCall {
public:
  // `arguments[i]` and `outputs[j]` are the data of the bind's i-th argument
  // and j-th output. Pointers that call() would refuse (null, misaligned,
  // written tensors that overlap), a context other than the bind's, or
  // tensors that did not fit take call()'s own path, which words the error.
  void launch(const void* const* arguments, const void* const* outputs, void* stream = nullptr) const;

  size_t argument_count() const;
  size_t output_count() const;

private:
  friend class Function;
  struct State;
  std::shared_ptr<const State> state_;
};

// A loaded spec: its fusions by name.
class Program {
public:
  const std::string& name() const;
  std::vector<std::string> function_names() const;
  // Throws ErrorKind::Argument (listing the fusions there are) if none is named so.
  Function function(const std::string& name) const;

private:
  friend class Runtime;
  std::shared_ptr<RuntimeState> runtime_;
  std::shared_ptr<const ProgramState> state_;
};

// A device and its caches. Programs, Functions and DeviceBuffers keep the
// runtime's state alive; device resources (modules, workspaces, the primary
// context) are released when the last of them is gone.
//
// Calls use the caller's current CUDA context when it is on this device, and
// otherwise this device's primary context (pushed and popped around the work,
// so the caller's thread state is unchanged).
class Runtime {
public:
  Runtime();
  explicit Runtime(int device_ordinal, RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Parses and checks a spec. Errors are ErrorKind::Spec with every
  // diagnostic as file:line:col (ErrorKind::Io for an unreadable file).
  Program load_file(const std::string& path);
  Program load_string(const std::string& text, const std::string& name = "<string>");

  Stats stats() const;
  // Every autotuning this Runtime did, in order (a key whose autotuned entry
  // was already in a cache is not tuned again, so it is not listed).
  std::vector<Tuning> tunings() const;
  // The disk cache directory in use; empty when the disk cache is off.
  std::string cache_dir() const;

  // The device, opened on first use (these throw ErrorKind::NoDriver
  // without a driver or device).
  int device_ordinal() const;
  std::string device_name() const;
  int arch() const;           // compute capability as XY (90 for sm_90)
  int driver_version() const; // e.g. 12040

  DeviceBuffer allocate(size_t bytes);
  // Synchronous copies and fills on the legacy default stream.
  void copy_to_device(void* device_dst, const void* host_src, size_t bytes);
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes);
  void fill(void* device_dst, float value, size_t count);
  void synchronize(void* stream = nullptr);

private:
  std::shared_ptr<RuntimeState> state_;
};

} // namespace fusegen
