// Hooks of templates/window.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kWindowHooks[] = {
    {"entry", HookKind::Function, "fusegen_window", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
