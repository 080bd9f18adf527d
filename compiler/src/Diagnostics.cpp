#include "fusegen/Diagnostics.h"

#include <cassert>

namespace fusegen {

uint32_t SourceManager::add_buffer(std::string name, std::string text) {
  Buffer buffer{std::move(name), std::move(text), {0}};
  for (size_t i = 0; i < buffer.text.size(); ++i)
    if (buffer.text[i] == '\n')
      buffer.line_starts.push_back(i + 1);
  buffers_.push_back(std::move(buffer));
  return static_cast<uint32_t>(buffers_.size() - 1);
}

const std::string& SourceManager::name(uint32_t file) const { return buffers_.at(file).name; }
const std::string& SourceManager::text(uint32_t file) const { return buffers_.at(file).text; }

std::string_view SourceManager::line_text(uint32_t file, uint32_t line) const {
  if (file >= buffers_.size())
    return {};
  const Buffer& buffer = buffers_[file];
  if (line == 0 || line > buffer.line_starts.size())
    return {};
  size_t begin = buffer.line_starts[line - 1];
  size_t end = line < buffer.line_starts.size() ? buffer.line_starts[line] - 1 : buffer.text.size();
  std::string_view text(buffer.text);
  std::string_view result = text.substr(begin, end - begin);
  if (!result.empty() && result.back() == '\r')
    result.remove_suffix(1);
  return result;
}

void Diagnostics::add(Severity severity, SourceLoc loc, std::string message) {
  if (severity == Severity::Error) {
    ++error_count_;
    if (error_count_ > max_errors_)
      return;
  }
  diags_.push_back({severity, loc, std::move(message)});
}

void Diagnostics::error(SourceLoc loc, std::string message) { add(Severity::Error, loc, std::move(message)); }
void Diagnostics::warning(SourceLoc loc, std::string message) { add(Severity::Warning, loc, std::move(message)); }
void Diagnostics::note(SourceLoc loc, std::string message) { add(Severity::Note, loc, std::move(message)); }

namespace {

const char* severity_name(Severity severity) {
  switch (severity) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  }
  return "error";
}

// Makes a source line printable: control and non-ASCII bytes become '?' so a
// caret lines up and terminals are not confused by raw bytes. Long lines are
// cut to a window around column `col` (1-based); `caret` receives the
// caret's 0-based position in the returned text.
std::string printable_line(std::string_view line, size_t col, size_t& caret) {
  constexpr size_t kMaxShown = 240, kBefore = 120;
  size_t target = col == 0 ? 0 : col - 1;
  size_t first = target > kMaxShown - 40 ? target - kBefore : 0;
  std::string out = first > 0 ? "... " : "";
  caret = out.size() + (target - first);
  for (size_t i = first; i < line.size() && i < first + kMaxShown; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    out += (c == '\t' || (c >= 0x20 && c < 0x7f)) ? static_cast<char>(c) : '?';
  }
  if (line.size() > first + kMaxShown)
    out += " ...";
  return out;
}

// Messages can quote user text (names, strings): escape anything that is not
// printable ASCII so a spec cannot inject terminal control sequences.
std::string printable_message(std::string_view message) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (char ch : message) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

} // namespace

std::string Diagnostics::render(const SourceManager& sources) const {
  std::string out;
  for (const Diagnostic& diag : diags_) {
    if (diag.loc.valid()) {
      out += sources.name(diag.loc.file) + ":" + std::to_string(diag.loc.line) + ":" +
             std::to_string(diag.loc.col) + ": ";
    }
    out += severity_name(diag.severity);
    out += ": " + printable_message(diag.message) + "\n";
    if (!diag.loc.valid())
      continue;
    size_t caret = 0;
    std::string line = printable_line(sources.line_text(diag.loc.file, diag.loc.line), diag.loc.col, caret);
    if (line.empty())
      continue;
    out += "  " + line + "\n  ";
    for (size_t i = 0; i < caret && i < line.size(); ++i)
      out += line[i] == '\t' ? '\t' : ' ';
    out += "^\n";
  }
  if (error_count_ > max_errors_)
    out += std::to_string(error_count_ - max_errors_) + " more errors not shown\n";
  return out;
}

} // namespace fusegen
