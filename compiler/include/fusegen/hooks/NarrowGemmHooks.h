// Hooks of templates/narrow_gemm.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kNarrowGemmHooks[] = {
    {"threads", HookKind::Constant, "kThreads", "const int"},
    {"thread_rows", HookKind::Constant, "kThreadRows", "const int"},
    {"cols", HookKind::Constant, "kCols", "const int"},
    {"block_cols", HookKind::Constant, "kBlockCols", "const int"},
    {"depth", HookKind::Constant, "kDepth", "const int"},
    {"stats_group", HookKind::Constant, "kStatsGroup", "const int"},
    {"stats_rows", HookKind::Constant, "kStatsRows", "const int"},
    {"stats_finalize", HookKind::Constant, "kStatsFinalize", "const bool"},
    {"a_split", HookKind::Constant, "kASplit", "const bool"},
    {"rows", HookKind::Function, "gemm_rows", "long long (const FusegenArgs &)"},
    {"batches", HookKind::Function, "gemm_batches", "long long (const FusegenArgs &)"},
    {"a_offset", HookKind::Function, "a_offset", "long long (const FusegenArgs &, long long)"},
    {"b_offset", HookKind::Function, "b_offset", "long long (const FusegenArgs &, long long)"},
    {"a_address", HookKind::Function, "a_address",
     "const float *(const FusegenArgs &, long long, long long, long long)"},
    {"b_address", HookKind::Function, "b_address",
     "const float *(const FusegenArgs &, long long, long long, long long)"},
    {"a_row", HookKind::Function, "a_row", "const float *(const FusegenArgs &, long long, long long)"},
    {"a_depth_offset", HookKind::Function, "a_depth_offset", "int (const FusegenArgs &, long long)"},
    {"epilogue_stores", HookKind::Constant, "kEpilogueStores", "const int"},
    {"epilogue", HookKind::Function, "epilogue",
     "float (const FusegenArgs &, long long, long long, long long, float, EpilogueStores &)"},
    {"stats_slot", HookKind::Function, "stats_slot", "float *(const FusegenArgs &, long long, long long, long long)"},
    {"stats_counters", HookKind::Function, "stats_counters", "unsigned int *(const FusegenArgs &)"},
    {"sample_stats_slot", HookKind::Function, "sample_stats_slot",
     "float *(const FusegenArgs &, long long, long long)"},
    {"finalize_column", HookKind::Function, "finalize_column", "void (const FusegenArgs &, long long, FusegenWelford)"},
    {"entry", HookKind::Function, "fusegen_narrow_gemm", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
