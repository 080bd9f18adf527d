// Which hooks each template must declare: the built-in table from
// fusegen/TemplateHooks.h, optionally overridden per file by a spec file
// (--spec-file) so tests can check fixtures without touching the real table.
#pragma once

#include "fusegen/TemplateHooks.h"

#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fusegen::template_tool {

class SpecTable {
public:
  // Spec file format, one entry per line; '#' starts a comment:
  //   template FILE.cu...
  //   KIND HOOK_NAME DECL_NAME SIGNATURE...
  // KIND is function, constant or type; SIGNATURE is the rest of the line.
  // Hook lines belong to the preceding template line, shared by its files. Returns an error
  // message ("PATH:LINE: error: ...") on malformed input.
  std::optional<std::string> load_spec_file(const std::string& path);

  // Spec-file entries first, then the built-in table; nullptr if neither.
  const templates::TemplateSpec* find(std::string_view file) const;

private:
  std::deque<std::string> strings_;  // owns the text the views below point to
  std::deque<std::vector<templates::HookSpec>> hooks_;
  std::vector<templates::TemplateSpec> specs_;
};

}  // namespace fusegen::template_tool
