#include "CommandLine.h"

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

std::string CommandLine::value(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

Result<CommandLine> parse_command_line(const std::vector<std::string>& args,
                                       const std::vector<OptionSpec>& options) {
  CommandLine line;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") {
      line.positional.push_back(arg);
      continue;
    }
    // Accept -o as the one short option (`fusegen SPEC -o kernels.cu`); others are --long.
    std::string body = arg.rfind("--", 0) == 0 ? arg.substr(2) : arg.substr(1);
    std::string name = body, inline_value;
    bool has_inline = false;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      inline_value = body.substr(eq + 1);
      has_inline = true;
    }
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& option : options)
      if (option.name == name)
        spec = &option;
    if (!spec)
      return Error{"unknown option '" + arg + "' (see --help)"};
    if (!spec->takes_value) {
      if (has_inline)
        return Error{"option --" + name + " takes no value"};
      line.flags.insert(name);
      continue;
    }
    std::string value;
    if (has_inline) {
      value = inline_value;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return Error{"option " + arg + " needs a value"}; // as spelled: -o or --dims
    }
    std::vector<std::string>& slot = line.values[name];
    if (!slot.empty() && !spec->repeatable)
      return Error{"option --" + name + " given twice"};
    slot.push_back(value);
  }
  return line;
}

} // namespace fusegen::cli
