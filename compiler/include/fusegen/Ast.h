// Syntax tree of a spec file, as written by the user (before name resolution,
// op lookup and shape inference). Built by the Parser, consumed by BuildIR.
#pragma once

#include "fusegen/Diagnostics.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fusegen::ast {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// One argument of a call: positional when `keyword` is empty.
struct Arg {
  std::string keyword;
  SourceLoc keyword_loc;
  ExprPtr value;
};

enum class ExprKind {
  Int,    // 42
  Float,  // 1e-5, 0.5
  Bool,   // true / false
  String, // "tanh"
  None,   // None (an explicitly absent optional argument)
  Name,   // h
  Tuple,  // (2, 2)
  Call,   // linear(x, w, b)
  Binary, // a + b   (sugar for add/sub/mul/div)
  Unary,  // -a      (sugar for neg; folded into numeric literals by the parser)
};

struct Expr {
  ExprKind kind = ExprKind::None;
  SourceLoc loc;

  int64_t int_value = 0;     // Int
  double float_value = 0.0;  // Float
  bool bool_value = false;   // Bool
  std::string text;          // Name, String, Call (callee), Binary/Unary ("+", "-", "*", "/")
  std::vector<ExprPtr> elements; // Tuple elements; Binary: {lhs, rhs}; Unary: {operand}
  std::vector<Arg> args;     // Call
};

// `f32[N, 8192]`: a dim is an integer or a symbolic identifier.
struct DimExpr {
  bool is_symbol = false;
  int64_t value = 0;
  std::string symbol;
  SourceLoc loc;
};

struct TypeExpr {
  std::string dtype; // as written: "f32", "f16", "bf16", ...
  SourceLoc dtype_loc;
  std::vector<DimExpr> dims;
  SourceLoc loc;
};

enum class DeclKind { Input, Param, State };

// `input x : f32[N, 8192]`
struct Decl {
  DeclKind kind = DeclKind::Input;
  std::string name;
  SourceLoc loc; // of the name
  TypeExpr type;
};

// `name = expr`, `output name = expr` or `output name`.
struct Stmt {
  bool is_output = false;
  std::string name;
  SourceLoc loc;   // of the name
  ExprPtr value;   // null for a bare `output name`
};

// `precision=strict` in `fusion name (precision=strict) { ... }`
struct FusionOption {
  std::string key;
  SourceLoc key_loc;
  ExprPtr value;
};

struct Fusion {
  std::string name;
  SourceLoc loc;   // of the name
  std::vector<FusionOption> options;
  std::vector<Decl> decls;
  std::vector<Stmt> stmts;
  SourceLoc end_loc; // of the closing brace
};

struct SpecFile {
  std::vector<Fusion> fusions;
};

} // namespace fusegen::ast
