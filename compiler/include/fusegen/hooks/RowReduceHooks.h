// Hooks of templates/row_reduce.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kRowReduceHooks[] = {
    {"block_size", HookKind::Constant, "kBlockSize", "const int"},
    {"team_size", HookKind::Constant, "kTeamSize", "const int"},
    {"segments_per_item", HookKind::Constant, "kSegmentsPerItem", "const int"},
    {"unroll", HookKind::Constant, "kUnroll", "const int"},
    {"vector", HookKind::Constant, "kVector", "const int"},
    {"cluster_size", HookKind::Constant, "kClusterSize", "const int"},
    {"cache_floats", HookKind::Constant, "kCacheFloats", "const int"},
    {"anchor", HookKind::Constant, "kAnchor", "const int"},
    {"final_op", HookKind::Constant, "kFinalOp", "const int"},
    {"eps", HookKind::Constant, "kEps", "const float"},
    {"num_segments", HookKind::Function, "num_segments", "long long (const FusegenArgs &)"},
    {"segment_length", HookKind::Function, "segment_length", "long long (const FusegenArgs &)"},
    {"load", HookKind::Function, "load", "float (const FusegenArgs &, long long, long long)"},
    {"load4", HookKind::Function, "load4", "float4 (const FusegenArgs &, long long, long long)"},
    {"store_segment", HookKind::Function, "store_segment", "void (const FusegenArgs &, long long, float)"},
    {"element_stores", HookKind::Constant, "kElementStores", "const int"},
    {"defer_element_stores", HookKind::Constant, "kDeferElementStores", "const bool"},
    {"store_element", HookKind::Function, "store_element",
     "float (const FusegenArgs &, long long, long long, float, ElementStores &)"},
    {"store_element4", HookKind::Function, "store_element4",
     "float4 (const FusegenArgs &, long long, long long, float4, ElementStores4 &)"},
    {"store_final", HookKind::Function, "store_final", "void (const FusegenArgs &, long long, float)"},
    {"entry", HookKind::Function, "fusegen_row_reduce", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
