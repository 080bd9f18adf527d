#include "RuntimeCli.h"

namespace fusegen::cli {

std::string dims_summary(const DimBindings& dims) {
  std::string text;
  for (const auto& [name, value] : dims)
    text += (text.empty() ? "" : " ") + name + "=" + std::to_string(value);
  return text.empty() ? "(no dims)" : text;
}

} // namespace fusegen::cli
