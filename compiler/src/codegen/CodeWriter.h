// A tiny writer for generated source: lines, indentation and scopes.
#pragma once

#include <string>
#include <string_view>

namespace fusegen::codegen {

class CodeWriter {
public:
  explicit CodeWriter(int indent = 0) : indent_(indent) {}

  // Appends one line at the current indentation (empty lines stay empty).
  CodeWriter& line(std::string_view text = {});
  // Appends text verbatim (no indentation, no newline).
  CodeWriter& raw(std::string_view text);
  // `header {` ... `}` with the body indented; `close` follows the brace.
  void open(std::string_view header);
  void close(std::string_view trailer = {});
  void indent() { ++indent_; }
  void dedent() { --indent_; }

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

private:
  std::string out_;
  int indent_;
};

} // namespace fusegen::codegen
