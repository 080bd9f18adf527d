// Hooks of templates/stats_finalize.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kStatsFinalizeHooks[] = {
    {"row_lanes", HookKind::Constant, "kRowLanes", "const int"},
    {"part_lanes", HookKind::Constant, "kPartLanes", "const int"},
    {"parts_contiguous", HookKind::Constant, "kPartsContiguous", "const int"},
    {"rows", HookKind::Function, "rows", "long long (const FusegenArgs &)"},
    {"parts", HookKind::Function, "parts", "long long (const FusegenArgs &)"},
    {"load_partial", HookKind::Function, "load_partial", "FusegenWelford (const FusegenArgs &, long long, long long)"},
    {"finalize_row", HookKind::Function, "finalize_row", "void (const FusegenArgs &, long long, FusegenWelford)"},
    {"entry", HookKind::Function, "fusegen_stats_finalize", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
