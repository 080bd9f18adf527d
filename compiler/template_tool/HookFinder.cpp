#include "HookFinder.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Lexer.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace fusegen::template_tool {
namespace {

using templates::HookKind;
using templates::HookSpec;
using templates::TemplateSpec;

constexpr llvm::StringLiteral kAnnotationPrefix = "fusegen_hook:";
constexpr llvm::StringLiteral kHookMacro = "FUSEGEN_HOOK";

// Every declaration written with a fusegen_hook annotation. Template
// instantiations are not visited (they copy the pattern's attributes), and
// inherited attributes on redeclarations are skipped, so each annotation in
// the source is seen once.
class AnnotatedDeclCollector : public clang::RecursiveASTVisitor<AnnotatedDeclCollector> {
public:
  struct Found {
    const clang::Decl* decl;
    const clang::AnnotateAttr* attr;
  };
  std::vector<Found> found;

  bool VisitDecl(clang::Decl* decl) {
    if (decl->isImplicit()) return true;
    for (const auto* attr : decl->specific_attrs<clang::AnnotateAttr>())
      if (!attr->isInherited() && attr->getAnnotation().startswith(kAnnotationPrefix))
        found.push_back({decl, attr});
    return true;
  }
};

// What a hook declaration is, in HookSpec terms.
struct DeclShape {
  HookKind kind;
  std::string decl_name;
  std::string signature;
};

class HookChecker {
public:
  HookChecker(clang::ASTContext& context, const TemplateSpec& spec)
      : context_(context), sm_(context.getSourceManager()), spec_(spec),
        error_id_(context.getDiagnostics().getCustomDiagID(clang::DiagnosticsEngine::Error, "%0")),
        note_id_(context.getDiagnostics().getCustomDiagID(clang::DiagnosticsEngine::Note, "%0")) {}

  // Returns the hooks in source order; check failed() afterwards.
  std::vector<LocatedHook> run() {
    AnnotatedDeclCollector collector;
    collector.TraverseDecl(context_.getTranslationUnitDecl());
    std::map<std::string, clang::SourceLocation> seen;
    std::vector<LocatedHook> hooks;
    for (const auto& [decl, attr] : collector.found) {
      const std::string name = attr->getAnnotation().drop_front(kAnnotationPrefix.size()).str();
      const clang::SourceLocation at = sm_.getExpansionLoc(attr->getLocation());
      if (auto [it, inserted] = seen.emplace(name, at); !inserted) {
        // One FUSEGEN_HOOK on `int a = 1, b = 2;` annotates both; the first
        // already failed as "a single declaration".
        if (it->second == at) continue;
        error(at, "hook '" + name + "' is declared more than once");
        note(it->second, "previous declaration of hook '" + name + "' is here");
        continue;
      }
      if (auto hook = check_hook(name, *decl, *attr)) hooks.push_back(std::move(*hook));
    }
    const clang::SourceLocation file_start = sm_.getLocForStartOfFile(sm_.getMainFileID());
    for (const HookSpec& expected : spec_.hooks)
      if (!seen.count(std::string(expected.name)))
        error(file_start, "missing hook '" + std::string(expected.name) + "' (a " +
                              std::string(templates::hook_kind_name(expected.kind)) + " '" +
                              std::string(expected.decl_name) + "' of type '" +
                              std::string(expected.signature) + "')");

    std::sort(hooks.begin(), hooks.end(),
              [](const LocatedHook& a, const LocatedHook& b) { return a.begin < b.begin; });
    for (size_t i = 1; i < hooks.size(); ++i)
      if (hooks[i].begin < hooks[i - 1].end)
        error(location_of(hooks[i].begin),
              "hook '" + hooks[i].name + "' overlaps hook '" + hooks[i - 1].name + "'");
    return hooks;
  }

  bool failed() const { return failed_; }

private:
  std::optional<LocatedHook> check_hook(const std::string& name, const clang::Decl& decl,
                                        const clang::AnnotateAttr& attr) {
    const clang::SourceLocation at = sm_.getExpansionLoc(attr.getLocation());
    if (name.empty()) return error(at, "hook name is empty");
    if (!attr.getLocation().isMacroID() ||
        clang::Lexer::getImmediateMacroName(attr.getLocation(), sm_, context_.getLangOpts()) !=
            kHookMacro)
      return error(at, "hook '" + name + "' must be introduced with FUSEGEN_HOOK(\"" + name +
                           "\")");
    if (!sm_.isWrittenInMainFile(at))
      return error(at, "hook '" + name + "' must be declared in the template or one of its pieces");
    if (!decl.getDeclContext()->getRedeclContext()->isFileContext())
      return error(at, "hook '" + name +
                           "' must be declared at namespace scope, not inside a function or class");

    const HookSpec* expected = templates::find_hook_spec(spec_, name);
    if (!expected) return error(at, "unexpected hook '" + name + "'");

    auto shape = describe(name, decl, at);
    if (!shape) return std::nullopt;
    const auto kind_name = [](HookKind kind) {
      return std::string(templates::hook_kind_name(kind));
    };
    if (shape->kind != expected->kind)
      return error(at, "hook '" + name + "' is a " + kind_name(shape->kind) +
                           " but the generator expects a " + kind_name(expected->kind));
    if (shape->decl_name != expected->decl_name)
      return error(at, "hook '" + name + "' declares '" + shape->decl_name +
                           "' but the generator expects '" + std::string(expected->decl_name) +
                           "'");
    if (shape->signature != expected->signature)
      return error(at, "hook '" + name + "' has signature '" + shape->signature +
                           "' but the generator expects '" + std::string(expected->signature) +
                           "'");

    auto range = full_range(name, decl, at);
    if (!range) return std::nullopt;
    // The file and line the hook is written in (the #line markers of
    // EmbeddedTemplate::marked_text() name its piece).
    const clang::PresumedLoc written = sm_.getPresumedLoc(at);
    return LocatedHook{name,         shape->kind,  written.getFilename(), static_cast<int>(written.getLine()),
                       range->first, range->second};
  }

  std::optional<DeclShape> describe(const std::string& name, const clang::Decl& decl,
                                    clang::SourceLocation at) {
    const clang::PrintingPolicy policy = context_.getPrintingPolicy();
    if (const auto* function = llvm::dyn_cast<clang::FunctionDecl>(&decl)) {
      if (!function->doesThisDeclarationHaveABody())
        return error(at, "hook '" + name + "' must be a function definition with a default body");
      return DeclShape{HookKind::Function, function->getNameAsString(),
                       function->getType().getCanonicalType().getAsString(policy)};
    }
    if (const auto* variable = llvm::dyn_cast<clang::VarDecl>(&decl)) {
      if (!variable->hasInit())
        return error(at, "hook '" + name + "' must be a constant with a default initializer");
      return DeclShape{HookKind::Constant, variable->getNameAsString(),
                       variable->getType().getCanonicalType().getAsString(policy)};
    }
    if (const auto* tag = llvm::dyn_cast<clang::TagDecl>(&decl)) {
      if (!tag->isThisDeclarationADefinition())
        return error(at, "hook '" + name + "' must be a type definition");
      return DeclShape{HookKind::Type, tag->getNameAsString(), tag->getKindName().str()};
    }
    if (const auto* alias = llvm::dyn_cast<clang::TypedefNameDecl>(&decl))
      return DeclShape{HookKind::Type, alias->getNameAsString(), "type alias"};
    return error(at, "hook '" + name + "' must be a function, constant or type declaration");
  }

  // Byte offsets [begin, end) of the whole declaration: from the first of
  // FUSEGEN_HOOK, the declaration and its template header, through the
  // closing '}' of a function body or the ';' ending any other declaration.
  std::optional<std::pair<size_t, size_t>> full_range(const std::string& name,
                                                      const clang::Decl& decl,
                                                      clang::SourceLocation at) {
    const clang::LangOptions& lang = context_.getLangOpts();
    const clang::Decl& outer =
        decl.getDescribedTemplate() ? *decl.getDescribedTemplate() : decl;
    clang::SourceLocation begin = sm_.getExpansionLoc(outer.getBeginLoc());
    if (sm_.isBeforeInTranslationUnit(at, begin)) begin = at;

    const clang::SourceLocation last = sm_.getExpansionRange(decl.getEndLoc()).getEnd();
    clang::SourceLocation end = clang::Lexer::getLocForEndOfToken(last, 0, sm_, lang);
    const auto* function = llvm::dyn_cast<clang::FunctionDecl>(&decl);
    if (!function) {
      const auto next = clang::Lexer::findNextToken(last, sm_, lang);
      if (!next || !next->is(clang::tok::semi))
        return error(at, "hook '" + name + "' must be a single declaration ending in ';'");
      end = next->getEndLoc();
    }
    if (!sm_.isWrittenInMainFile(begin) || !sm_.isWrittenInMainFile(end) || end.isInvalid())
      return error(at, "hook '" + name + "' must be written entirely in one file");
    return std::pair<size_t, size_t>{sm_.getFileOffset(begin), sm_.getFileOffset(end)};
  }

  clang::SourceLocation location_of(size_t offset) const {
    return sm_.getLocForStartOfFile(sm_.getMainFileID()).getLocWithOffset(static_cast<int>(offset));
  }

  // Reports an error; returns nullopt so callers can `return error(...)`.
  std::nullopt_t error(clang::SourceLocation at, const std::string& message) {
    failed_ = true;
    context_.getDiagnostics().Report(at, error_id_) << message;
    return std::nullopt;
  }
  void note(clang::SourceLocation at, const std::string& message) {
    context_.getDiagnostics().Report(at, note_id_) << message;
  }

  clang::ASTContext& context_;
  const clang::SourceManager& sm_;
  const TemplateSpec& spec_;
  unsigned error_id_;
  unsigned note_id_;
  bool failed_ = false;
};

// Shared between the frontend action and find_hooks.
struct Outcome {
  bool checked = false;       // the AST was complete and the hooks were checked
  bool parse_failed = false;  // Clang reported errors before the checks
  bool check_failed = false;
  std::vector<LocatedHook> hooks;
};

class HookConsumer : public clang::ASTConsumer {
public:
  HookConsumer(const TemplateSpec& spec, Outcome& outcome) : spec_(spec), outcome_(outcome) {}

  void HandleTranslationUnit(clang::ASTContext& context) override {
    if (context.getDiagnostics().hasErrorOccurred()) {
      outcome_.parse_failed = true;
      return;
    }
    HookChecker checker(context, spec_);
    outcome_.hooks = checker.run();
    outcome_.check_failed = checker.failed();
    outcome_.checked = true;
  }

private:
  const TemplateSpec& spec_;
  Outcome& outcome_;
};

class HookAction : public clang::ASTFrontendAction {
public:
  HookAction(const TemplateSpec& spec, Outcome& outcome) : spec_(spec), outcome_(outcome) {}

  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&,
                                                        llvm::StringRef) override {
    return std::make_unique<HookConsumer>(spec_, outcome_);
  }

private:
  const TemplateSpec& spec_;
  Outcome& outcome_;
};

}  // namespace

std::optional<std::vector<LocatedHook>> find_hooks(const std::string& path,
                                                   const std::string& text,
                                                   const TemplateSpec& spec,
                                                   const ClangSetup& setup) {
  // CUDA device code for one arch, without the CUDA SDK; -std=c++17 matches
  // NVRTC's default so templates use nothing NVRTC would reject. A misplaced
  // FUSEGEN_HOOK (say, before `struct`) is an ignored attribute: make that an
  // error at the spot rather than a puzzling "missing hook".
  std::vector<std::string> args = {
      "-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", "--cuda-gpu-arch=sm_80",
      "-Wno-unknown-cuda-version", "-Werror=ignored-attributes", "-std=c++17",
      "-resource-dir", setup.resource_dir, "-include", setup.prelude};
  for (const std::string& dir : setup.include_dirs) args.insert(args.end(), {"-I", dir});
  Outcome outcome;
  const bool ok = clang::tooling::runToolOnCodeWithArgs(
      std::make_unique<HookAction>(spec, outcome), text, args, path, "fusegen-template-tool");
  if (outcome.checked && !outcome.check_failed && ok) return std::move(outcome.hooks);
  if (!outcome.checked || outcome.parse_failed)
    llvm::errs() << path << ": error: template '"
                 << std::filesystem::path(path).filename().string() << "' failed to parse\n";
  return std::nullopt;
}

}  // namespace fusegen::template_tool
