#include "OptionValues.h"

#include "fusegen/Target.h"

#include <charconv>

namespace fusegen::cli {

Result<int> parse_sm_arch(const std::string& text) {
  int arch = 0;
  std::string digits = text.rfind("sm_", 0) == 0 ? text.substr(3) : "";
  // sm_90a, the name generated files give for nvcc -arch, is accepted where
  // it is the target's own compile name.
  const bool arch_specific = !digits.empty() && digits.back() == 'a';
  if (arch_specific)
    digits.pop_back();
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), arch);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
    return Error{"bad --arch '" + text + "' (expected sm_80, sm_86, sm_89, sm_90, ...)"};
  Result<Target> target = target_for_arch(arch);
  if (!target)
    return Error{"--arch " + target.error()};
  if (arch_specific && target.value().compile_arch() != text)
    return Error{"bad --arch '" + text + "': fusegen targets sm_" + std::to_string(arch) + " as " +
                 target.value().compile_arch() + " (use --arch sm_" + std::to_string(arch) + ")"};
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

Result<std::optional<StrictProduct>> parse_strict_product_option(const std::string& text) {
  if (text.empty())
    return std::optional<StrictProduct>();
  if (std::optional<StrictProduct> product = parse_strict_product(text))
    return product;
  return Error{"bad --strict-product '" + text + "' (expected 3xtf32 or fp16x3)"};
}

} // namespace fusegen::cli
