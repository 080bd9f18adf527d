// Tests of the spec parser: trees, locations, every syntax error with its
// message and location, recovery, and limits on hostile input.
#include "fusegen/Parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace fusegen {
namespace {

using ast::Expr;
using ast::ExprKind;
using Messages = std::vector<std::string>;

struct Parsed {
  SourceManager sources;
  Diagnostics diags{1000};
  ast::SpecFile spec;
};

std::unique_ptr<Parsed> parse(std::string text) {
  auto parsed = std::make_unique<Parsed>();
  uint32_t file = parsed->sources.add_buffer("test.fg", std::move(text));
  parsed->spec = parse_spec(parsed->sources, file, parsed->diags);
  return parsed;
}

// "line:col: message" per diagnostic.
Messages messages(const Diagnostics& diags) {
  Messages result;
  for (const Diagnostic& diag : diags.all())
    result.push_back(std::to_string(diag.loc.line) + ":" + std::to_string(diag.loc.col) + ": " +
                     diag.message);
  return result;
}

Messages errors_of(std::string text) { return messages(parse(std::move(text))->diags); }

// A fusion wrapping `body`, so body errors are on line 2 onwards.
std::string in_fusion(const std::string& body) { return "fusion f {\n" + body + "\n}\n"; }

// Compact rendering of an expression tree: (+ a b), f(x, k=1), tuple(1 2), (- x).
std::string dump(const Expr& e) {
  switch (e.kind) {
  case ExprKind::Int: return std::to_string(e.int_value);
  case ExprKind::Float: {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%gf", e.float_value);
    return buffer;
  }
  case ExprKind::Bool: return e.bool_value ? "true" : "false";
  case ExprKind::String: return "\"" + e.text + "\"";
  case ExprKind::None: return "None";
  case ExprKind::Name: return e.text;
  case ExprKind::Tuple: {
    std::string out = "tuple(";
    for (size_t i = 0; i < e.elements.size(); ++i)
      out += (i ? " " : "") + dump(*e.elements[i]);
    return out + ")";
  }
  case ExprKind::Call: {
    std::string out = e.text + "(";
    for (size_t i = 0; i < e.args.size(); ++i) {
      out += i ? ", " : "";
      if (!e.args[i].keyword.empty())
        out += e.args[i].keyword + "=";
      out += dump(*e.args[i].value);
    }
    return out + ")";
  }
  case ExprKind::Binary:
    return "(" + e.text + " " + dump(*e.elements[0]) + " " + dump(*e.elements[1]) + ")";
  case ExprKind::Unary: return "(" + e.text + " " + dump(*e.elements[0]) + ")";
  }
  return "?";
}

// Parses `y = <expr>` in a fusion and dumps the expression ("error" on failure).
std::string dump_expr(const std::string& expr) {
  auto parsed = parse(in_fusion("y = " + expr));
  if (parsed->diags.has_errors() || parsed->spec.fusions.size() != 1 ||
      parsed->spec.fusions[0].stmts.size() != 1)
    return "error";
  return dump(*parsed->spec.fusions[0].stmts[0].value);
}

// The expression of `y = <expr>`, which must parse cleanly.
struct ParsedExpr {
  std::unique_ptr<Parsed> parsed;
  const Expr& expr() const { return *parsed->spec.fusions.at(0).stmts.at(0).value; }
};
ParsedExpr parse_expr(const std::string& expr) {
  ParsedExpr result{parse(in_fusion("y = " + expr))};
  EXPECT_FALSE(result.parsed->diags.has_errors()) << expr;
  return result;
}

SourceLoc loc(uint32_t line, uint32_t col) { return {0, line, col}; }

// --- Trees ------------------------------------------------------------------

TEST(Parser, ContractExample) {
  auto parsed = parse(R"(# '#' starts a comment to end of line.
fusion gemm_groupnorm_leakyrelu_sum {
  input  x    : f32[N, 8192]          # N is a symbolic dim
  param  w    : f32[8192, 8192]
  param  b    : f32[8192]
  state  rm   : f32[8192]
  h = linear(x, w, b)
  h = group_norm(h, num_groups=512, weight=gn_w, bias=gn_b, eps=1e-5)
  h = leaky_relu(h, negative_slope=0.01)
  output y = h + h
}
)");
  ASSERT_EQ(messages(parsed->diags), Messages{});
  ASSERT_EQ(parsed->spec.fusions.size(), 1u);
  const ast::Fusion& fusion = parsed->spec.fusions[0];
  EXPECT_EQ(fusion.name, "gemm_groupnorm_leakyrelu_sum");
  EXPECT_EQ(fusion.loc, loc(2, 8));
  EXPECT_EQ(fusion.end_loc, loc(11, 1));
  EXPECT_TRUE(fusion.options.empty());

  ASSERT_EQ(fusion.decls.size(), 4u);
  const ast::Decl& x = fusion.decls[0];
  EXPECT_EQ(x.kind, ast::DeclKind::Input);
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.loc, loc(3, 10));
  EXPECT_EQ(x.type.dtype, "f32");
  EXPECT_EQ(x.type.dtype_loc, loc(3, 17));
  EXPECT_EQ(x.type.loc, loc(3, 17));
  ASSERT_EQ(x.type.dims.size(), 2u);
  EXPECT_TRUE(x.type.dims[0].is_symbol);
  EXPECT_EQ(x.type.dims[0].symbol, "N");
  EXPECT_EQ(x.type.dims[0].loc, loc(3, 21));
  EXPECT_FALSE(x.type.dims[1].is_symbol);
  EXPECT_EQ(x.type.dims[1].value, 8192);
  EXPECT_EQ(x.type.dims[1].loc, loc(3, 24));
  EXPECT_EQ(fusion.decls[1].kind, ast::DeclKind::Param);
  EXPECT_EQ(fusion.decls[1].name, "w");
  EXPECT_EQ(fusion.decls[3].kind, ast::DeclKind::State);
  EXPECT_EQ(fusion.decls[3].name, "rm");

  ASSERT_EQ(fusion.stmts.size(), 4u);
  EXPECT_FALSE(fusion.stmts[0].is_output);
  EXPECT_EQ(fusion.stmts[0].name, "h");
  EXPECT_EQ(fusion.stmts[0].loc, loc(7, 3));
  EXPECT_EQ(dump(*fusion.stmts[0].value), "linear(x, w, b)");
  EXPECT_EQ(dump(*fusion.stmts[1].value),
            "group_norm(h, num_groups=512, weight=gn_w, bias=gn_b, eps=1e-05f)");
  EXPECT_EQ(dump(*fusion.stmts[2].value), "leaky_relu(h, negative_slope=0.01f)");
  EXPECT_TRUE(fusion.stmts[3].is_output);
  EXPECT_EQ(fusion.stmts[3].name, "y");
  EXPECT_EQ(fusion.stmts[3].loc, loc(10, 10));
  EXPECT_EQ(dump(*fusion.stmts[3].value), "(+ h h)");
}

TEST(Parser, DtypeIsKeptAsWritten) {
  auto parsed = parse(in_fusion("input a : f16[2]\nparam b : bf16[M]\nstate c : whatever[1]"));
  ASSERT_EQ(messages(parsed->diags), Messages{});
  const ast::Fusion& fusion = parsed->spec.fusions[0];
  EXPECT_EQ(fusion.decls[0].type.dtype, "f16");
  EXPECT_EQ(fusion.decls[1].type.dtype, "bf16");
  EXPECT_EQ(fusion.decls[2].type.dtype, "whatever");
}

TEST(Parser, ScalarAndZeroDims) {
  auto parsed = parse(in_fusion("input s : f32[]\ninput z : f32[0, 1]\ninput big : "
                                "f32[9223372036854775807]"));
  ASSERT_EQ(messages(parsed->diags), Messages{});
  const ast::Fusion& fusion = parsed->spec.fusions[0];
  EXPECT_TRUE(fusion.decls[0].type.dims.empty());
  ASSERT_EQ(fusion.decls[1].type.dims.size(), 2u);
  EXPECT_EQ(fusion.decls[1].type.dims[0].value, 0);
  EXPECT_EQ(fusion.decls[2].type.dims[0].value, std::numeric_limits<int64_t>::max());
}

TEST(Parser, StatementSeparators) {
  // Newlines are not significant: statements may share a line, with or without ';'.
  auto parsed = parse("fusion f { input x : f32[1] a = x b = a; c = b;; output c }");
  ASSERT_EQ(messages(parsed->diags), Messages{});
  const ast::Fusion& fusion = parsed->spec.fusions[0];
  ASSERT_EQ(fusion.decls.size(), 1u);
  ASSERT_EQ(fusion.stmts.size(), 4u);
  EXPECT_EQ(fusion.stmts[1].name, "b");
  EXPECT_EQ(dump(*fusion.stmts[1].value), "a");
  EXPECT_TRUE(fusion.stmts[3].is_output);
  EXPECT_EQ(fusion.stmts[3].value, nullptr);
}

TEST(Parser, ExpressionsSpanLines) {
  auto parsed = parse(in_fusion("y = f(a,\n      k=1)\n  + b"));
  ASSERT_EQ(messages(parsed->diags), Messages{});
  EXPECT_EQ(dump(*parsed->spec.fusions[0].stmts[0].value), "(+ f(a, k=1) b)");
}

TEST(Parser, Outputs) {
  auto parsed = parse(in_fusion("output y = h\noutput h\noutput z = 1"));
  ASSERT_EQ(messages(parsed->diags), Messages{});
  const auto& stmts = parsed->spec.fusions[0].stmts;
  ASSERT_EQ(stmts.size(), 3u);
  EXPECT_TRUE(stmts[0].is_output);
  EXPECT_EQ(dump(*stmts[0].value), "h");
  EXPECT_TRUE(stmts[1].is_output);
  EXPECT_EQ(stmts[1].name, "h");
  EXPECT_EQ(stmts[1].loc, loc(3, 8));
  EXPECT_EQ(stmts[1].value, nullptr);
}

TEST(Parser, EmptyFusionBody) {
  auto parsed = parse("fusion f {}");
  ASSERT_EQ(messages(parsed->diags), Messages{});
  ASSERT_EQ(parsed->spec.fusions.size(), 1u);
  EXPECT_EQ(parsed->spec.fusions[0].end_loc, loc(1, 11));
}

TEST(Parser, Precedence) {
  EXPECT_EQ(dump_expr("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(dump_expr("a * b + c"), "(+ (* a b) c)");
  EXPECT_EQ(dump_expr("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(dump_expr("a / b / c"), "(/ (/ a b) c)");
  EXPECT_EQ(dump_expr("a / b * c"), "(* (/ a b) c)");
  EXPECT_EQ(dump_expr("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(dump_expr("a - (b - c)"), "(- a (- b c))");
  EXPECT_EQ(dump_expr("-a * b"), "(* (- a) b)");
  EXPECT_EQ(dump_expr("a * -b"), "(* a (- b))");
  EXPECT_EQ(dump_expr("a - -b"), "(- a (- b))");
  EXPECT_EQ(dump_expr("a + b * c - d / e"), "(- (+ a (* b c)) (/ d e))");
  EXPECT_EQ(dump_expr("f(a + b) * 2"), "(* f((+ a b)) 2)");
}

TEST(Parser, BinaryNodes) {
  ParsedExpr parsed = parse_expr("a +\tb");
  const Expr& e = parsed.expr();
  EXPECT_EQ(e.kind, ExprKind::Binary);
  EXPECT_EQ(e.text, "+");
  EXPECT_EQ(e.loc, loc(2, 7)); // the operator
  ASSERT_EQ(e.elements.size(), 2u);
  EXPECT_EQ(e.elements[0]->loc, loc(2, 5));
  EXPECT_EQ(e.elements[1]->loc, loc(2, 9));
}

TEST(Parser, UnaryFolding) {
  {
    ParsedExpr parsed = parse_expr("-1");
    EXPECT_EQ(parsed.expr().kind, ExprKind::Int);
    EXPECT_EQ(parsed.expr().int_value, -1);
    EXPECT_EQ(parsed.expr().loc, loc(2, 5)); // at the sign
  }
  {
    ParsedExpr parsed = parse_expr("- 1e-5");
    EXPECT_EQ(parsed.expr().kind, ExprKind::Float);
    EXPECT_EQ(parsed.expr().float_value, -1e-5);
  }
  {
    ParsedExpr parsed = parse_expr("-0.0");
    EXPECT_EQ(parsed.expr().kind, ExprKind::Float);
    EXPECT_TRUE(std::signbit(parsed.expr().float_value));
  }
  {
    ParsedExpr parsed = parse_expr("-9223372036854775808");
    EXPECT_EQ(parsed.expr().kind, ExprKind::Int);
    EXPECT_EQ(parsed.expr().int_value, std::numeric_limits<int64_t>::min());
  }
  {
    ParsedExpr parsed = parse_expr("-x");
    EXPECT_EQ(parsed.expr().kind, ExprKind::Unary);
    EXPECT_EQ(parsed.expr().text, "-");
    EXPECT_EQ(parsed.expr().loc, loc(2, 5));
  }
  EXPECT_EQ(dump_expr("+1"), "1");
  EXPECT_EQ(dump_expr("+1.5"), "1.5f");
  EXPECT_EQ(dump_expr("+x"), "x");
  EXPECT_EQ(dump_expr("--1"), "(- -1)");
  EXPECT_EQ(dump_expr("-(1)"), "(- 1)");
  EXPECT_EQ(dump_expr("-f(x)"), "(- f(x))");
  EXPECT_EQ(dump_expr("2 - 1"), "(- 2 1)");
  EXPECT_EQ(dump_expr("2 -1"), "(- 2 1)");
  EXPECT_EQ(dump_expr("2 * -1"), "(* 2 -1)");
}

TEST(Parser, Literals) {
  EXPECT_EQ(dump_expr("42"), "42");
  EXPECT_EQ(dump_expr("9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(dump_expr("0.5"), "0.5f");
  EXPECT_EQ(dump_expr(".5"), "0.5f");
  EXPECT_EQ(dump_expr("5."), "5f");
  EXPECT_EQ(dump_expr("1E3"), "1000f");
  EXPECT_EQ(dump_expr("true"), "true");
  EXPECT_EQ(dump_expr("false"), "false");
  EXPECT_EQ(dump_expr("None"), "None");
  EXPECT_EQ(dump_expr(R"("tanh")"), "\"tanh\"");
  ParsedExpr parsed = parse_expr(R"("a\"b\\c\nd\te")");
  EXPECT_EQ(parsed.expr().kind, ExprKind::String);
  EXPECT_EQ(parsed.expr().text, "a\"b\\c\nd\te");
  EXPECT_EQ(parsed.expr().loc, loc(2, 5));
}

TEST(Parser, Tuples) {
  EXPECT_EQ(dump_expr("(2, 2)"), "tuple(2 2)");
  EXPECT_EQ(dump_expr("(2,)"), "tuple(2)");
  EXPECT_EQ(dump_expr("(1, 2, 3,)"), "tuple(1 2 3)");
  EXPECT_EQ(dump_expr("()"), "tuple()");
  EXPECT_EQ(dump_expr("(2)"), "2"); // grouping, not a tuple
  EXPECT_EQ(dump_expr("((2))"), "2");
  EXPECT_EQ(dump_expr("((1, 2), (3,), -4)"), "tuple(tuple(1 2) tuple(3) -4)");
  EXPECT_EQ(dump_expr("f(x, dims=(0, -1))"), "f(x, dims=tuple(0 -1))");
  ParsedExpr parsed = parse_expr("(1, 2)");
  EXPECT_EQ(parsed.expr().kind, ExprKind::Tuple);
  EXPECT_EQ(parsed.expr().loc, loc(2, 5)); // the '('
}

TEST(Parser, Calls) {
  EXPECT_EQ(dump_expr("f()"), "f()");
  EXPECT_EQ(dump_expr("f(a, b,)"), "f(a, b)");
  EXPECT_EQ(dump_expr("f(a, k=1, m=\"s\", n=None)"), "f(a, k=1, m=\"s\", n=None)");
  EXPECT_EQ(dump_expr("f(g(h(x)), k=g(y))"), "f(g(h(x)), k=g(y))");
  // Keywords may name arguments (PyTorch parameters such as `input`).
  EXPECT_EQ(dump_expr("linear(input=x, weight=w)"), "linear(input=x, weight=w)");
  ParsedExpr parsed = parse_expr("conv(x,  stride = 2)");
  const Expr& call = parsed.expr();
  EXPECT_EQ(call.kind, ExprKind::Call);
  EXPECT_EQ(call.text, "conv");
  EXPECT_EQ(call.loc, loc(2, 5)); // the callee
  ASSERT_EQ(call.args.size(), 2u);
  EXPECT_TRUE(call.args[0].keyword.empty());
  EXPECT_EQ(call.args[1].keyword, "stride");
  EXPECT_EQ(call.args[1].keyword_loc, loc(2, 14));
  EXPECT_EQ(call.args[1].value->loc, loc(2, 23));
}

TEST(Parser, FusionOptions) {
  auto parsed = parse("fusion a (precision=tf32, note=\"x\", n=-2,) {}\nfusion b () {}");
  ASSERT_EQ(messages(parsed->diags), Messages{});
  ASSERT_EQ(parsed->spec.fusions.size(), 2u);
  const auto& options = parsed->spec.fusions[0].options;
  ASSERT_EQ(options.size(), 3u);
  EXPECT_EQ(options[0].key, "precision");
  EXPECT_EQ(options[0].key_loc, loc(1, 11));
  EXPECT_EQ(dump(*options[0].value), "tf32");
  EXPECT_EQ(dump(*options[1].value), "\"x\"");
  EXPECT_EQ(dump(*options[2].value), "-2");
  EXPECT_TRUE(parsed->spec.fusions[1].options.empty());
}

TEST(Parser, MultipleFusions) {
  auto parsed = parse("fusion a { input x : f32[1] output x }\n"
                      "# between\n"
                      "fusion b (precision=strict) {\n  output y = 1\n}\n");
  ASSERT_EQ(messages(parsed->diags), Messages{});
  ASSERT_EQ(parsed->spec.fusions.size(), 2u);
  EXPECT_EQ(parsed->spec.fusions[0].name, "a");
  EXPECT_EQ(parsed->spec.fusions[1].name, "b");
  EXPECT_EQ(parsed->spec.fusions[1].loc, loc(3, 8));
  EXPECT_EQ(parsed->spec.fusions[1].end_loc, loc(5, 1));
}

TEST(Parser, CrlfLineEndings) {
  auto parsed = parse("fusion f {\r\n  y = a\r\n}\r\n");
  ASSERT_EQ(messages(parsed->diags), Messages{});
  EXPECT_EQ(parsed->spec.fusions[0].stmts[0].loc, loc(2, 3));
}

// --- File-level errors ------------------------------------------------------

TEST(Parser, EmptyFile) {
  EXPECT_EQ(errors_of(""), Messages{"1:1: no fusion in file"});
  EXPECT_EQ(errors_of("\n\n  # only a comment\n"), Messages{"1:1: no fusion in file"});
}

TEST(Parser, RenderedDiagnostic) {
  auto parsed = parse("");
  EXPECT_EQ(parsed->diags.render(parsed->sources), "test.fg:1:1: error: no fusion in file\n");
}

TEST(Parser, TopLevelJunk) {
  EXPECT_EQ(errors_of("x = 1\nfusion f {}"), Messages{"1:1: expected 'fusion', found 'x'"});
  EXPECT_EQ(errors_of("fusion f {}\n}"), Messages{"2:1: expected 'fusion', found '}'"});
  // A lexer error is reported once, not again as "expected 'fusion'".
  EXPECT_EQ(errors_of("$"), Messages{"1:1: unexpected character '$'"});
}

TEST(Parser, FusionHeaderErrors) {
  EXPECT_EQ(errors_of("fusion {}"),
            Messages{"1:8: expected fusion name after 'fusion', found '{'"});
  EXPECT_EQ(errors_of("fusion"),
            Messages{"1:7: expected fusion name after 'fusion', found end of file"});
  EXPECT_EQ(errors_of("fusion input {}"),
            Messages{"1:8: expected fusion name after 'fusion', found 'input'"});
  EXPECT_EQ(errors_of("fusion f\n  input x : f32[1]\n}"),
            Messages{"2:3: expected '{' to begin the fusion body, found 'input'"});
  EXPECT_EQ(errors_of("fusion f (1) {}"), Messages{"1:11: expected fusion option name, found '1'"});
  EXPECT_EQ(errors_of("fusion f (precision) {}"),
            Messages{"1:20: expected '=' after fusion option name, found ')'"});
  EXPECT_EQ(errors_of("fusion f (precision=) {}"),
            Messages{"1:21: expected expression, found ')'"});
  EXPECT_EQ(errors_of("fusion f (a=1 b=2) {}"),
            Messages{"1:15: expected ')' after fusion options, found 'b'"});
  EXPECT_EQ(errors_of("fusion f (a=1 {}"),
            Messages{"1:15: expected ')' after fusion options, found '{'"});
}

TEST(Parser, HeaderErrorStillParsesBody) {
  auto parsed = parse("fusion f (a=) {\n  y = (\n}\nfusion g {}");
  EXPECT_EQ(messages(parsed->diags), (Messages{"1:13: expected expression, found ')'",
                                               "3:1: expected expression, found '}'"}));
  ASSERT_EQ(parsed->spec.fusions.size(), 2u);
  EXPECT_EQ(parsed->spec.fusions[1].name, "g");
}

TEST(Parser, MissingClosingBrace) {
  EXPECT_EQ(errors_of("fusion f {\n  y = x\n"),
            Messages{"2:8: expected '}' at end of fusion 'f', found end of file"});
  auto parsed = parse("fusion f {\n  y = x\nfusion g {\n}\n");
  EXPECT_EQ(messages(parsed->diags),
            Messages{"3:1: expected '}' at end of fusion 'f', found 'fusion'"});
  EXPECT_EQ(parsed->spec.fusions.size(), 2u);
  EXPECT_EQ(errors_of("fusion { y = x"),
            (Messages{"1:8: expected fusion name after 'fusion', found '{'",
                      "1:15: expected '}' at end of fusion, found end of file"}));
}

// --- Declaration errors -----------------------------------------------------

TEST(Parser, DeclarationErrors) {
  EXPECT_EQ(errors_of(in_fusion("input : f32[1]")),
            Messages{"2:7: expected name after 'input', found ':'"});
  EXPECT_EQ(errors_of(in_fusion("param 1 : f32[1]")),
            Messages{"2:7: expected name after 'param', found '1'"});
  EXPECT_EQ(errors_of(in_fusion("state output : f32[1]")),
            Messages{"2:7: expected name after 'state', found 'output'"});
  EXPECT_EQ(errors_of(in_fusion("input x f32[1]")),
            Messages{"2:9: expected ':' after declaration name, found 'f32'"});
  EXPECT_EQ(errors_of(in_fusion("input x = 1")),
            Messages{"2:9: expected ':' after declaration name, found '='"});
}

TEST(Parser, TypeErrors) {
  // A missing or malformed type.
  EXPECT_EQ(errors_of(in_fusion("input x :")),
            Messages{"3:1: expected dtype after ':', found '}'"});
  EXPECT_EQ(errors_of(in_fusion("input x : [1]")),
            Messages{"2:11: expected dtype after ':', found '['"});
  EXPECT_EQ(errors_of(in_fusion("input x : None[1]")),
            Messages{"2:11: expected dtype after ':', found 'None'"});
  EXPECT_EQ(errors_of(in_fusion("input x : f32")),
            Messages{"3:1: expected '[' after dtype, found '}'"});
  EXPECT_EQ(errors_of(in_fusion("input x : f32(1)")),
            Messages{"2:14: expected '[' after dtype, found '('"});
  EXPECT_EQ(errors_of(in_fusion("input x : f32[1")),
            Messages{"3:1: expected ',' or ']' after dimension, found '}'"});
  EXPECT_EQ(errors_of(in_fusion("input x : f32[1 2]")),
            Messages{"2:17: expected ',' or ']' after dimension, found '2'"});
  EXPECT_EQ(errors_of(in_fusion("input x : f32[1,]")),
            Messages{"2:17: expected dimension (integer or name), found ']'"});
  EXPECT_EQ(errors_of(in_fusion("input x : f32[2.5]")),
            Messages{"2:15: expected dimension (integer or name), found '2.5'"});
  EXPECT_EQ(errors_of(in_fusion("input x : f32[(1)]")),
            Messages{"2:15: expected dimension (integer or name), found '('"});
  EXPECT_EQ(errors_of(in_fusion("input x : f32[4, -1]")),
            Messages{"2:18: dimension must be non-negative"});
  EXPECT_EQ(errors_of(in_fusion("input x : f32[9223372036854775808]")),
            Messages{"2:15: integer literal is too large"});
}

// --- Statement and expression errors ----------------------------------------

TEST(Parser, StatementErrors) {
  EXPECT_EQ(errors_of(in_fusion("h linear(x)")),
            Messages{"2:3: expected '=' after statement name, found 'linear'"});
  EXPECT_EQ(errors_of(in_fusion("h")),
            Messages{"3:1: expected '=' after statement name, found '}'"});
  EXPECT_EQ(errors_of(in_fusion("output = x")),
            Messages{"2:8: expected name after 'output', found '='"});
  EXPECT_EQ(errors_of(in_fusion("output")),
            Messages{"3:1: expected name after 'output', found '}'"});
  EXPECT_EQ(errors_of(in_fusion("(y) = 1")),
            Messages{"2:1: expected a declaration or statement, found '('"});
  EXPECT_EQ(errors_of(in_fusion("1 = y")),
            Messages{"2:1: expected a declaration or statement, found '1'"});
  EXPECT_EQ(errors_of(in_fusion("None = y")),
            Messages{"2:1: expected a declaration or statement, found 'None'"});
  EXPECT_EQ(errors_of(in_fusion("\"s\"")),
            Messages{"2:1: expected a declaration or statement, found string literal"});
}

TEST(Parser, ExpressionErrors) {
  EXPECT_EQ(errors_of(in_fusion("y = ")), Messages{"3:1: expected expression, found '}'"});
  EXPECT_EQ(errors_of(in_fusion("y = )")), Messages{"2:5: expected expression, found ')'"});
  EXPECT_EQ(errors_of(in_fusion("y = a +")), Messages{"3:1: expected expression, found '}'"});
  EXPECT_EQ(errors_of(in_fusion("y = a * / b")), Messages{"2:9: expected expression, found '/'"});
  EXPECT_EQ(errors_of(in_fusion("y = -")), Messages{"3:1: expected expression, found '}'"});
  EXPECT_EQ(errors_of(in_fusion("y = [1]")), Messages{"2:5: expected expression, found '['"});
  EXPECT_EQ(errors_of(in_fusion("y = input")), Messages{"2:5: expected expression, found 'input'"});
  EXPECT_EQ(errors_of(in_fusion("y = 9223372036854775808")),
            Messages{"2:5: integer literal is too large"});
  EXPECT_EQ(errors_of(in_fusion("y = -(9223372036854775808)")),
            Messages{"2:7: integer literal is too large"});
  // The expression is missing; the next line is a new statement.
  EXPECT_EQ(errors_of(in_fusion("y =\nz = 1")), Messages{"3:1: expected expression, found 'z ='"});
}

TEST(Parser, CallErrors) {
  EXPECT_EQ(errors_of(in_fusion("y = f(a x)")),
            Messages{"2:9: expected ')' after arguments, found 'x'"});
  EXPECT_EQ(errors_of(in_fusion("y = f(a,")), Messages{"3:1: expected expression, found '}'"});
  EXPECT_EQ(errors_of(in_fusion("y = f(a")),
            Messages{"3:1: expected ')' after arguments, found '}'"});
  EXPECT_EQ(errors_of(in_fusion("y = f(,)")), Messages{"2:7: expected expression, found ','"});
  EXPECT_EQ(errors_of(in_fusion("y = f(k=)")), Messages{"2:9: expected expression, found ')'"});
  EXPECT_EQ(errors_of(in_fusion("y = f(k=1, x)")),
            Messages{"2:12: positional argument after keyword argument"});
  EXPECT_EQ(errors_of(in_fusion("y = f(1=2)")),
            Messages{"2:8: expected ')' after arguments, found '='"});
  // Only a name can be called.
  EXPECT_EQ(errors_of(in_fusion("y = (f)(x)")), Messages{"2:8: only a name can be called"});
  EXPECT_EQ(errors_of(in_fusion("y = f(x)(y)")), Messages{"2:9: only a name can be called"});
  EXPECT_EQ(errors_of(in_fusion("y = 1(x)")), Messages{"2:6: only a name can be called"});
  EXPECT_EQ(errors_of(in_fusion("y = \"f\"(x)")), Messages{"2:8: only a name can be called"});
}

TEST(Parser, ParenAndTupleErrors) {
  EXPECT_EQ(errors_of(in_fusion("y = (a b)")),
            Messages{"2:8: expected ')' after expression, found 'b'"});
  EXPECT_EQ(errors_of(in_fusion("y = (a")),
            Messages{"3:1: expected ')' after expression, found '}'"});
  EXPECT_EQ(errors_of(in_fusion("y = (a, b c)")),
            Messages{"2:11: expected ')' after tuple elements, found 'c'"});
  EXPECT_EQ(errors_of(in_fusion("y = (a,,)")), Messages{"2:8: expected expression, found ','"});
  // Keyword arguments only appear in calls.
  EXPECT_EQ(errors_of(in_fusion("y = (k=1)")),
            Messages{"2:7: expected ')' after expression, found '='"});
}

TEST(Parser, LexerErrorsDoNotCascade) {
  EXPECT_EQ(errors_of(in_fusion("y = $")), Messages{"2:5: unexpected character '$'"});
  EXPECT_EQ(errors_of(in_fusion("y = f(x, \"abc)")), Messages{"2:10: unterminated string literal"});
  EXPECT_EQ(errors_of(in_fusion("y = 1e999")), Messages{"2:5: float literal is out of range"});
  EXPECT_EQ(errors_of(in_fusion("y = 12abc")), Messages{"2:5: invalid number literal '12abc'"});
  EXPECT_EQ(errors_of(in_fusion("input x : f32[N$]")), Messages{"2:16: unexpected character '$'"});
}

TEST(Parser, SingleQuotedStringIsOneError) {
  EXPECT_EQ(errors_of(in_fusion("y = f(x, act='tanh')\nz = )")),
            (Messages{"2:14: unexpected character '\\'' (strings use double quotes)",
                      "3:5: expected expression, found ')'"}));
}

TEST(Parser, BadBytes) {
  EXPECT_EQ(errors_of(in_fusion("y = x \xff\nz = \x01")),
            (Messages{"2:7: unexpected character '\\xff'", "3:5: unexpected character '\\x01'"}));
  EXPECT_EQ(errors_of(std::string("fusion f {\0}", 12)),
            (Messages{"1:11: unexpected character '\\x00'"}));
  // Bytes in comments and strings are fine.
  EXPECT_EQ(errors_of(in_fusion("y = f(\"\xff\") # \x01\xfe")), Messages{});
}

// --- Recovery ---------------------------------------------------------------

TEST(Parser, RecoveryReportsSeveralErrors) {
  auto parsed = parse("fusion f {\n"
                      "  input x f32[1]\n"   // missing ':'
                      "  input w : f32[4]\n" // fine
                      "  h = linear(x w)\n"  // missing ','
                      "  h = relu(h\n"       // missing ')', next line is a statement
                      "  output = h\n"       // missing name
                      "  g = h * 2\n"        // fine
                      "  output g\n"
                      "}\n"
                      "fusion second {\n"
                      "  y = (1, 2\n"
                      "}\n");
  EXPECT_EQ(messages(parsed->diags),
            (Messages{"2:11: expected ':' after declaration name, found 'f32'",
                      "4:16: expected ')' after arguments, found 'w'",
                      "6:3: expected ')' after arguments, found 'output'",
                      "6:10: expected name after 'output', found '='",
                      "12:1: expected ')' after tuple elements, found '}'"}));
  ASSERT_EQ(parsed->spec.fusions.size(), 2u);
  const ast::Fusion& first = parsed->spec.fusions[0];
  ASSERT_EQ(first.decls.size(), 1u);
  EXPECT_EQ(first.decls[0].name, "w");
  ASSERT_EQ(first.stmts.size(), 2u);
  EXPECT_EQ(first.stmts[0].name, "g");
  EXPECT_TRUE(first.stmts[1].is_output);
  EXPECT_EQ(first.end_loc, loc(9, 1));
  EXPECT_EQ(parsed->spec.fusions[1].name, "second");
}

TEST(Parser, RecoveryContinuesAfterSemicolon) {
  EXPECT_EQ(errors_of(in_fusion("a = (1; b = ) ; c = x y; d = )")),
            (Messages{"2:7: expected ')' after expression, found ';'",
                      "2:13: expected expression, found ')'",
                      "2:24: expected '=' after statement name, found ';'",
                      "2:30: expected expression, found ')'"}));
}

TEST(Parser, RecoveryStopsAtClosingBrace) {
  // The `}` ends the body even mid-line, so the next fusion is parsed normally.
  auto parsed = parse("fusion f { y = f(a b) }\nfusion g { z = ) }");
  EXPECT_EQ(messages(parsed->diags), (Messages{"1:20: expected ')' after arguments, found 'b'",
                                               "2:16: expected expression, found ')'"}));
  ASSERT_EQ(parsed->spec.fusions.size(), 2u);
  EXPECT_EQ(parsed->spec.fusions[0].end_loc, loc(1, 23));
  // Braces skipped over are matched, so `{1, 2}` does not end the body.
  EXPECT_EQ(
      errors_of(in_fusion("y = {1, 2}\nz = )")),
      (Messages{"2:5: expected expression, found '{'", "3:5: expected expression, found ')'"}));
}

TEST(Parser, RecoveryAfterBadLineStartToken) {
  EXPECT_EQ(errors_of(in_fusion(") x\ny = )")),
            (Messages{"2:1: expected a declaration or statement, found ')'",
                      "3:5: expected expression, found ')'"}));
  // A line starting with a name not followed by '=' is not a resync point.
  EXPECT_EQ(errors_of(in_fusion("y = f(a b,\n  c)\nz = )")),
            (Messages{"2:9: expected ')' after arguments, found 'b'",
                      "4:5: expected expression, found ')'"}));
}

TEST(Parser, ErrorLimitStopsParsing) {
  std::string body;
  for (int i = 0; i < 200; ++i)
    body += "y = )\n";
  SourceManager sources;
  uint32_t file = sources.add_buffer("t", in_fusion(body));
  Diagnostics diags(50);
  parse_spec(sources, file, diags);
  EXPECT_TRUE(diags.at_error_limit());
  EXPECT_EQ(diags.all().size(), 50u);
  EXPECT_LE(diags.error_count(), 51u);
}

// --- Limits -----------------------------------------------------------------

std::string repeat(const std::string& text, size_t count) {
  std::string out;
  out.reserve(text.size() * count);
  for (size_t i = 0; i < count; ++i)
    out += text;
  return out;
}

TEST(Parser, NestingLimitParens) {
  EXPECT_NE(dump_expr(repeat("(", 256) + "x" + repeat(")", 256)), "error");
  // The 257th '(' (column 4 + 257 on line 2) is reported.
  EXPECT_EQ(errors_of(in_fusion("y = " + repeat("(", 257) + "x" + repeat(")", 257))),
            Messages{"2:261: expression nesting is too deep (limit 256)"});
}

TEST(Parser, NestingLimitCalls) {
  EXPECT_NE(dump_expr(repeat("f(", 256) + "x" + repeat(")", 256)), "error");
  EXPECT_EQ(errors_of(in_fusion("y = " + repeat("f(", 257) + "x" + repeat(")", 257))),
            Messages{"2:518: expression nesting is too deep (limit 256)"});
}

TEST(Parser, NestingLimitUnary) {
  EXPECT_NE(dump_expr(repeat("-", 256) + "x"), "error");
  EXPECT_EQ(errors_of(in_fusion("y = " + repeat("-", 257) + "x")),
            Messages{"2:261: expression nesting is too deep (limit 256)"});
  // Folded signs do not nest: 256 signs before a literal fold the last one.
  EXPECT_NE(dump_expr(repeat("-", 257) + "1"), "error");
}

TEST(Parser, NestingLimitTuples) {
  EXPECT_NE(dump_expr(repeat("(1, ", 256) + "1" + repeat(")", 256)), "error");
  EXPECT_EQ(errors_of(in_fusion("y = " + repeat("(1, ", 257) + "1" + repeat(")", 257))),
            Messages{"2:1029: expression nesting is too deep (limit 256)"});
}

TEST(Parser, OperatorChainsAreBoundedLikeNesting) {
  // A left-assoc chain of n operators is a tree n deep; later stages recurse over it.
  EXPECT_NE(dump_expr("x" + repeat(" + x", 256)), "error");
  EXPECT_EQ(errors_of(in_fusion("y = x" + repeat(" + x", 257))),
            Messages{"2:1031: expression nesting is too deep (limit 256)"});
  // Heights add up: 200 nested calls times x, then the 57th '*' is too deep.
  EXPECT_NE(dump_expr(repeat("g(", 200) + "x" + repeat(")", 200) + repeat(" * x", 56)), "error");
  EXPECT_EQ(errors_of(in_fusion("y = " + repeat("g(", 200) + "x" + repeat(")", 200) +
                                repeat(" * x", 57))),
            Messages{"2:831: expression nesting is too deep (limit 256)"});
}

TEST(Parser, HugeNestingDoesNotOverflowTheStack) {
  for (const std::string& open : {std::string("("), std::string("f("), std::string("-"),
                                  std::string("(1,"), std::string("+")}) {
    auto parsed = parse(in_fusion("y = " + repeat(open, 50000) + "\nz = )"));
    EXPECT_EQ(messages(parsed->diags).size(), 2u) << open;
  }
  // A 200000-term chain is rejected, not built (its destruction would recurse).
  EXPECT_EQ(errors_of(in_fusion("y = x" + repeat("+x", 200000))).size(), 1u);
}

TEST(Parser, LongIdentifier) {
  std::string longest(1024, 'n');
  auto parsed = parse(in_fusion(longest + " = " + longest));
  EXPECT_EQ(messages(parsed->diags), Messages{});
  EXPECT_EQ(errors_of(in_fusion("y = " + longest + "n\nz = )")),
            (Messages{"2:5: identifier is too long (limit 1024 characters)",
                      "3:5: expected expression, found ')'"}));
  EXPECT_EQ(errors_of(in_fusion(longest + "n = 1")),
            Messages{"2:1: identifier is too long (limit 1024 characters)"});
}

// --- Robustness -------------------------------------------------------------

TEST(Parser, RandomBytesNeverCrash) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000; ++i) {
    std::string text(rng() % 200, '\0');
    for (char& c : text)
      c = static_cast<char>(rng());
    parse(std::move(text));
  }
}

TEST(Parser, RandomTokenSoupNeverCrashes) {
  const char* pieces[] = {"fusion", "f",  "{", "}",   "(",     ")",    "[",    "]",     ",",
                          ":",      ";",  "=", "+",   "-",     "*",    "/",    "input", "output",
                          "param",  "x",  "1", "2.5", "\"s\"", "None", "true", "\n",    "#c\n",
                          "f32",    "\"", "$", ".",   "1e",    "k=",   "state"};
  std::mt19937 rng(99);
  for (int i = 0; i < 3000; ++i) {
    std::string text = "fusion g {";
    for (size_t n = rng() % 60; n > 0; --n)
      text += std::string(pieces[rng() % std::size(pieces)]) + " ";
    auto parsed = parse(std::move(text));
    // A clean parse has a fusion; a failed one says why.
    if (parsed->diags.has_errors())
      EXPECT_FALSE(parsed->diags.all().empty());
    else
      EXPECT_FALSE(parsed->spec.fusions.empty());
  }
}

TEST(Parser, LargeInputIsLinear) {
  // ~2 MB; a quadratic step anywhere would take minutes.
  std::string body =
      repeat("  h = group_norm(h + x * 2, num_groups=(2, 2), eps=1e-5) # c\n", 30000);
  auto start = std::chrono::steady_clock::now();
  auto parsed = parse(in_fusion(body));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(messages(parsed->diags), Messages{});
  EXPECT_EQ(parsed->spec.fusions[0].stmts.size(), 30000u);
  EXPECT_LT(seconds, 30.0);
  // An error on every line, all reported: recovery is linear too.
  SourceManager sources;
  uint32_t file =
      sources.add_buffer("t", in_fusion(repeat("  h = f(a b c d e f g h) + 1\n", 30000)));
  Diagnostics diags(std::numeric_limits<size_t>::max());
  parse_spec(sources, file, diags);
  EXPECT_EQ(diags.error_count(), 30000u);
}

} // namespace
} // namespace fusegen
