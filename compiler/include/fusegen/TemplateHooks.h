// The contract between CUDA templates (templates/*.cu) and the generator.
//
// A template marks each point the generator fills in with FUSEGEN_HOOK:
//
//   #ifndef FUSEGEN_HOOK
//   #define FUSEGEN_HOOK(name) __attribute__((annotate("fusegen_hook:" name)))
//   #endif
//   FUSEGEN_HOOK("block_size") constexpr int kBlockSize = 256;
//   FUSEGEN_HOOK("compute") __device__ __forceinline__ void compute(...) { ... }
//
// Hooks are ordinary namespace-scope declarations with default bodies, so a
// template compiles on its own. A type hook puts the macro where a GNU
// attribute applies to the type: `struct FUSEGEN_HOOK("p") Params { ... };` or
// `FUSEGEN_HOOK("t") typedef float scalar_t;`. The generator replaces each
// hook's whole declaration, from its first token (FUSEGEN_HOOK, `template` or
// `struct`) up to and including the closing '}' of a function body or the ';'
// ending any other declaration.
//
// This header holds two things, both plain data (no LLVM):
//  * the expectations: which hooks each template must declare, checked at build
//    time by fusegen-template-tool so that a template edit cannot silently
//    break the generator;
//  * the types of the tool's output, fusegen/TemplateText.h: every template's
//    text split at its hooks, embedded in the compiler.
#pragma once

#include <span>
#include <string_view>

namespace fusegen::templates {

enum class HookKind {
  Function,  // a function definition; signature is its type
  Constant,  // a variable with an initializer; signature is its type
  Type,      // a struct/class/union/enum definition or a type alias
};

constexpr std::string_view hook_kind_name(HookKind kind) {
  switch (kind) {
  case HookKind::Function: return "function";
  case HookKind::Constant: return "constant";
  case HookKind::Type: return "type";
  }
  return "?";
}

// One hook the generator expects a template to declare.
struct HookSpec {
  std::string_view name;       // the string in FUSEGEN_HOOK("...")
  HookKind kind;
  std::string_view decl_name;  // the declared identifier the template uses
  // The declaration's canonical type as Clang prints it: "float (float, int,
  // int)" for a function, "const int" for a constexpr int. For Type hooks the
  // kind of declaration: "struct", "class", "union", "enum" or "type alias".
  std::string_view signature;
};

struct TemplateSpec {
  std::string_view file;  // the template's file name, without directories
  std::span<const HookSpec> hooks;
};

// templates/elementwise.cu: see the contract at the top of that file.
inline constexpr HookSpec kElementwiseHooks[] = {
    {"block_size", HookKind::Constant, "kBlockSize", "const int"},
    {"vector_width", HookKind::Constant, "kVectorWidth", "const int"},
    {"numel", HookKind::Function, "numel", "long long (const FusegenArgs &)"},
    {"vector_ok", HookKind::Function, "vector_ok", "bool (const FusegenArgs &)"},
    {"compute", HookKind::Function, "compute", "void (const FusegenArgs &, long long)"},
    {"compute4", HookKind::Function, "compute4", "void (const FusegenArgs &, long long)"},
    {"entry", HookKind::Function, "fusegen_elementwise", "void (FusegenArgs)"},
};

}  // namespace fusegen::templates

// One header per template kind, each owned with its template and emitter.
#include "fusegen/hooks/ColumnStatsHooks.h"
#include "fusegen/hooks/GemmHooks.h"
#include "fusegen/hooks/GenericReduceHooks.h"
#include "fusegen/hooks/NarrowGemmHooks.h"
#include "fusegen/hooks/RowReduceHooks.h"
#include "fusegen/hooks/SkinnyGemmHooks.h"
#include "fusegen/hooks/StatsFinalizeHooks.h"
#include "fusegen/hooks/WindowHooks.h"

namespace fusegen::templates {

inline constexpr TemplateSpec kTemplateSpecs[] = {
    {"column_stats.cu", kColumnStatsHooks},
    {"elementwise.cu", kElementwiseHooks},
    {"gemm.cu", kGemmHooks},
    {"generic_reduce.cu", kGenericReduceHooks},
    {"helpers.cu", {}}, // device helpers emitted before every kernel; no hooks
    {"narrow_gemm.cu", kNarrowGemmHooks},
    {"row_reduce.cu", kRowReduceHooks},
    {"skinny_gemm.cu", kSkinnyGemmHooks},
    {"stats_finalize.cu", kStatsFinalizeHooks},
    {"window.cu", kWindowHooks},
};

constexpr const TemplateSpec* find_template_spec(std::string_view file) {
  for (const TemplateSpec& spec : kTemplateSpecs)
    if (spec.file == file) return &spec;
  return nullptr;
}

constexpr const HookSpec* find_hook_spec(const TemplateSpec& spec, std::string_view name) {
  for (const HookSpec& hook : spec.hooks)
    if (hook.name == name) return &hook;
  return nullptr;
}

// ---- Types of the generated fusegen/TemplateText.h ----

// A hook as found in the template text.
struct HookInfo {
  std::string_view name;
  HookKind kind;
  // Where the hook is written: the template's file name, or the path of one
  // of its pieces beside it ("gemm/hooks.cuh"), and the 1-based line of its
  // FUSEGEN_HOOK there.
  std::string_view file;
  int line;
  // The hook sits between fragments[fragment] and fragments[fragment + 1].
  // Hooks are in source order, so this equals the hook's own index.
  int fragment;
  // The template's own declaration, verbatim. fragments[0] + default_text of
  // hook 0 + fragments[1] + ... reproduces the template exactly, with its
  // pieces embedded (a quoted #include of a file other than a .cu template
  // replaced by that file: one translation unit for NVRTC).
  std::string_view default_text;
};

// A template split at its hooks: emit fragments[0], the replacement for
// hooks[0], fragments[1], ..., fragments[hooks.size()].
struct TemplateText {
  std::string_view file;
  std::span<const std::string_view> fragments;  // hooks.size() + 1 entries
  std::span<const HookInfo> hooks;              // in source order
};

constexpr const HookInfo* find_hook(const TemplateText& text, std::string_view name) {
  for (const HookInfo& hook : text.hooks)
    if (hook.name == name) return &hook;
  return nullptr;
}

// Looks a template up by file name in a generated table such as kAllTemplates.
constexpr const TemplateText* find_template_text(std::span<const TemplateText* const> all,
                                                 std::string_view file) {
  for (const TemplateText* text : all)
    if (text->file == file) return text;
  return nullptr;
}

}  // namespace fusegen::templates
