// Hooks of templates/gemm.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kGemmHooks[] = {
    {"tile_m", HookKind::Constant, "kTileM", "const int"},
    {"tile_n", HookKind::Constant, "kTileN", "const int"},
    {"block_m", HookKind::Constant, "kBlockM", "const int"},
    {"block_n", HookKind::Constant, "kBlockN", "const int"},
    {"tile_k", HookKind::Constant, "kTileK", "const int"},
    {"threads", HookKind::Constant, "kThreads", "const int"},
    {"inner_product", HookKind::Constant, "kInnerProduct", "const int"},
    {"a_along_k", HookKind::Constant, "kLoadAAlongK", "const bool"},
    {"b_along_k", HookKind::Constant, "kLoadBAlongK", "const bool"},
    {"epilogue_along_m", HookKind::Constant, "kEpilogueAlongM", "const bool"},
    {"norm_group", HookKind::Constant, "kNormGroup", "const int"},
    {"norm_eps", HookKind::Constant, "kNormEps", "const float"},
    {"stats_group", HookKind::Constant, "kStatsGroup", "const int"},
    {"row_reduce", HookKind::Constant, "kRowReduce", "const int"},
    {"rows", HookKind::Function, "gemm_rows", "long long (const FusegenArgs &)"},
    {"cols", HookKind::Function, "gemm_cols", "long long (const FusegenArgs &)"},
    {"depth", HookKind::Function, "gemm_depth", "long long (const FusegenArgs &)"},
    {"batches", HookKind::Function, "gemm_batches", "long long (const FusegenArgs &)"},
    {"a_offset", HookKind::Function, "a_offset", "long long (const FusegenArgs &, long long)"},
    {"b_offset", HookKind::Function, "b_offset", "long long (const FusegenArgs &, long long)"},
    {"a_address", HookKind::Function, "a_address",
     "const float *(const FusegenArgs &, long long, long long, long long)"},
    {"b_address", HookKind::Function, "b_address",
     "const float *(const FusegenArgs &, long long, long long, long long)"},
    {"a_depth_table", HookKind::Constant, "kADepthTable", "const int"},
    {"a_row", HookKind::Function, "a_row", "const float *(const FusegenArgs &, long long, long long)"},
    {"a_depth_offset", HookKind::Function, "a_depth_offset", "int (const FusegenArgs &, long long)"},
    {"a_vector", HookKind::Constant, "kAVector", "const bool"},
    {"b_vector", HookKind::Constant, "kBVector", "const bool"},
    {"shared_floats", HookKind::Constant, "kDynamicSharedFloats", "const int"},
    {"stages", HookKind::Constant, "kStages", "const int"},
    {"split_k", HookKind::Constant, "kSplitK", "const int"},
    {"b_split", HookKind::Constant, "kBSplit", "const bool"},
    {"b_small_address", HookKind::Function, "b_small_address",
     "const float *(const FusegenArgs &, long long, long long, long long)"},
    {"block_end", HookKind::Constant, "kBlockEnd", "const int"},
    {"block_begin", HookKind::Constant, "kBlockBegin", "const int"},
    {"raster_rows", HookKind::Constant, "kRasterRows", "const int"},
    {"epilogue", HookKind::Function, "epilogue", "float (const FusegenArgs &, long long, long long, long long, float)"},
    {"norm_apply", HookKind::Function, "norm_apply",
     "float (const FusegenArgs &, long long, long long, long long, float)"},
    {"stats_slot", HookKind::Function, "stats_slot", "float *(const FusegenArgs &, long long, long long, long long)"},
    {"reduce_slot", HookKind::Function, "reduce_slot", "float *(const FusegenArgs &, long long, long long)"},
    {"entry", HookKind::Function, "fusegen_gemm", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
