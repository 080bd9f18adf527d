#include "SpecTable.h"

#include <fstream>

namespace fusegen::template_tool {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// Splits off the first whitespace-separated word of `s`.
std::string_view take_word(std::string_view& s) {
  s = trim(s);
  const auto end = s.find_first_of(" \t");
  const std::string_view word = s.substr(0, end);
  s = end == std::string_view::npos ? std::string_view{} : trim(s.substr(end));
  return word;
}

std::optional<templates::HookKind> parse_kind(std::string_view word) {
  for (auto kind : {templates::HookKind::Function, templates::HookKind::Constant,
                    templates::HookKind::Type})
    if (templates::hook_kind_name(kind) == word) return kind;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> SpecTable::load_spec_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return path + ": error: cannot read spec file";
  const auto fail = [&](int line, const std::string& message) {
    return path + ":" + std::to_string(line) + ": error: " + message;
  };
  // Views into strings_ stay valid: deque::push_back never moves elements.
  const auto keep = [&](std::string_view s) -> std::string_view {
    return strings_.emplace_back(s);
  };

  // Each template line: its files, which share the hook lines that follow.
  std::vector<std::pair<std::vector<std::string_view>, std::vector<templates::HookSpec>>> parsed;
  std::string raw;
  for (int line = 1; std::getline(in, raw); ++line) {
    std::string_view rest = raw;
    rest = trim(rest.substr(0, rest.find('#')));
    if (rest.empty()) continue;
    const std::string_view word = take_word(rest);
    if (word == "template") {
      std::vector<std::string_view> files;
      while (!rest.empty()) files.push_back(keep(take_word(rest)));
      if (files.empty()) return fail(line, "expected 'template FILE...'");
      parsed.push_back({std::move(files), {}});
      continue;
    }
    const auto kind = parse_kind(word);
    if (!kind) return fail(line, "unknown entry '" + std::string(word) + "'");
    if (parsed.empty()) return fail(line, "hook before any 'template' line");
    const std::string_view name = take_word(rest);
    const std::string_view decl_name = take_word(rest);
    if (name.empty() || decl_name.empty() || rest.empty())
      return fail(line, "expected 'KIND HOOK_NAME DECL_NAME SIGNATURE'");
    parsed.back().second.push_back({keep(name), *kind, keep(decl_name), keep(rest)});
  }

  for (auto& [files, hooks] : parsed) {
    const std::span<const templates::HookSpec> shared = hooks_.emplace_back(std::move(hooks));
    for (std::string_view file : files) specs_.push_back({file, shared});
  }
  return std::nullopt;
}

const templates::TemplateSpec* SpecTable::find(std::string_view file) const {
  // Later spec-file entries win, so a spec file can override itself too.
  for (auto it = specs_.rbegin(); it != specs_.rend(); ++it)
    if (it->file == file) return &*it;
  return templates::find_template_spec(file);
}

}  // namespace fusegen::template_tool
