// Hooks of templates/generic_reduce.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kGenericReduceHooks[] = {
    {"entry", HookKind::Function, "fusegen_generic_reduce", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
