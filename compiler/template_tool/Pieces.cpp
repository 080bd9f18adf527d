#include "Pieces.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace fusegen::template_tool {
namespace {

namespace fs = std::filesystem;

const std::regex kQuotedInclude(R"re(^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[ \t]*(//.*)?\r?\n?$)re");
const std::regex kPragmaOnce(R"re(^[ \t]*#[ \t]*pragma[ \t]+once[ \t]*(//.*)?\r?\n?$)re");

std::string line_marker(const Segment& segment) {
  std::string escaped;
  for (char c : segment.file) {
    if (c == '"' || c == '\\')
      escaped += '\\';
    escaped += c;
  }
  return "#line " + std::to_string(segment.first_line) + " \"" + escaped + "\"\n";
}

class Embedder {
public:
  explicit Embedder(const std::vector<std::string>& include_dirs) : include_dirs_(include_dirs) {}

  EmbeddedTemplate out;
  std::string error;

  bool embed(const std::string& path, const std::string& text) {
    stack_.push_back(key(path));
    size_t run_begin = 0;
    int run_line = 1;
    int line = 1;
    for (size_t pos = 0; pos < text.size(); ++line) {
      const size_t eol = text.find('\n', pos);
      const size_t next = eol == std::string::npos ? text.size() : eol + 1;
      const std::string current = text.substr(pos, next - pos);
      std::smatch include;
      const bool is_piece =
          std::regex_match(current, include, kQuotedInclude) && fs::path(include[1].str()).extension() != ".cu";
      // A piece's own `#pragma once` would be one in the main file once embedded.
      const bool drop = is_piece || (stack_.size() > 1 && std::regex_match(current, kPragmaOnce));
      if (drop) {
        append(path, run_line, std::string_view(text).substr(run_begin, pos - run_begin));
        if (is_piece && !embed_piece(path, line, include[1].str()))
          return false;
        run_begin = next;
        run_line = line + 1;
      }
      pos = next;
    }
    append(path, run_line, std::string_view(text).substr(run_begin));
    stack_.pop_back();
    return true;
  }

private:
  static std::string key(const std::string& path) { return fs::weakly_canonical(path).string(); }

  bool embed_piece(const std::string& from, int line, const std::string& name) {
    std::string piece = (fs::path(from).parent_path() / name).lexically_normal().string();
    for (auto dir = include_dirs_.begin(); !fs::exists(piece) && dir != include_dirs_.end(); ++dir)
      if (fs::exists(fs::path(*dir) / name))
        piece = (fs::path(*dir) / name).lexically_normal().string();
    const auto fail = [&](const std::string& message) {
      error = from + ":" + std::to_string(line) + ":1: error: " + message;
      return false;
    };
    const std::string id = key(piece);
    if (std::find(stack_.begin(), stack_.end(), id) != stack_.end())
      return fail("piece '" + name + "' includes itself");
    if (!embedded_.insert(id).second)
      return true; // already in place
    std::ifstream in(piece, std::ios::binary);
    if (!in)
      return fail("cannot read piece '" + name + "' (" + piece + ")");
    std::ostringstream contents;
    contents << in.rdbuf();
    return embed(piece, contents.str());
  }

  void append(const std::string& file, int first_line, std::string_view text) {
    if (text.empty())
      return;
    out.segments.push_back({file, first_line, out.text.size(), out.text.size() + text.size()});
    out.text += text;
  }

  const std::vector<std::string>& include_dirs_;
  std::vector<std::string> stack_; // files being embedded, outermost first
  std::set<std::string> embedded_;
};

} // namespace

std::string EmbeddedTemplate::marked_text() const {
  std::string marked;
  for (const Segment& segment : segments)
    marked += line_marker(segment) + text.substr(segment.begin, segment.end - segment.begin);
  return marked;
}

size_t EmbeddedTemplate::unmark(size_t marked_offset) const {
  size_t marked_begin = 0;
  for (const Segment& segment : segments) {
    marked_begin += line_marker(segment).size();
    const size_t length = segment.end - segment.begin;
    if (marked_offset <= marked_begin + length)
      return segment.begin + (marked_offset > marked_begin ? marked_offset - marked_begin : 0);
    marked_begin += length;
  }
  return text.size();
}

std::variant<EmbeddedTemplate, std::string> embed_pieces(const std::string& path, const std::string& text,
                                                         const std::vector<std::string>& include_dirs) {
  Embedder embedder(include_dirs);
  if (!embedder.embed(path, text))
    return embedder.error;
  return std::move(embedder.out);
}

} // namespace fusegen::template_tool
