// Lexer of the spec language: turns a buffer into tokens with locations.
//
// Lexical errors (bad bytes, unterminated strings, malformed or out-of-range
// numbers, over-long identifiers) are reported to Diagnostics here and yield an
// Error token; the parser recovers from an Error token without reporting it
// again. The lexer never reads past the buffer and always makes progress, so
// any byte sequence lexes in linear time.
#pragma once

#include "fusegen/Diagnostics.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fusegen {

enum class TokenKind {
  Eof,
  Error, // already reported by the lexer
  Identifier,
  Int,
  Float,
  String,
  // Keywords.
  KwFusion,
  KwInput,
  KwParam,
  KwState,
  KwOutput,
  KwTrue,
  KwFalse,
  KwNone,
  // Punctuation.
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Semicolon,
  Equal,
  Plus,
  Minus,
  Star,
  Slash,
};

bool is_keyword(TokenKind kind);

// Identifiers longer than this are an error (keeps messages and symbol tables sane).
inline constexpr size_t kMaxIdentifierLength = 1024;
// The largest integer literal magnitude the lexer accepts: 2^63, which is only
// valid when negated (INT64_MIN); the parser reports it otherwise.
inline constexpr uint64_t kMaxIntMagnitude = uint64_t{1} << 63;

struct Token {
  TokenKind kind = TokenKind::Eof;
  SourceLoc loc;
  std::string_view spelling;  // the token's text in the buffer
  bool starts_line = false;   // first token on its line (used for error recovery)
  uint64_t int_magnitude = 0; // Int: the value, at most kMaxIntMagnitude
  double float_value = 0.0;   // Float: finite, and nonzero unless written as zero
  std::string string_value;   // String: contents with escapes decoded
};

// A quoted, length-bounded rendering of a token for "found ..." in messages:
// `'x'`, `'('`, `string literal`, `end of file`.
std::string describe_token(const Token& token);
// `'text'`, cut to a bounded length.
std::string quote_text(std::string_view text);

class Lexer {
public:
  // `text` must outlive the lexer and its tokens (spellings point into it).
  Lexer(std::string_view text, uint32_t file, Diagnostics& diags);

  // The next token; Eof forever once the buffer is exhausted.
  Token next();

  // Bytes consumed so far (for progress checks).
  size_t offset() const { return pos_; }

private:
  char peek_char(size_t ahead = 0) const;
  void advance();
  SourceLoc here() const { return {file_, line_, col_}; }
  void skip_trivia();

  void lex_identifier(Token& token);
  void lex_number(Token& token);
  void lex_string(Token& token);
  void lex_single_quoted(Token& token);
  void lex_bad_bytes(Token& token);
  bool lex_punctuation(Token& token);
  void fail(Token& token, SourceLoc loc, std::string message);

  std::string_view text_;
  size_t pos_ = 0;
  uint32_t file_;
  uint32_t line_ = 1;
  uint32_t col_ = 1;
  bool at_line_start_ = true;
  // Where the last token ended: end-of-file errors point there rather than
  // at an empty line after the final newline.
  SourceLoc last_end_{};
  Diagnostics& diags_;
};

} // namespace fusegen
