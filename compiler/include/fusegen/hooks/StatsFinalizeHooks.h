// Hooks of templates/stats_finalize.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kStatsFinalizeHooks[] = {
    {"entry", HookKind::Function, "fusegen_stats_finalize", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
