// Hooks of templates/column_stats.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kColumnStatsHooks[] = {
    {"entry", HookKind::Function, "fusegen_column_stats", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
