#include "Lexer.h"

#include <charconv>
#include <cstdio>
#include <system_error>

namespace fusegen {
namespace {

// Messages quote at most this many characters of a token.
constexpr size_t kMaxQuotedLength = 32;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_identifier_char(char c) { return is_identifier_start(c) || is_digit(c); }
bool is_whitespace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_printable(char c) { return c > ' ' && c < 0x7f; }

// `q` for a printable byte, `\xNN` otherwise (so messages stay printable ASCII).
std::string display_byte(char c) {
  if (c == '\'')
    return "\\'";
  if (is_printable(c))
    return std::string(1, c);
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned char>(c));
  return buffer;
}

TokenKind keyword_kind(std::string_view word) {
  static constexpr std::pair<std::string_view, TokenKind> kKeywords[] = {
      {"fusion", TokenKind::KwFusion}, {"input", TokenKind::KwInput},
      {"param", TokenKind::KwParam},   {"state", TokenKind::KwState},
      {"output", TokenKind::KwOutput}, {"true", TokenKind::KwTrue},
      {"false", TokenKind::KwFalse},   {"None", TokenKind::KwNone},
  };
  for (const auto& [spelling, kind] : kKeywords)
    if (word == spelling)
      return kind;
  return TokenKind::Identifier;
}

TokenKind punctuation_kind(char c) {
  switch (c) {
  case '(': return TokenKind::LParen;
  case ')': return TokenKind::RParen;
  case '[': return TokenKind::LBracket;
  case ']': return TokenKind::RBracket;
  case '{': return TokenKind::LBrace;
  case '}': return TokenKind::RBrace;
  case ',': return TokenKind::Comma;
  case ':': return TokenKind::Colon;
  case ';': return TokenKind::Semicolon;
  case '=': return TokenKind::Equal;
  case '+': return TokenKind::Plus;
  case '-': return TokenKind::Minus;
  case '*': return TokenKind::Star;
  case '/': return TokenKind::Slash;
  default: return TokenKind::Eof; // not punctuation
  }
}

} // namespace

std::string quote_text(std::string_view text) {
  if (text.size() <= kMaxQuotedLength)
    return "'" + std::string(text) + "'";
  return "'" + std::string(text.substr(0, kMaxQuotedLength)) + "...'";
}

bool is_keyword(TokenKind kind) { return kind >= TokenKind::KwFusion && kind <= TokenKind::KwNone; }

std::string describe_token(const Token& token) {
  switch (token.kind) {
  case TokenKind::Eof: return "end of file";
  case TokenKind::String: return "string literal";
  default: return quote_text(token.spelling);
  }
}

Lexer::Lexer(std::string_view text, uint32_t file, Diagnostics& diags)
    : text_(text), file_(file), diags_(diags) {
  // Editors may save UTF-8 with a byte-order mark; it is not part of the spec.
  if (text_.substr(0, 3) == "\xEF\xBB\xBF")
    pos_ = 3;
}

char Lexer::peek_char(size_t ahead) const {
  return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
}

void Lexer::advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    col_ = 1;
    at_line_start_ = true;
  } else {
    ++col_; // a tab or any other byte is one column
  }
  ++pos_;
}

// Skips whitespace and `#` comments.
void Lexer::skip_trivia() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (is_whitespace(c)) {
      advance();
    } else if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n')
        advance();
    } else {
      return;
    }
  }
}

Token Lexer::next() {
  skip_trivia();
  Token token;
  token.loc = here();
  token.starts_line = at_line_start_;
  at_line_start_ = false;
  size_t start = pos_;
  if (pos_ >= text_.size()) {
    token.kind = TokenKind::Eof;
    if (col_ == 1 && last_end_.valid())
      token.loc = last_end_;
    return token;
  }
  char c = text_[pos_];
  if (is_identifier_start(c))
    lex_identifier(token);
  else if (is_digit(c) || (c == '.' && is_digit(peek_char(1))))
    lex_number(token);
  else if (c == '"')
    lex_string(token);
  else if (c == '\'')
    lex_single_quoted(token);
  else if (!lex_punctuation(token))
    lex_bad_bytes(token);
  token.spelling = text_.substr(start, pos_ - start);
  last_end_ = here();
  return token;
}

void Lexer::fail(Token& token, SourceLoc loc, std::string message) {
  token.kind = TokenKind::Error;
  diags_.error(loc, std::move(message));
}

// identifier ::= [A-Za-z_][A-Za-z0-9_]*   (keywords are reserved identifiers)
void Lexer::lex_identifier(Token& token) {
  size_t start = pos_;
  while (pos_ < text_.size() && is_identifier_char(text_[pos_]))
    advance();
  std::string_view word = text_.substr(start, pos_ - start);
  if (word.size() > kMaxIdentifierLength) {
    fail(token, token.loc,
         "identifier is too long (limit " + std::to_string(kMaxIdentifierLength) + " characters)");
    return;
  }
  token.kind = keyword_kind(word);
}

// int   ::= digit+
// float ::= (digit+ '.' digit* | '.' digit+) exponent? | digit+ exponent
// exponent ::= ('e' | 'E') ('+' | '-')? digit+
void Lexer::lex_number(Token& token) {
  size_t start = pos_;
  bool is_float = false;
  uint64_t magnitude = 0;
  bool too_large = false;
  for (; pos_ < text_.size() && is_digit(text_[pos_]); advance()) {
    uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
    if (magnitude > (kMaxIntMagnitude - digit) / 10)
      too_large = true;
    else
      magnitude = magnitude * 10 + digit;
  }
  if (peek_char() == '.') {
    is_float = true;
    advance();
    while (is_digit(peek_char()))
      advance();
  }
  char after_e = peek_char(1);
  bool has_exponent =
      (peek_char() == 'e' || peek_char() == 'E') &&
      (is_digit(after_e) || ((after_e == '+' || after_e == '-') && is_digit(peek_char(2))));
  if (has_exponent) {
    is_float = true;
    advance();
    if (!is_digit(peek_char()))
      advance(); // the sign
    while (is_digit(peek_char()))
      advance();
  }
  // `12abc`, `1.2.3`, `1e`, `0x1f`: swallow the rest so it is one error.
  if (is_identifier_char(peek_char()) || peek_char() == '.') {
    while (is_identifier_char(peek_char()) || peek_char() == '.')
      advance();
    fail(token, token.loc,
         "invalid number literal " + quote_text(text_.substr(start, pos_ - start)));
    return;
  }
  std::string_view spelling = text_.substr(start, pos_ - start);
  if (is_float) {
    double value = 0.0;
    auto [end, ec] = std::from_chars(spelling.data(), spelling.data() + spelling.size(), value);
    if (ec == std::errc::result_out_of_range) {
      fail(token, token.loc, "float literal is out of range");
      return;
    }
    if (ec != std::errc() || end != spelling.data() + spelling.size()) {
      fail(token, token.loc, "invalid number literal " + quote_text(spelling));
      return;
    }
    token.kind = TokenKind::Float;
    token.float_value = value;
    return;
  }
  if (too_large) {
    fail(token, token.loc, "integer literal is too large");
    return;
  }
  token.kind = TokenKind::Int;
  token.int_magnitude = magnitude;
}

// string ::= '"' (any byte but '"', '\' or newline | escape)* '"'
// escape ::= '\"' | '\\' | '\n' | '\t'
void Lexer::lex_string(Token& token) {
  advance(); // the opening quote
  token.kind = TokenKind::String;
  while (true) {
    if (pos_ >= text_.size() || text_[pos_] == '\n') {
      fail(token, token.loc, "unterminated string literal");
      return;
    }
    char c = text_[pos_];
    if (c == '"') {
      advance();
      return;
    }
    if (c != '\\') {
      token.string_value.push_back(c);
      advance();
      continue;
    }
    SourceLoc escape_loc = here();
    advance(); // the backslash
    if (pos_ >= text_.size() || text_[pos_] == '\n')
      continue; // reported as unterminated above
    char escaped = text_[pos_];
    advance();
    switch (escaped) {
    case '"': token.string_value.push_back('"'); break;
    case '\\': token.string_value.push_back('\\'); break;
    case 'n': token.string_value.push_back('\n'); break;
    case 't': token.string_value.push_back('\t'); break;
    default:
      // Keep lexing so the closing quote is found; the token becomes an error.
      fail(token, escape_loc, "unknown escape sequence '\\" + display_byte(escaped) + "'");
      break;
    }
  }
}

bool Lexer::lex_punctuation(Token& token) {
  TokenKind kind = punctuation_kind(text_[pos_]);
  if (kind == TokenKind::Eof)
    return false;
  token.kind = kind;
  advance();
  return true;
}

// `'tanh'`: a likely Python habit. One error, and the whole quoted text (up to
// the end of the line) is skipped so it does not cascade.
void Lexer::lex_single_quoted(Token& token) {
  advance();
  while (pos_ < text_.size() && text_[pos_] != '\n' && text_[pos_] != '\'')
    advance();
  if (peek_char() == '\'')
    advance();
  fail(token, token.loc, "unexpected character '\\'' (strings use double quotes)");
}

// A run of bytes that cannot start a token (`$`, `@`, UTF-8 sequences,
// control bytes) is one error, reported at its first byte.
void Lexer::lex_bad_bytes(Token& token) {
  char first = text_[pos_];
  advance();
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    bool starts_something = is_whitespace(c) || c == '#' || c == '"' || c == '\'' ||
                            is_identifier_start(c) || is_digit(c) ||
                            punctuation_kind(c) != TokenKind::Eof ||
                            (c == '.' && is_digit(peek_char(1)));
    if (starts_something)
      break;
    advance();
  }
  fail(token, token.loc, "unexpected character '" + display_byte(first) + "'");
}

} // namespace fusegen
