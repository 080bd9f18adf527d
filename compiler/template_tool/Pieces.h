// Embeds a template's pieces: NVRTC compiles one translation unit, so a
// template split into headers is embedded as a single text. A quoted
// `#include "x"` of a file that is not a .cu template (say
// "gemm/mainloop_wgmma.cuh"), resolved beside the including file or else in
// one of the include directories, is replaced by that file's text,
// recursively; a piece included again is
// dropped (as `#pragma once` would), and pieces' `#pragma once` lines are
// left out. Includes of .cu files (helpers.cu) stay: those are templates of
// their own, embedded separately.
#pragma once

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

namespace fusegen::template_tool {

// text[begin, end) of the embedded text is `file` from line `first_line` on.
struct Segment {
  std::string file;
  int first_line = 1;
  size_t begin = 0;
  size_t end = 0;
};

struct EmbeddedTemplate {
  std::string text;              // the template with its pieces in place
  std::vector<Segment> segments; // in order, covering text

  // The text for Clang: `#line` markers at each segment so that diagnostics
  // name the piece and line a declaration is written in.
  std::string marked_text() const;
  // Offset in marked_text() -> offset in text.
  size_t unmark(size_t marked_offset) const;
};

// `path`'s text with its pieces embedded, or "FILE:LINE:1: error: ..." for a
// piece that cannot be read or includes itself.
std::variant<EmbeddedTemplate, std::string> embed_pieces(const std::string& path, const std::string& text,
                                                         const std::vector<std::string>& include_dirs = {});

} // namespace fusegen::template_tool
