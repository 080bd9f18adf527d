// Hooks of templates/row_reduce.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kRowReduceHooks[] = {
    {"entry", HookKind::Function, "fusegen_row_reduce", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
