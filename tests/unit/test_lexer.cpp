// Tests of the spec lexer (compiler/src/Lexer.h, a private header).
#include "../../compiler/src/Lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fusegen {
namespace {

// Lexes `text` to the end; the returned tokens end with Eof.
std::vector<Token> lex(std::string_view text, Diagnostics& diags) {
  Lexer lexer(text, 0, diags);
  std::vector<Token> tokens;
  do {
    tokens.push_back(lexer.next());
  } while (tokens.back().kind != TokenKind::Eof);
  return tokens;
}

std::vector<TokenKind> kinds(const std::vector<Token>& tokens) {
  std::vector<TokenKind> result;
  for (const Token& token : tokens)
    result.push_back(token.kind);
  return result;
}

// "line:col: message" per diagnostic.
std::vector<std::string> messages(const Diagnostics& diags) {
  std::vector<std::string> result;
  for (const Diagnostic& diag : diags.all())
    result.push_back(std::to_string(diag.loc.line) + ":" + std::to_string(diag.loc.col) + ": " +
                     diag.message);
  return result;
}

// The single token `text` lexes to (before Eof), with no diagnostics.
Token lex_one(std::string_view text) {
  Diagnostics diags;
  std::vector<Token> tokens = lex(text, diags);
  EXPECT_EQ(tokens.size(), 2u) << text;
  EXPECT_FALSE(diags.has_errors()) << text << ": " << diags.all().front().message;
  return tokens.front();
}

// The messages of lexing `text`, which must produce an Error token.
std::vector<std::string> lex_errors(std::string_view text) {
  Diagnostics diags;
  std::vector<Token> tokens = lex(text, diags);
  bool has_error_token = false;
  for (const Token& token : tokens)
    has_error_token |= token.kind == TokenKind::Error;
  EXPECT_TRUE(has_error_token) << text;
  return messages(diags);
}

using Kinds = std::vector<TokenKind>;
using Messages = std::vector<std::string>;

TEST(Lexer, EmptyInputIsEof) {
  Diagnostics diags;
  std::vector<Token> tokens = lex("", diags);
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0].kind, TokenKind::Eof);
  EXPECT_EQ(tokens[0].loc, (SourceLoc{0, 1, 1}));
  EXPECT_FALSE(diags.has_errors());
}

TEST(Lexer, EofRepeats) {
  Diagnostics diags;
  Lexer lexer("x", 0, diags);
  EXPECT_EQ(lexer.next().kind, TokenKind::Identifier);
  EXPECT_EQ(lexer.next().kind, TokenKind::Eof);
  EXPECT_EQ(lexer.next().kind, TokenKind::Eof);
}

TEST(Lexer, Punctuation) {
  Diagnostics diags;
  EXPECT_EQ(kinds(lex("( ) [ ] { } , : ; = + - * /", diags)),
            (Kinds{TokenKind::LParen, TokenKind::RParen, TokenKind::LBracket, TokenKind::RBracket,
                   TokenKind::LBrace, TokenKind::RBrace, TokenKind::Comma, TokenKind::Colon,
                   TokenKind::Semicolon, TokenKind::Equal, TokenKind::Plus, TokenKind::Minus,
                   TokenKind::Star, TokenKind::Slash, TokenKind::Eof}));
  EXPECT_FALSE(diags.has_errors());
}

TEST(Lexer, KeywordsAndIdentifiers) {
  Diagnostics diags;
  std::vector<Token> tokens =
      lex("fusion input param state output true false None none Fusion _x x1 f32", diags);
  EXPECT_EQ(kinds(tokens),
            (Kinds{TokenKind::KwFusion, TokenKind::KwInput, TokenKind::KwParam, TokenKind::KwState,
                   TokenKind::KwOutput, TokenKind::KwTrue, TokenKind::KwFalse, TokenKind::KwNone,
                   TokenKind::Identifier, TokenKind::Identifier, TokenKind::Identifier,
                   TokenKind::Identifier, TokenKind::Identifier, TokenKind::Eof}));
  EXPECT_EQ(tokens[8].spelling, "none");
  EXPECT_EQ(tokens[11].spelling, "x1");
  EXPECT_TRUE(is_keyword(TokenKind::KwFusion));
  EXPECT_TRUE(is_keyword(TokenKind::KwNone));
  EXPECT_FALSE(is_keyword(TokenKind::Identifier));
  EXPECT_FALSE(is_keyword(TokenKind::LParen));
}

TEST(Lexer, IntegerLiterals) {
  Token zero = lex_one("0");
  EXPECT_EQ(zero.kind, TokenKind::Int);
  EXPECT_EQ(zero.int_magnitude, 0u);
  EXPECT_EQ(lex_one("8192").int_magnitude, 8192u);
  EXPECT_EQ(lex_one("007").int_magnitude, 7u);
  EXPECT_EQ(lex_one("9223372036854775807").int_magnitude, 9223372036854775807u);
  // 2^63 lexes (it is INT64_MIN when negated); the parser rejects it unnegated.
  EXPECT_EQ(lex_one("9223372036854775808").int_magnitude, kMaxIntMagnitude);
}

TEST(Lexer, IntegerTooLarge) {
  EXPECT_EQ(lex_errors("9223372036854775809"), (Messages{"1:1: integer literal is too large"}));
  EXPECT_EQ(lex_errors("  99999999999999999999999999"),
            (Messages{"1:3: integer literal is too large"}));
}

TEST(Lexer, FloatLiterals) {
  struct Case {
    const char* text;
    double value;
  };
  for (const Case& c :
       {Case{"1e-5", 1e-5}, Case{"0.5", 0.5}, Case{".5", 0.5}, Case{"5.", 5.0}, Case{"1E3", 1000.0},
        Case{"1e+3", 1000.0}, Case{"2.5e-3", 2.5e-3}, Case{"1.e2", 100.0}, Case{"0.0", 0.0},
        Case{"1.0", 1.0}, Case{"0e999", 0.0}, Case{"4.9e-324", 4.9e-324}}) {
    Token token = lex_one(c.text);
    EXPECT_EQ(token.kind, TokenKind::Float) << c.text;
    EXPECT_EQ(token.float_value, c.value) << c.text;
    EXPECT_EQ(token.spelling, c.text);
  }
}

TEST(Lexer, FloatOutOfRange) {
  EXPECT_EQ(lex_errors("1e400"), (Messages{"1:1: float literal is out of range"}));
  EXPECT_EQ(lex_errors("1e-400"), (Messages{"1:1: float literal is out of range"}));
  EXPECT_EQ(lex_errors("x 1.5e99999999999999999999"),
            (Messages{"1:3: float literal is out of range"}));
}

TEST(Lexer, InvalidNumberLiterals) {
  EXPECT_EQ(lex_errors("12abc"), (Messages{"1:1: invalid number literal '12abc'"}));
  EXPECT_EQ(lex_errors("1.2.3"), (Messages{"1:1: invalid number literal '1.2.3'"}));
  EXPECT_EQ(lex_errors("0x1f"), (Messages{"1:1: invalid number literal '0x1f'"}));
  EXPECT_EQ(lex_errors("1_000"), (Messages{"1:1: invalid number literal '1_000'"}));
  EXPECT_EQ(lex_errors("1e"), (Messages{"1:1: invalid number literal '1e'"}));
  EXPECT_EQ(lex_errors("1e+"), (Messages{"1:1: invalid number literal '1e'"}));
  // Long spellings are cut in messages.
  EXPECT_EQ(lex_errors(std::string(40, '1') + "x"),
            (Messages{"1:1: invalid number literal '" + std::string(32, '1') + "...'"}));
}

TEST(Lexer, NumberThenOperator) {
  Diagnostics diags;
  std::vector<Token> tokens = lex("1-2 1e-5-3", diags);
  EXPECT_EQ(kinds(tokens),
            (Kinds{TokenKind::Int, TokenKind::Minus, TokenKind::Int, TokenKind::Float,
                   TokenKind::Minus, TokenKind::Int, TokenKind::Eof}));
  EXPECT_FALSE(diags.has_errors());
}

TEST(Lexer, StringLiterals) {
  Token plain = lex_one("\"tanh\"");
  EXPECT_EQ(plain.kind, TokenKind::String);
  EXPECT_EQ(plain.string_value, "tanh");
  EXPECT_EQ(plain.spelling, "\"tanh\"");
  EXPECT_EQ(lex_one("\"\"").string_value, "");
  EXPECT_EQ(lex_one(R"("a\"b\\c\nd\te")").string_value, "a\"b\\c\nd\te");
  // Any byte but a newline is allowed inside a string, including '#'.
  EXPECT_EQ(lex_one("\"# \xc3\xa9 $\"").string_value, "# \xc3\xa9 $");
}

TEST(Lexer, UnterminatedString) {
  EXPECT_EQ(lex_errors("x = \"abc"), (Messages{"1:5: unterminated string literal"}));
  EXPECT_EQ(lex_errors("\"abc\ny"), (Messages{"1:1: unterminated string literal"}));
  EXPECT_EQ(lex_errors("\"abc\\"), (Messages{"1:1: unterminated string literal"}));
  // The newline is not swallowed: the next line lexes normally.
  Diagnostics diags;
  std::vector<Token> tokens = lex("\"abc\ny", diags);
  EXPECT_EQ(kinds(tokens), (Kinds{TokenKind::Error, TokenKind::Identifier, TokenKind::Eof}));
  EXPECT_EQ(tokens[1].loc, (SourceLoc{0, 2, 1}));
}

TEST(Lexer, UnknownEscape) {
  EXPECT_EQ(lex_errors(R"("a\qb")"), (Messages{"1:3: unknown escape sequence '\\q'"}));
  EXPECT_EQ(lex_errors("\"\\\x01\""), (Messages{"1:2: unknown escape sequence '\\\\x01'"}));
  // The string still ends at its closing quote.
  Diagnostics diags;
  EXPECT_EQ(kinds(lex(R"("\q" x)", diags)),
            (Kinds{TokenKind::Error, TokenKind::Identifier, TokenKind::Eof}));
}

TEST(Lexer, CommentsAndWhitespace) {
  Diagnostics diags;
  std::vector<Token> tokens = lex("# header\n  a # trailing $ \xff\n\tb\r\n#end", diags);
  EXPECT_EQ(kinds(tokens), (Kinds{TokenKind::Identifier, TokenKind::Identifier, TokenKind::Eof}));
  EXPECT_EQ(tokens[0].loc, (SourceLoc{0, 2, 3}));
  EXPECT_EQ(tokens[1].loc, (SourceLoc{0, 3, 2})); // a tab is one column
  EXPECT_FALSE(diags.has_errors());
}

TEST(Lexer, LocationsAndLineStarts) {
  Diagnostics diags;
  Lexer lexer("fusion f {\n  input x : f32[N]\n}", 7, diags);
  std::vector<Token> tokens;
  do {
    tokens.push_back(lexer.next());
  } while (tokens.back().kind != TokenKind::Eof);
  ASSERT_EQ(tokens.size(), 12u);
  EXPECT_EQ(tokens[0].loc, (SourceLoc{7, 1, 1}));
  EXPECT_TRUE(tokens[0].starts_line);
  EXPECT_EQ(tokens[1].loc, (SourceLoc{7, 1, 8}));
  EXPECT_FALSE(tokens[1].starts_line);
  EXPECT_EQ(tokens[3].loc, (SourceLoc{7, 2, 3})); // input
  EXPECT_TRUE(tokens[3].starts_line);
  EXPECT_EQ(tokens[7].loc, (SourceLoc{7, 2, 16})); // [
  EXPECT_EQ(tokens[9].loc, (SourceLoc{7, 2, 18})); // ]
  EXPECT_EQ(tokens[10].loc, (SourceLoc{7, 3, 1})); // }
  EXPECT_TRUE(tokens[10].starts_line);
  EXPECT_EQ(tokens[11].kind, TokenKind::Eof);
}

TEST(Lexer, BadCharacters) {
  EXPECT_EQ(lex_errors("a $ b"), (Messages{"1:3: unexpected character '$'"}));
  EXPECT_EQ(lex_errors("\x01"), (Messages{"1:1: unexpected character '\\x01'"}));
  EXPECT_EQ(lex_errors("x\x7f"), (Messages{"1:2: unexpected character '\\x7f'"}));
  EXPECT_EQ(lex_errors(std::string("a\0b", 3)), (Messages{"1:2: unexpected character '\\x00'"}));
  EXPECT_EQ(lex_errors("a$"), (Messages{"1:2: unexpected character '$'"}));
  EXPECT_EQ(lex_errors("a . b"), (Messages{"1:3: unexpected character '.'"}));
  EXPECT_EQ(lex_errors("\f"), (Messages{"1:1: unexpected character '\\x0c'"}));
}

TEST(Lexer, SingleQuotedStringIsOneError) {
  Diagnostics diags;
  std::vector<Token> tokens = lex("f(act='tanh', x) 'open\n'", diags);
  EXPECT_EQ(kinds(tokens),
            (Kinds{TokenKind::Identifier, TokenKind::LParen, TokenKind::Identifier,
                   TokenKind::Equal, TokenKind::Error, TokenKind::Comma, TokenKind::Identifier,
                   TokenKind::RParen, TokenKind::Error, TokenKind::Error, TokenKind::Eof}));
  EXPECT_EQ(tokens[4].spelling, "'tanh'");
  EXPECT_EQ(tokens[8].spelling, "'open"); // unclosed: to the end of the line
  EXPECT_EQ(messages(diags),
            (Messages{"1:7: unexpected character '\\'' (strings use double quotes)",
                      "1:18: unexpected character '\\'' (strings use double quotes)",
                      "2:1: unexpected character '\\'' (strings use double quotes)"}));
}

TEST(Lexer, BadByteRunIsOneError) {
  // A UTF-8 sequence (two bytes) is one error; lexing resumes after it.
  Diagnostics diags;
  std::vector<Token> tokens = lex("caf\xc3\xa9 = $@! 1", diags);
  EXPECT_EQ(kinds(tokens), (Kinds{TokenKind::Identifier, TokenKind::Error, TokenKind::Equal,
                                  TokenKind::Error, TokenKind::Int, TokenKind::Eof}));
  EXPECT_EQ(messages(diags),
            (Messages{"1:4: unexpected character '\\xc3'", "1:9: unexpected character '$'"}));
}

TEST(Lexer, IdentifierLengthLimit) {
  std::string longest(kMaxIdentifierLength, 'a');
  Token token = lex_one(longest);
  EXPECT_EQ(token.kind, TokenKind::Identifier);
  EXPECT_EQ(token.spelling.size(), kMaxIdentifierLength);
  EXPECT_EQ(lex_errors("x " + longest + "b"),
            (Messages{"1:3: identifier is too long (limit 1024 characters)"}));
}

TEST(Lexer, DescribeToken) {
  Diagnostics diags;
  std::vector<Token> tokens = lex("abc ( \"s\" 1e-5", diags);
  EXPECT_EQ(describe_token(tokens[0]), "'abc'");
  EXPECT_EQ(describe_token(tokens[1]), "'('");
  EXPECT_EQ(describe_token(tokens[2]), "string literal");
  EXPECT_EQ(describe_token(tokens[3]), "'1e-5'");
  EXPECT_EQ(describe_token(tokens[4]), "end of file");
  std::string long_name(100, 'n'); // outlives the token, which points into it
  EXPECT_EQ(describe_token(lex_one(long_name)), "'" + std::string(32, 'n') + "...'");
}

TEST(Lexer, EveryByteMakesProgress) {
  // Each single byte, and each byte after a partial token, lexes to Eof.
  for (int byte = 0; byte < 256; ++byte) {
    for (const std::string prefix : {"", "1", "1e", "\"", "\"\\", ".", "a"}) {
      std::string text = prefix + static_cast<char>(byte);
      Diagnostics diags;
      std::vector<Token> tokens = lex(text, diags);
      EXPECT_LE(tokens.size(), text.size() + 1);
    }
  }
}

TEST(Lexer, LargeInputIsLinear) {
  // 2 MB of mixed tokens; a quadratic lexer would not finish.
  std::string chunk = "x1 = f(a, 1.5e-3, \"s\") # c\n";
  std::string text;
  while (text.size() < (2u << 20))
    text += chunk;
  Diagnostics diags;
  Lexer lexer(text, 0, diags);
  size_t count = 0;
  while (lexer.next().kind != TokenKind::Eof)
    ++count;
  EXPECT_EQ(count, text.size() / chunk.size() * 10);
  EXPECT_FALSE(diags.has_errors());
}

} // namespace
} // namespace fusegen
