// Runtime: construction, device queries and the device-memory helpers.
#include "fusegen/Runtime.h"

#include "RuntimeState.h"

#include <bit>
#include <utility>

namespace fusegen {

using runtime::driver;

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Spec: return "spec";
  case ErrorKind::Argument: return "argument";
  case ErrorKind::Compile: return "compile";
  case ErrorKind::NoDriver: return "no-driver";
  case ErrorKind::Driver: return "driver";
  case ErrorKind::Io: return "io";
  }
  return "?";
}

Runtime::Runtime() : Runtime(0) {}

Runtime::Runtime(int device_ordinal, RuntimeOptions options)
    : state_(std::make_shared<RuntimeState>(device_ordinal, std::move(options))) {}

Runtime::~Runtime() = default;

Stats Runtime::stats() const { return state_->stats(); }
std::vector<Tuning> Runtime::tunings() const { return state_->tuning_records(); }

std::string Runtime::cache_dir() const { return state_->disk ? state_->disk->dir() : ""; }

int Runtime::device_ordinal() const { return state_->ordinal; }
std::string Runtime::device_name() const { return state_->device().name; }
int Runtime::arch() const { return state_->device().arch; }
int Runtime::driver_version() const { return state_->device().driver_version; }

namespace {

CUdeviceptr address(const void* pointer) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer)); }

} // namespace

DeviceBuffer Runtime::allocate(size_t bytes) {
  runtime::ContextScope scope(driver(), state_->call_context());
  DeviceBuffer buffer;
  CUdeviceptr memory = 0;
  if (bytes > 0)
    FUSEGEN_CU(driver(), cuMemAlloc_v2, &memory, bytes);
  buffer.runtime_ = state_;
  buffer.address_ = memory;
  buffer.bytes_ = bytes;
  return buffer;
}

void Runtime::copy_to_device(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0)
    return;
  runtime::ContextScope scope(driver(), state_->call_context());
  FUSEGEN_CU(driver(), cuMemcpyHtoD_v2, address(device_dst), host_src, bytes);
}

void Runtime::copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0)
    return;
  runtime::ContextScope scope(driver(), state_->call_context());
  FUSEGEN_CU(driver(), cuMemcpyDtoH_v2, host_dst, address(device_src), bytes);
}

void Runtime::fill(void* device_dst, float value, size_t count) {
  if (count == 0)
    return;
  runtime::ContextScope scope(driver(), state_->call_context());
  FUSEGEN_CU(driver(), cuMemsetD32_v2, address(device_dst), std::bit_cast<unsigned int>(value), count);
}

void Runtime::synchronize(void* stream) {
  runtime::ContextScope scope(driver(), state_->call_context());
  FUSEGEN_CU(driver(), cuStreamSynchronize, static_cast<CUstream>(stream));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : runtime_(std::move(other.runtime_)), address_(std::exchange(other.address_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));
    runtime_ = std::move(other.runtime_);
    address_ = std::exchange(other.address_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (!runtime_ || address_ == 0)
    return;
  try {
    runtime::ContextScope scope(driver(), runtime_->call_context());
    driver().cuMemFree_v2(address_);
  } catch (const RuntimeError&) {
    // A destructor cannot report it; the memory goes with the context.
  }
}

} // namespace fusegen
