#include "Warnings.h"

#include <iostream>

namespace fusegen::runtime {

Warnings::Warnings(WarningSink sink) : sink_(std::move(sink)) {}

void Warnings::warn(const std::string& message) {
  std::string line = "fusegen: warning: " + message;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!seen_.insert(line).second)
    return;
  if (sink_)
    sink_(line);
  else
    std::cerr << line << "\n" << std::flush;
}

} // namespace fusegen::runtime
