// fusegen-template-tool: checks the hooks of CUDA templates against
// fusegen/TemplateHooks.h and embeds the templates, each with its pieces
// (Pieces.h) and split at its hooks, in a generated header. Runs at build
// time; see CMakeLists.txt.
//
//   fusegen-template-tool --out HEADER [--spec-file FILE]... [--namespace NS]
//                         [--include-dir DIR]... TEMPLATE.cu...
//
// --spec-file adds or overrides per-template hook expectations (format in
// SpecTable.h); --include-dir adds a directory where pieces not beside their
// includer are looked for (after compiler/include, always searched);
// --namespace (default fusegen::templates) lets tests generate fixture
// headers that do not clash with the real one.
// On any error it prints `FILE:LINE:COL: error: MESSAGE`, exits 1 and leaves
// HEADER alone.
#include "HeaderWriter.h"
#include "HookFinder.h"
#include "Pieces.h"
#include "SpecTable.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

namespace {

using namespace fusegen::template_tool;

struct Options {
  std::string out;
  std::vector<std::string> spec_files;
  std::vector<std::string> templates;
  std::string name_space = "fusegen::templates";
  // compiler/include: helpers.cu includes fusegen/KernelLimits.h.
  ClangSetup clang{FUSEGEN_CLANG_RESOURCE_DIR, FUSEGEN_TEMPLATE_PRELUDE, {FUSEGEN_TEMPLATE_INCLUDE_DIR}};
};

constexpr const char* kUsage =
    "usage: fusegen-template-tool --out HEADER [--spec-file FILE]... "
    "[--namespace NS] [--include-dir DIR]... [--resource-dir DIR] [--prelude FILE] TEMPLATE.cu...\n";

std::optional<Options> parse_args(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (arg == "--out" && (v = value())) options.out = v;
    else if (arg == "--spec-file" && (v = value())) options.spec_files.push_back(v);
    else if (arg == "--namespace" && (v = value())) options.name_space = v;
    else if (arg == "--include-dir" && (v = value())) options.clang.include_dirs.push_back(v);
    else if (arg == "--resource-dir" && (v = value())) options.clang.resource_dir = v;
    else if (arg == "--prelude" && (v = value())) options.clang.prelude = v;
    else if (!arg.empty() && arg[0] != '-') options.templates.push_back(arg);
    else return std::nullopt;
  }
  if (options.out.empty() || options.templates.empty()) return std::nullopt;
  return options;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  const auto options = parse_args(argc, argv);
  if (!options) {
    std::cerr << kUsage;
    return 2;
  }

  SpecTable specs;
  for (const std::string& spec_file : options->spec_files)
    if (auto failure = specs.load_spec_file(spec_file)) {
      std::cerr << *failure << "\n";
      return 1;
    }

  bool failed = false;
  std::vector<ParsedTemplate> parsed;
  std::map<std::string, std::string> path_by_identifier;  // catches name clashes
  for (const std::string& path : options->templates) {
    const std::string file = std::filesystem::path(path).filename().string();
    const auto [clash, inserted] = path_by_identifier.emplace(template_identifier(file), path);
    if (!inserted) {
      std::cerr << path << ":1:1: error: template '" << file << "' clashes with '"
                << clash->second << "' (both generate k" << clash->first << ")\n";
      failed = true;
      continue;
    }
    const auto* spec = specs.find(file);
    if (!spec) {
      std::cerr << path << ":1:1: error: no hook spec for template '" << file
                << "'; add one to compiler/include/fusegen/TemplateHooks.h\n";
      failed = true;
      continue;
    }
    auto text = read_file(path);
    if (!text) {
      std::cerr << path << ": error: cannot read template\n";
      failed = true;
      continue;
    }
    auto embedded = embed_pieces(path, *text, options->clang.include_dirs);
    if (const auto* failure = std::get_if<std::string>(&embedded)) {
      std::cerr << *failure << "\n";
      failed = true;
      continue;
    }
    const EmbeddedTemplate& whole = std::get<EmbeddedTemplate>(embedded);
    // Clang parses the embedded text (hooks may sit in pieces) with #line
    // markers, so that diagnostics and hook lines name the piece.
    auto hooks = find_hooks(path, whole.marked_text(), *spec, options->clang);
    if (!hooks) {
      failed = true;
      continue;
    }
    const std::filesystem::path template_dir = std::filesystem::path(path).parent_path();
    for (LocatedHook& hook : *hooks) {
      hook.begin = whole.unmark(hook.begin);
      hook.end = whole.unmark(hook.end);
      hook.file = std::filesystem::path(hook.file).lexically_relative(template_dir).generic_string();
    }
    parsed.push_back({file, whole.text, std::move(*hooks)});
  }
  if (failed) return 1;

  // Sorted by file name, so the header does not depend on argument order.
  std::sort(parsed.begin(), parsed.end(),
            [](const ParsedTemplate& a, const ParsedTemplate& b) { return a.file < b.file; });
  if (auto failure = write_if_changed(options->out, render_header(parsed, options->name_space))) {
    std::cerr << *failure << "\n";
    return 1;
  }
  return 0;
}
