#include "RuntimeCli.h"

namespace fusegen::cli {

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
