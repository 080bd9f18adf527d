// Recursive-descent parser of the spec language. Each parse function carries
// the grammar rule it implements; docs/spec-language.md has the full grammar.
//
// Error handling: a parse function that fails has reported exactly one
// diagnostic (or none, if the offending token is a lexer Error token, which was
// reported when lexed) and returns false/null. The body loop then skips to the
// start of the next statement, so one run reports several independent errors.
#include "fusegen/Parser.h"

#include "Lexer.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

namespace fusegen {
namespace {

using ast::Expr;
using ast::ExprKind;
using ast::ExprPtr;

// Bounds both the parser's recursion (parens, calls, unary operators) and the
// height of expression trees (later stages walk them recursively).
constexpr uint32_t kMaxNesting = 256;

// An expression and the height of its tree counted in non-leaf nodes, so that
// long operator chains are bounded just like nesting. A null `expr` means a
// diagnostic has been reported.
struct Parsed {
  ExprPtr expr;
  uint32_t height = 0;
  explicit operator bool() const { return expr != nullptr; }
};

ExprPtr make_expr(ExprKind kind, SourceLoc loc) {
  auto expr = std::make_unique<Expr>();
  expr->kind = kind;
  expr->loc = loc;
  return expr;
}

// One more level of expression nesting for as long as it lives.
class NestingScope {
public:
  explicit NestingScope(uint32_t& depth) : depth_(depth) { ++depth_; }
  ~NestingScope() { --depth_; }
  NestingScope(const NestingScope&) = delete;
  NestingScope& operator=(const NestingScope&) = delete;

private:
  uint32_t& depth_;
};

class Parser {
public:
  Parser(std::string_view text, uint32_t file, Diagnostics& diags)
      : lexer_(text, file, diags), diags_(diags), file_(file) {}

  ast::SpecFile parse_file();

private:
  // Token stream with two tokens of lookahead.
  const Token& peek(size_t ahead = 0);
  Token take();
  bool at(TokenKind kind) { return peek().kind == kind; }
  bool accept(TokenKind kind);

  // Reports at `token` unless the lexer already did (Error tokens).
  void error_at(const Token& token, std::string message);
  // "expected WHAT, found <current token>".
  void expected(std::string_view what);

  void parse_fusion(ast::Fusion& fusion);
  bool parse_options(ast::Fusion& fusion);
  bool parse_option(ast::Fusion& fusion);
  void parse_body(ast::Fusion& fusion);
  bool parse_item(ast::Fusion& fusion);
  bool parse_decl(ast::Fusion& fusion);
  bool parse_type(ast::TypeExpr& type);
  bool parse_dim(ast::TypeExpr& type);
  bool parse_stmt(ast::Fusion& fusion);

  Parsed parse_expr();
  Parsed parse_additive();
  Parsed parse_multiplicative();
  Parsed parse_unary();
  Parsed parse_primary();
  Parsed parse_literal();
  Parsed parse_name_or_call();
  bool parse_args(Expr& call, uint32_t& child_height);
  Parsed parse_parenthesized();
  Parsed make_binary(const Token& op, Parsed lhs, Parsed rhs);
  Parsed finish_node(ExprPtr expr, uint32_t child_height);
  bool at_keyword_argument();
  bool enter_nesting();
  Parsed int_literal(const Token& token, bool negated);

  bool starts_item(const Token& token, const Token& next) const;
  void skip_to_next_item();
  void skip_to_fusion_body_or_next_fusion();

  Lexer lexer_;
  Diagnostics& diags_;
  uint32_t file_;
  static constexpr size_t kLookahead = 2;
  std::array<Token, kLookahead> lookahead_;
  size_t lookahead_count_ = 0;
  size_t tokens_taken_ = 0;
  uint32_t depth_ = 0;
};

// --- Token stream -----------------------------------------------------------

const Token& Parser::peek(size_t ahead) {
  assert(ahead < kLookahead);
  while (lookahead_count_ <= ahead)
    lookahead_[lookahead_count_++] = lexer_.next();
  return lookahead_[ahead];
}

Token Parser::take() {
  peek();
  Token token = std::move(lookahead_[0]);
  for (size_t i = 1; i < lookahead_count_; ++i)
    lookahead_[i - 1] = std::move(lookahead_[i]);
  --lookahead_count_;
  ++tokens_taken_;
  return token;
}

bool Parser::accept(TokenKind kind) {
  if (!at(kind))
    return false;
  take();
  return true;
}

void Parser::error_at(const Token& token, std::string message) {
  if (token.kind != TokenKind::Error)
    diags_.error(token.loc, std::move(message));
}

void Parser::expected(std::string_view what) {
  const Token& found = peek();
  error_at(found, "expected " + std::string(what) + ", found " + describe_token(found));
}

// --- Recovery ---------------------------------------------------------------

// Whether `token` (followed by `next`) can begin a body item or end the body.
bool Parser::starts_item(const Token& token, const Token& next) const {
  switch (token.kind) {
  case TokenKind::KwInput:
  case TokenKind::KwParam:
  case TokenKind::KwState:
  case TokenKind::KwOutput:
  case TokenKind::KwFusion:
  case TokenKind::RBrace:
  case TokenKind::Eof: return true;
  case TokenKind::Identifier: return next.kind == TokenKind::Equal;
  default: return false;
  }
}

// After an error in a body: skips to a token that begins a line (or follows a
// ';') and starts a declaration or a statement, or to the `}` closing the body
// (braces appear nowhere else, so any unmatched `}` is the body's end).
void Parser::skip_to_next_item() {
  bool after_semicolon = false;
  size_t open_braces = 0;
  while (!at(TokenKind::Eof)) {
    const Token& token = peek();
    if (token.kind == TokenKind::RBrace && open_braces == 0)
      return;
    if ((token.starts_line || after_semicolon) && starts_item(token, peek(1)))
      return;
    if (token.kind == TokenKind::LBrace)
      ++open_braces;
    else if (token.kind == TokenKind::RBrace)
      --open_braces;
    after_semicolon = token.kind == TokenKind::Semicolon;
    take();
  }
}

// After an error in a fusion header: skips to its `{` (the body is still
// parsed) or to the next `fusion`.
void Parser::skip_to_fusion_body_or_next_fusion() {
  while (!at(TokenKind::Eof) && !at(TokenKind::LBrace) && !at(TokenKind::KwFusion))
    take();
}

// --- Fusions ----------------------------------------------------------------

// file ::= fusion+ EOF
ast::SpecFile Parser::parse_file() {
  ast::SpecFile file;
  size_t errors_before = diags_.error_count();
  bool saw_fusion = false;
  while (!at(TokenKind::Eof) && !diags_.at_error_limit()) {
    if (!at(TokenKind::KwFusion)) {
      expected("'fusion'");
      while (!at(TokenKind::Eof) && !at(TokenKind::KwFusion))
        take();
      continue;
    }
    saw_fusion = true;
    parse_fusion(file.fusions.emplace_back());
  }
  if (!saw_fusion && diags_.error_count() == errors_before)
    diags_.error(SourceLoc{file_, 1, 1}, "no fusion in file");
  return file;
}

// fusion ::= 'fusion' IDENT options? '{' body '}'
void Parser::parse_fusion(ast::Fusion& fusion) {
  take(); // 'fusion'
  bool header_ok = false;
  if (!at(TokenKind::Identifier)) {
    expected("fusion name after 'fusion'");
  } else {
    Token name = take();
    fusion.name = std::string(name.spelling);
    fusion.loc = name.loc;
    header_ok = !at(TokenKind::LParen) || parse_options(fusion);
    if (header_ok && !at(TokenKind::LBrace)) {
      expected("'{' to begin the fusion body");
      header_ok = false;
    }
  }
  if (!header_ok) {
    skip_to_fusion_body_or_next_fusion();
    if (!at(TokenKind::LBrace))
      return;
  }
  take();             // '{'
  parse_body(fusion); // even after a header error, to report the body's errors too
}

// options ::= '(' [option (',' option)* [',']] ')'
bool Parser::parse_options(ast::Fusion& fusion) {
  take(); // '('
  while (!at(TokenKind::RParen)) {
    if (!parse_option(fusion))
      return false;
    if (!accept(TokenKind::Comma))
      break;
  }
  if (!accept(TokenKind::RParen)) {
    expected("')' after fusion options");
    return false;
  }
  return true;
}

// option ::= WORD '=' expr       (WORD: an identifier or a keyword)
bool Parser::parse_option(ast::Fusion& fusion) {
  const Token& key = peek();
  if (key.kind != TokenKind::Identifier && !is_keyword(key.kind)) {
    expected("fusion option name");
    return false;
  }
  ast::FusionOption option;
  option.key = std::string(key.spelling);
  option.key_loc = key.loc;
  take();
  if (!accept(TokenKind::Equal)) {
    expected("'=' after fusion option name");
    return false;
  }
  Parsed value = parse_expr();
  if (!value)
    return false;
  option.value = std::move(value.expr);
  fusion.options.push_back(std::move(option));
  return true;
}

// body ::= (item | ';')* '}'
void Parser::parse_body(ast::Fusion& fusion) {
  while (!diags_.at_error_limit()) {
    const Token& token = peek();
    if (token.kind == TokenKind::RBrace) {
      fusion.end_loc = take().loc;
      return;
    }
    if (token.kind == TokenKind::Eof || token.kind == TokenKind::KwFusion) {
      expected(fusion.name.empty() ? "'}' at end of fusion"
                                   : "'}' at end of fusion '" + fusion.name + "'");
      return;
    }
    if (accept(TokenKind::Semicolon))
      continue;
    size_t taken_before = tokens_taken_;
    if (parse_item(fusion))
      continue;
    if (tokens_taken_ == taken_before)
      take(); // the offending token may itself look like an item start
    skip_to_next_item();
  }
}

// item ::= decl | stmt
bool Parser::parse_item(ast::Fusion& fusion) {
  switch (peek().kind) {
  case TokenKind::KwInput:
  case TokenKind::KwParam:
  case TokenKind::KwState: return parse_decl(fusion);
  case TokenKind::KwOutput:
  case TokenKind::Identifier: return parse_stmt(fusion);
  default: expected("a declaration or statement"); return false;
  }
}

// --- Declarations -----------------------------------------------------------

// decl ::= ('input' | 'param' | 'state') IDENT ':' type
bool Parser::parse_decl(ast::Fusion& fusion) {
  Token keyword = take();
  ast::Decl decl;
  decl.kind = keyword.kind == TokenKind::KwInput   ? ast::DeclKind::Input
              : keyword.kind == TokenKind::KwParam ? ast::DeclKind::Param
                                                   : ast::DeclKind::State;
  if (!at(TokenKind::Identifier)) {
    expected("name after '" + std::string(keyword.spelling) + "'");
    return false;
  }
  Token name = take();
  decl.name = std::string(name.spelling);
  decl.loc = name.loc;
  if (!accept(TokenKind::Colon)) {
    expected("':' after declaration name");
    return false;
  }
  if (!parse_type(decl.type))
    return false;
  fusion.decls.push_back(std::move(decl));
  return true;
}

// type ::= IDENT '[' [dim (',' dim)*] ']'       (`f32[]` is a scalar)
bool Parser::parse_type(ast::TypeExpr& type) {
  if (!at(TokenKind::Identifier)) {
    expected("dtype after ':'");
    return false;
  }
  Token dtype = take();
  type.dtype = std::string(dtype.spelling);
  type.dtype_loc = dtype.loc;
  type.loc = dtype.loc;
  if (!accept(TokenKind::LBracket)) {
    expected("'[' after dtype");
    return false;
  }
  if (accept(TokenKind::RBracket))
    return true;
  do {
    if (!parse_dim(type))
      return false;
  } while (accept(TokenKind::Comma));
  if (!accept(TokenKind::RBracket)) {
    expected("',' or ']' after dimension");
    return false;
  }
  return true;
}

// dim ::= INT | IDENT
bool Parser::parse_dim(ast::TypeExpr& type) {
  const Token& token = peek();
  ast::DimExpr dim;
  dim.loc = token.loc;
  if (token.kind == TokenKind::Identifier) {
    dim.is_symbol = true;
    dim.symbol = std::string(token.spelling);
  } else if (token.kind == TokenKind::Int) {
    if (token.int_magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      error_at(token, "integer literal is too large");
      return false;
    }
    dim.value = static_cast<int64_t>(token.int_magnitude);
  } else if (token.kind == TokenKind::Minus && peek(1).kind == TokenKind::Int) {
    error_at(token, "dimension must be non-negative");
    return false;
  } else {
    expected("dimension (integer or name)");
    return false;
  }
  take();
  type.dims.push_back(std::move(dim));
  return true;
}

// --- Statements -------------------------------------------------------------

// stmt ::= IDENT '=' expr
//        | 'output' IDENT ['=' expr]
bool Parser::parse_stmt(ast::Fusion& fusion) {
  ast::Stmt stmt;
  if (accept(TokenKind::KwOutput)) {
    stmt.is_output = true;
    if (!at(TokenKind::Identifier)) {
      expected("name after 'output'");
      return false;
    }
  }
  Token name = take();
  stmt.name = std::string(name.spelling);
  stmt.loc = name.loc;
  if (accept(TokenKind::Equal)) {
    Parsed value = parse_expr();
    if (!value)
      return false;
    stmt.value = std::move(value.expr);
  } else if (!stmt.is_output) {
    expected("'=' after statement name");
    return false;
  }
  fusion.stmts.push_back(std::move(stmt));
  return true;
}

// --- Expressions ------------------------------------------------------------

bool Parser::enter_nesting() {
  if (depth_ < kMaxNesting)
    return true;
  error_at(peek(), "expression nesting is too deep (limit " + std::to_string(kMaxNesting) + ")");
  return false;
}

// Gives `expr` (a non-leaf node) its height, rejecting trees that are too tall.
Parsed Parser::finish_node(ExprPtr expr, uint32_t child_height) {
  uint32_t height = child_height + 1;
  if (height > kMaxNesting) {
    diags_.error(expr->loc,
                 "expression nesting is too deep (limit " + std::to_string(kMaxNesting) + ")");
    return {};
  }
  return {std::move(expr), height};
}

Parsed Parser::make_binary(const Token& op, Parsed lhs, Parsed rhs) {
  ExprPtr binary = make_expr(ExprKind::Binary, op.loc);
  binary->text = std::string(op.spelling);
  uint32_t child_height = std::max(lhs.height, rhs.height);
  binary->elements.push_back(std::move(lhs.expr));
  binary->elements.push_back(std::move(rhs.expr));
  return finish_node(std::move(binary), child_height);
}

// expr ::= additive
Parsed Parser::parse_expr() { return parse_additive(); }

// additive ::= multiplicative (('+' | '-') multiplicative)*
Parsed Parser::parse_additive() {
  Parsed lhs = parse_multiplicative();
  while (lhs && (at(TokenKind::Plus) || at(TokenKind::Minus))) {
    Token op = take();
    Parsed rhs = parse_multiplicative();
    if (!rhs)
      return {};
    lhs = make_binary(op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

// multiplicative ::= unary (('*' | '/') unary)*
Parsed Parser::parse_multiplicative() {
  Parsed lhs = parse_unary();
  while (lhs && (at(TokenKind::Star) || at(TokenKind::Slash))) {
    Token op = take();
    Parsed rhs = parse_unary();
    if (!rhs)
      return {};
    lhs = make_binary(op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

// unary ::= ('-' | '+') unary | primary
//
// A sign directly before a number token is folded into the literal: `-1` is
// Int -1 (so INT64_MIN is writable), `-1e-5` is Float. Otherwise `-x` is a
// Unary node and `+x` is just `x`.
Parsed Parser::parse_unary() {
  if (!at(TokenKind::Minus) && !at(TokenKind::Plus))
    return parse_primary();
  TokenKind next = peek(1).kind;
  if (next == TokenKind::Int || next == TokenKind::Float) {
    Token sign = take();
    Token number = take();
    bool negated = sign.kind == TokenKind::Minus;
    if (number.kind == TokenKind::Int) {
      Parsed literal = int_literal(number, negated);
      if (literal)
        literal.expr->loc = sign.loc;
      return literal;
    }
    ExprPtr literal = make_expr(ExprKind::Float, sign.loc);
    literal->float_value = negated ? -number.float_value : number.float_value;
    return {std::move(literal), 0};
  }
  if (!enter_nesting())
    return {};
  NestingScope scope(depth_);
  Token sign = take();
  Parsed operand = parse_unary();
  if (!operand || sign.kind == TokenKind::Plus)
    return operand;
  ExprPtr unary = make_expr(ExprKind::Unary, sign.loc);
  unary->text = "-";
  unary->elements.push_back(std::move(operand.expr));
  return finish_node(std::move(unary), operand.height);
}

// primary ::= literal | IDENT | call | '(' ... ')'
//
// Only a name can be called: `(f)(x)`, `f(x)(y)` and `1(x)` are errors.
Parsed Parser::parse_primary() {
  Parsed primary;
  const Token& token = peek();
  if (token.kind == TokenKind::Identifier && token.starts_line &&
      peek(1).kind == TokenKind::Equal) {
    // `x =` followed by the next line's `y = ...`: the expression is missing.
    error_at(token, "expected expression, found " + quote_text(std::string(token.spelling) + " ="));
    return {};
  }
  switch (token.kind) {
  case TokenKind::Identifier: primary = parse_name_or_call(); break;
  case TokenKind::LParen: primary = parse_parenthesized(); break;
  default: primary = parse_literal(); break;
  }
  // A name followed by '(' was parsed as a call, so any '(' here is an error.
  if (primary && at(TokenKind::LParen)) {
    error_at(peek(), "only a name can be called");
    return {};
  }
  return primary;
}

Parsed Parser::int_literal(const Token& token, bool negated) {
  uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negated ? 1 : 0);
  if (token.int_magnitude > limit) {
    error_at(token, "integer literal is too large");
    return {};
  }
  ExprPtr literal = make_expr(ExprKind::Int, token.loc);
  // Negate in unsigned arithmetic: -(2^63) is representable, +(2^63) is not.
  uint64_t bits = negated ? uint64_t{0} - token.int_magnitude : token.int_magnitude;
  literal->int_value = static_cast<int64_t>(bits);
  return {std::move(literal), 0};
}

// literal ::= INT | FLOAT | STRING | 'true' | 'false' | 'None'
Parsed Parser::parse_literal() {
  const Token& token = peek();
  ExprPtr literal;
  switch (token.kind) {
  case TokenKind::Int: {
    Parsed value = int_literal(token, false);
    if (value)
      take();
    return value;
  }
  case TokenKind::Float:
    literal = make_expr(ExprKind::Float, token.loc);
    literal->float_value = token.float_value;
    break;
  case TokenKind::String:
    literal = make_expr(ExprKind::String, token.loc);
    literal->text = token.string_value;
    break;
  case TokenKind::KwTrue:
  case TokenKind::KwFalse:
    literal = make_expr(ExprKind::Bool, token.loc);
    literal->bool_value = token.kind == TokenKind::KwTrue;
    break;
  case TokenKind::KwNone: literal = make_expr(ExprKind::None, token.loc); break;
  default: expected("expression"); return {};
  }
  take();
  return {std::move(literal), 0};
}

// call ::= IDENT '(' [arg (',' arg)* [',']] ')'
Parsed Parser::parse_name_or_call() {
  Token name = take();
  if (!at(TokenKind::LParen)) {
    ExprPtr expr = make_expr(ExprKind::Name, name.loc);
    expr->text = std::string(name.spelling);
    return {std::move(expr), 0};
  }
  if (!enter_nesting())
    return {};
  NestingScope scope(depth_);
  ExprPtr call = make_expr(ExprKind::Call, name.loc);
  call->text = std::string(name.spelling);
  uint32_t child_height = 0;
  if (!parse_args(*call, child_height))
    return {};
  return finish_node(std::move(call), child_height);
}

// Whether the next tokens are `WORD =` (WORD: an identifier or a keyword, so
// that PyTorch parameter names such as `input` can be passed by keyword).
bool Parser::at_keyword_argument() {
  TokenKind kind = peek().kind;
  return (kind == TokenKind::Identifier || is_keyword(kind)) && peek(1).kind == TokenKind::Equal;
}

// args ::= '(' [arg (',' arg)* [',']] ')'
// arg  ::= [WORD '='] expr         (positional arguments come first)
bool Parser::parse_args(Expr& call, uint32_t& child_height) {
  take(); // '('
  bool seen_keyword = false;
  while (!at(TokenKind::RParen)) {
    ast::Arg arg;
    if (at_keyword_argument()) {
      Token keyword = take();
      take(); // '='
      arg.keyword = std::string(keyword.spelling);
      arg.keyword_loc = keyword.loc;
      seen_keyword = true;
    } else if (seen_keyword) {
      error_at(peek(), "positional argument after keyword argument");
      return false;
    }
    Parsed value = parse_expr();
    if (!value)
      return false;
    child_height = std::max(child_height, value.height);
    arg.value = std::move(value.expr);
    call.args.push_back(std::move(arg));
    if (!accept(TokenKind::Comma))
      break;
  }
  if (!accept(TokenKind::RParen)) {
    expected("')' after arguments");
    return false;
  }
  return true;
}

// paren ::= '(' expr ')'                               grouping
//         | '(' ')' | '(' expr ',' [expr (',' expr)* [',']] ')'    tuple
Parsed Parser::parse_parenthesized() {
  if (!enter_nesting())
    return {};
  NestingScope scope(depth_);
  Token open = take();
  ExprPtr tuple = make_expr(ExprKind::Tuple, open.loc);
  if (accept(TokenKind::RParen))
    return finish_node(std::move(tuple), 0);
  Parsed first = parse_expr();
  if (!first)
    return {};
  if (accept(TokenKind::RParen))
    return first; // grouping
  if (!accept(TokenKind::Comma)) {
    expected("')' after expression");
    return {};
  }
  uint32_t child_height = first.height;
  tuple->elements.push_back(std::move(first.expr));
  while (!at(TokenKind::RParen)) {
    Parsed element = parse_expr();
    if (!element)
      return {};
    child_height = std::max(child_height, element.height);
    tuple->elements.push_back(std::move(element.expr));
    if (!accept(TokenKind::Comma))
      break;
  }
  if (!accept(TokenKind::RParen)) {
    expected("')' after tuple elements");
    return {};
  }
  return finish_node(std::move(tuple), child_height);
}

} // namespace

ast::SpecFile parse_spec(const SourceManager& sources, uint32_t file, Diagnostics& diags) {
  Parser parser(sources.text(file), file, diags);
  return parser.parse_file();
}

} // namespace fusegen
