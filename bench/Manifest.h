// The warm-up manifest of the KernelBench seed chains
// (specs/kernelbench/warmup.manifest: "spec.fg N=value" per line), for the
// cache benchmarks. Header-only; FUSEGEN_SOURCE_DIR comes from CMake.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fusegen::bench {

struct ManifestItem {
  std::string spec; // path
  std::string dim;  // "N"
  int64_t value = 0;
};

inline std::vector<ManifestItem> manifest_items() {
  const std::string dir = std::string(FUSEGEN_SOURCE_DIR) + "/specs/kernelbench/";
  std::ifstream in(dir + "warmup.manifest");
  std::vector<ManifestItem> items;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream words(line);
    std::string spec, dims;
    words >> spec >> dims;
    size_t eq = dims.find('=');
    if (spec.empty() || eq == std::string::npos)
      continue;
    items.push_back({dir + spec, dims.substr(0, eq), std::stoll(dims.substr(eq + 1))});
  }
  return items;
}

} // namespace fusegen::bench
