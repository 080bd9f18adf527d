// Warnings that must not fail a call (a corrupt cache entry was rebuilt, the
// cache directory is unsafe): each distinct one is reported once, as
// "fusegen: warning: ...", to a sink (stderr by default).
#pragma once

#include <functional>
#include <mutex>
#include <set>
#include <string>

namespace fusegen::runtime {

using WarningSink = std::function<void(const std::string&)>;

class Warnings {
public:
  explicit Warnings(WarningSink sink = {});
  void warn(const std::string& message);

private:
  WarningSink sink_;
  std::mutex mutex_;
  std::set<std::string> seen_;
};

} // namespace fusegen::runtime
