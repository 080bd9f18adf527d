// Renders fusegen/TemplateText.h: each template's text split at its hooks,
// as C++ data of the types declared in fusegen/TemplateHooks.h.
#pragma once

#include "fusegen/TemplateHooks.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace fusegen::template_tool {

// A hook located in a template: text[begin, end) is its full declaration.
struct LocatedHook {
  std::string name;
  templates::HookKind kind;
  std::string file; // where it is written: the template or a piece of it
  int line = 0;     // in `file`
  size_t begin = 0;
  size_t end = 0;
};

struct ParsedTemplate {
  std::string file;  // file name without directories
  std::string text;  // the file's contents with its pieces embedded (Pieces.h)
  std::vector<LocatedHook> hooks;  // in source order, non-overlapping
};

// "elementwise.cu" -> "Elementwise", "layer_norm.cu" -> "LayerNorm".
std::string template_identifier(const std::string& file);

// The generated header, declaring k<Identifier> per template and
// kAllTemplates in namespace `name_space`. `templates` must be sorted by file
// name with distinct identifiers. Output depends only on the arguments, so
// rebuilds are reproducible.
std::string render_header(const std::vector<ParsedTemplate>& templates,
                          const std::string& name_space);

// Replaces `path` with `content` atomically (temporary file + rename); leaves
// the file untouched if it already holds `content`, so dependents do not
// rebuild. Returns an error message on failure.
std::optional<std::string> write_if_changed(const std::string& path, const std::string& content);

}  // namespace fusegen::template_tool
