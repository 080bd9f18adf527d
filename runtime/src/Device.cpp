#include "Device.h"

#include "fusegen/Runtime.h"

namespace fusegen::runtime {

DeviceInfo open_device(const DriverApi& api, int ordinal) {
  int count = 0;
  FUSEGEN_CU(api, cuDeviceGetCount, &count);
  if (ordinal < 0 || ordinal >= count)
    throw RuntimeError(ErrorKind::NoDriver, "no CUDA device " + std::to_string(ordinal) + " (this machine has " +
                                                std::to_string(count) + ")");
  DeviceInfo info;
  info.ordinal = ordinal;
  FUSEGEN_CU(api, cuDeviceGet, &info.device, ordinal);
  int major = 0, minor = 0;
  FUSEGEN_CU(api, cuDeviceGetAttribute, &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, info.device);
  FUSEGEN_CU(api, cuDeviceGetAttribute, &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, info.device);
  info.arch = major * 10 + minor;
  FUSEGEN_CU(api, cuDeviceGetAttribute, &info.max_shared_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
             info.device);
  char name[256] = {};
  FUSEGEN_CU(api, cuDeviceGetName, name, static_cast<int>(sizeof name - 1), info.device);
  info.name = name;
  FUSEGEN_CU(api, cuDriverGetVersion, &info.driver_version);
  return info;
}

ContextScope::ContextScope(const DriverApi& api, CUcontext context) : api_(api) {
  CUcontext current = nullptr;
  FUSEGEN_CU(api_, cuCtxGetCurrent, &current);
  if (current != context) {
    FUSEGEN_CU(api_, cuCtxPushCurrent_v2, context);
    pushed_ = true;
  }
}

ContextScope::ContextScope(const DriverApi& api, CUcontext context, CUcontext current) : api_(api) {
  if (current != context) {
    FUSEGEN_CU(api_, cuCtxPushCurrent_v2, context);
    pushed_ = true;
  }
}

ContextScope::~ContextScope() {
  if (pushed_) {
    CUcontext popped = nullptr;
    api_.cuCtxPopCurrent_v2(&popped); // nothing useful to do on failure in a destructor
  }
}

} // namespace fusegen::runtime
