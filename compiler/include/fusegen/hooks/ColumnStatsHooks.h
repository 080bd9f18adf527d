// Hooks of templates/column_stats.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kColumnStatsHooks[] = {
    {"block_size", HookKind::Constant, "kBlockSize", "const int"},
    {"tile_m", HookKind::Constant, "kTileM", "const int"},
    {"column_mode", HookKind::Constant, "kColumnMode", "const int"},
    {"batch", HookKind::Function, "batch", "long long (const FusegenArgs &)"},
    {"channels", HookKind::Function, "channels", "long long (const FusegenArgs &)"},
    {"spatial", HookKind::Function, "spatial", "long long (const FusegenArgs &)"},
    {"input", HookKind::Function, "input", "const float *(const FusegenArgs &)"},
    {"partials", HookKind::Function, "partials", "float *(const FusegenArgs &)"},
    {"entry", HookKind::Function, "fusegen_column_stats", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
