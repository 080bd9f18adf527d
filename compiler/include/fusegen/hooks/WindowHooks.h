// Hooks of templates/window.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kWindowHooks[] = {
    {"block_size", HookKind::Constant, "kBlockSize", "const int"},
    {"team_size", HookKind::Constant, "kTeamSize", "const int"},
    {"pool_mode", HookKind::Constant, "kPoolMode", "const int"},
    {"kernel_d", HookKind::Constant, "kKernelD", "const int"},
    {"kernel_h", HookKind::Constant, "kKernelH", "const int"},
    {"kernel_w", HookKind::Constant, "kKernelW", "const int"},
    {"stride_d", HookKind::Constant, "kStrideD", "const int"},
    {"stride_h", HookKind::Constant, "kStrideH", "const int"},
    {"stride_w", HookKind::Constant, "kStrideW", "const int"},
    {"pad_d", HookKind::Constant, "kPadD", "const int"},
    {"pad_h", HookKind::Constant, "kPadH", "const int"},
    {"pad_w", HookKind::Constant, "kPadW", "const int"},
    {"dilation_d", HookKind::Constant, "kDilationD", "const int"},
    {"dilation_h", HookKind::Constant, "kDilationH", "const int"},
    {"dilation_w", HookKind::Constant, "kDilationW", "const int"},
    {"out_d", HookKind::Constant, "kOutD", "const int"},
    {"out_h", HookKind::Constant, "kOutH", "const int"},
    {"out_w", HookKind::Constant, "kOutW", "const int"},
    {"count_include_pad", HookKind::Constant, "kCountIncludePad", "const bool"},
    {"divisor_override", HookKind::Constant, "kDivisorOverride", "const int"},
    {"planes_per_block", HookKind::Constant, "kPlanesPerBlock", "const int"},
    {"outputs_per_block", HookKind::Constant, "kOutputsPerBlock", "const int"},
    {"plane_stats", HookKind::Constant, "kPlaneStats", "const int"},
    {"stats_eps", HookKind::Constant, "kStatsEps", "const float"},
    {"planes", HookKind::Function, "planes", "long long (const FusegenArgs &)"},
    {"in_depth", HookKind::Function, "in_depth", "long long (const FusegenArgs &)"},
    {"in_height", HookKind::Function, "in_height", "long long (const FusegenArgs &)"},
    {"in_width", HookKind::Function, "in_width", "long long (const FusegenArgs &)"},
    {"stats_parts", HookKind::Function, "stats_parts", "long long (const FusegenArgs &)"},
    {"stats_partials", HookKind::Function, "stats_partials", "const float *(const FusegenArgs &, long long)"},
    {"load_input", HookKind::Function, "load_input",
     "float (const FusegenArgs &, long long, long long, long long, long long, float, float)"},
    {"store_output", HookKind::Function, "store_output",
     "void (const FusegenArgs &, long long, long long, long long, long long, float)"},
    {"entry", HookKind::Function, "fusegen_window", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
