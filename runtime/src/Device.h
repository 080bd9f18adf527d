// The device a Runtime runs on, and making a context current for a while
// without disturbing the calling thread's context stack.
#pragma once

#include "DriverApi.h"

#include <string>

namespace fusegen::runtime {

struct DeviceInfo {
  int ordinal = 0;
  CUdevice device = 0;
  int arch = 0; // compute capability as XY
  std::string name;
  int max_shared_optin = 0; // bytes of dynamic shared memory a block may opt into
  int driver_version = 0;
};

// Throws RuntimeError: NoDriver without a driver or when the ordinal names no
// device; Driver when a query fails.
DeviceInfo open_device(const DriverApi& api, int ordinal);

// Makes `context` current until destroyed, unless it already is: pushes it,
// then pops it, so the thread's context stack ends as it began.
class ContextScope {
public:
  ContextScope(const DriverApi& api, CUcontext context);
  // With the thread's current context already known (RuntimeState::call_context).
  ContextScope(const DriverApi& api, CUcontext context, CUcontext current);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

private:
  const DriverApi& api_;
  bool pushed_ = false;
};

} // namespace fusegen::runtime
