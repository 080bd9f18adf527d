// Hooks of templates/gemm.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kGemmHooks[] = {
    {"entry", HookKind::Function, "fusegen_gemm", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
