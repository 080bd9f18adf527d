// Source locations and user-facing diagnostics.
//
// Every error a user can cause is reported through Diagnostics with a location,
// rendered as `file:line:col: error: message`, the offending line and a caret.
// Library code never aborts on bad input; it records a diagnostic and returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fusegen {

// A position in a buffer owned by a SourceManager. line/col are 1-based; a
// default-constructed location (line 0) means "no location".
struct SourceLoc {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t col = 0;

  bool valid() const { return line != 0; }
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

// Owns the text of every buffer that diagnostics may point into.
class SourceManager {
public:
  // Registers a buffer and returns its id for SourceLoc::file.
  uint32_t add_buffer(std::string name, std::string text);
  const std::string& name(uint32_t file) const;
  const std::string& text(uint32_t file) const;
  // The text of one line without its newline; empty if out of range.
  std::string_view line_text(uint32_t file, uint32_t line) const;

private:
  struct Buffer {
    std::string name;
    std::string text;
    std::vector<size_t> line_starts;
  };
  std::vector<Buffer> buffers_;
};

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
};

// Collects diagnostics in the order they were reported. After `max_errors`
// errors further errors are dropped (and counted) so pathological input stays
// bounded in time and output.
class Diagnostics {
public:
  explicit Diagnostics(size_t max_errors = 50) : max_errors_(max_errors) {}

  void error(SourceLoc loc, std::string message);
  void warning(SourceLoc loc, std::string message);
  void note(SourceLoc loc, std::string message);

  bool has_errors() const { return error_count_ > 0; }
  size_t error_count() const { return error_count_; }
  bool at_error_limit() const { return error_count_ >= max_errors_; }
  const std::vector<Diagnostic>& all() const { return diags_; }

  // `file:line:col: error: message`, the source line and a caret per
  // diagnostic; a trailing summary line if errors were dropped.
  std::string render(const SourceManager& sources) const;

private:
  void add(Severity severity, SourceLoc loc, std::string message);

  std::vector<Diagnostic> diags_;
  size_t error_count_ = 0;
  size_t max_errors_;
};

} // namespace fusegen
