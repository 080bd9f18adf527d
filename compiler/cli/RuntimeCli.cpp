#include "RuntimeCli.h"

#include <charconv>

namespace fusegen::cli {

Result<int> parse_sm_arch(const std::string& text) {
  int arch = 0;
  std::string digits = text.rfind("sm_", 0) == 0 ? text.substr(3) : "";
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), arch);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
    return Error{"bad --arch '" + text + "' (expected sm_80, sm_86, sm_89, sm_90, ...)"};
  if (arch < 80)
    return Error{"--arch " + text + " is not supported (fusegen targets sm_80 and newer)"};
  return arch;
}

Result<std::optional<Precision>> parse_precision(const std::string& text) {
  if (text.empty())
    return std::optional<Precision>();
  if (text == "strict")
    return std::optional<Precision>(Precision::Strict);
  if (text == "tf32")
    return std::optional<Precision>(Precision::TF32);
  return Error{"bad --precision '" + text + "' (expected strict or tf32)"};
}

std::string dims_summary(const DimBindings& dims) {
  std::string text;
  for (const auto& [name, value] : dims)
    text += (text.empty() ? "" : " ") + name + "=" + std::to_string(value);
  return text.empty() ? "(no dims)" : text;
}

} // namespace fusegen::cli
