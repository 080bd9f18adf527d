#include "CommandLine.h"

#include "fusegen/Target.h"

#include <algorithm>
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

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

} // namespace

std::string closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 3; // at most two edits
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(word, candidate);
    if (distance < best_distance && distance < word.size()) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
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
    if (!spec) {
      std::vector<std::string> names;
      for (const OptionSpec& option : options)
        names.push_back(option.name);
      const std::string suggestion = closest_name(name, names);
      if (!suggestion.empty())
        return Error{"unknown option '" + arg + "' (did you mean " + (suggestion.size() == 1 ? "-" : "--") +
                     suggestion + "? see --help)"};
      return Error{"unknown option '" + arg + "' (see --help)"};
    }
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
