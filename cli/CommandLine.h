// A small command-line parser: a subcommand, positional arguments, and
// `--name value` / `--name=value` / `--flag` options declared up front.
#pragma once

#include "fusegen/Result.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace fusegen::cli {

struct OptionSpec {
  std::string name; // without dashes
  bool takes_value = false;
  bool repeatable = false;
};

struct CommandLine {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> values; // option -> values in order
  std::set<std::string> flags;

  bool has(const std::string& name) const { return flags.count(name) || values.count(name); }
  // The last value given for an option, or `fallback`.
  std::string value(const std::string& name, const std::string& fallback = "") const;
};

// --arch: "sm_90" -> 90, for an arch fusegen supports (target_for_arch).
Result<int> parse_sm_arch(const std::string& text);

// The candidate closest to a misspelt `word` (at most two edits, and fewer
// than its length), or "" where none is: "--dimz" -> "dims".
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

// Parses `args` (without the program and subcommand names). An unknown
// option's error suggests the closest declared one.
Result<CommandLine> parse_command_line(const std::vector<std::string>& args,
                                       const std::vector<OptionSpec>& options);

} // namespace fusegen::cli
