#include "codegen/CodeWriter.h"

#include <cassert>

namespace fusegen::codegen {

CodeWriter& CodeWriter::line(std::string_view text) {
  if (!text.empty())
    out_.append(static_cast<size_t>(2 * indent_), ' ');
  out_ += text;
  out_ += '\n';
  return *this;
}

CodeWriter& CodeWriter::raw(std::string_view text) {
  out_ += text;
  return *this;
}

void CodeWriter::open(std::string_view header) {
  line(header.empty() ? std::string("{") : std::string(header) + " {");
  ++indent_;
}

void CodeWriter::close(std::string_view trailer) {
  assert(indent_ > 0 && "close without open");
  --indent_;
  line("}" + std::string(trailer));
}

} // namespace fusegen::codegen
