#include "CacheKey.h"

#include "fusegen/GeneratorIdentity.h"
#include "fusegen/Sha256.h"

#include <sstream>

namespace fusegen::runtime {

const char* generator_identity() { return FUSEGEN_GENERATOR_IDENTITY; }

std::string dims_text(const DimBindings& dims) {
  std::string text;
  for (const auto& [name, value] : dims)
    text += (text.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return text.empty() ? "-" : text;
}

std::string CacheKey::material() const {
  std::string out = "fusegen-cache-key\n";
  out += "schema=" + std::to_string(schema) + "\n";
  out += "fusegen=" + fusegen_version + "\n";
  out += "generator=" + generator + "\n";
  out += "nvrtc=" + nvrtc_version + "\n";
  out += "arch=sm_" + std::to_string(arch) + "\n";
  out += "target=" + target + "\n";
  out += "fusion=" + fusion + "\n";
  out += "fingerprint=" + fingerprint + "\n";
  out += "dims=" + dims_text(dims) + "\n";
  out += std::string("precision=") + precision_name(precision) + "\n";
  out += std::string("tuning=") + (autotuned ? "autotuned" : "heuristic") + "\n";
  out += std::string("products=") + (strict_product ? strict_product_name(*strict_product) : "default") + "\n";
  for (const std::string& option : nvrtc_options)
    out += "option=" + option + "\n";
  return out;
}

std::string CacheKey::file_name() const { return sha256_hex(material()) + ".fgc"; }

std::string describe_key_difference(const std::string& found, const std::string& expected) {
  std::istringstream a(found), b(expected);
  std::string line_a, line_b;
  while (true) {
    bool more_a = static_cast<bool>(std::getline(a, line_a));
    bool more_b = static_cast<bool>(std::getline(b, line_b));
    if (!more_a && !more_b)
      return "same key";
    if (!more_a)
      line_a = "(nothing)";
    if (!more_b)
      line_b = "(nothing)";
    if (line_a != line_b)
      return line_a + " (expected " + line_b + ")";
  }
}

std::string key_field(const std::string& material, const std::string& field) {
  std::istringstream lines(material);
  std::string line;
  const std::string prefix = field + "=";
  while (std::getline(lines, line))
    if (line.rfind(prefix, 0) == 0)
      return line.substr(prefix.size());
  return "";
}

} // namespace fusegen::runtime
