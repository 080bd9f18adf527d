// Hooks of templates/skinny_gemm.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kSkinnyGemmHooks[] = {
    {"warps", HookKind::Constant, "kWarps", "const int"},
    {"tile_rows", HookKind::Constant, "kRows", "const int"},
    {"block_cols", HookKind::Constant, "kCols", "const int"},
    {"vector", HookKind::Constant, "kVector", "const int"},
    {"b_along_k", HookKind::Constant, "kBAlongK", "const bool"},
    {"tiled", HookKind::Constant, "kTiled", "const bool"},
    {"tile_cols", HookKind::Constant, "kTileCols", "const int"},
    {"split", HookKind::Constant, "kSplit", "const int"},
    {"stages", HookKind::Constant, "kStages", "const int"},
    {"rows", HookKind::Function, "gemm_rows", "long long (const FusegenArgs &)"},
    {"batches", HookKind::Function, "gemm_batches", "long long (const FusegenArgs &)"},
    {"cols", HookKind::Function, "gemm_cols", "long long (const FusegenArgs &)"},
    {"depth", HookKind::Function, "gemm_depth", "long long (const FusegenArgs &)"},
    {"a_offset", HookKind::Function, "a_offset", "long long (const FusegenArgs &, long long)"},
    {"b_offset", HookKind::Function, "b_offset", "long long (const FusegenArgs &, long long)"},
    {"a_address", HookKind::Function, "a_address",
     "const float *(const FusegenArgs &, long long, long long, long long)"},
    {"b_address", HookKind::Function, "b_address",
     "const float *(const FusegenArgs &, long long, long long, long long)"},
    {"epilogue_stores", HookKind::Constant, "kEpilogueStores", "const int"},
    {"epilogue", HookKind::Function, "epilogue",
     "float (const FusegenArgs &, long long, long long, long long, float, EpilogueStores &)"},
    {"entry", HookKind::Function, "fusegen_skinny_gemm", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
