// Hooks of templates/generic_reduce.cu: see the contract at the top of that file.
// Included by fusegen/TemplateHooks.h (which defines HookSpec).
#pragma once

namespace fusegen::templates {

inline constexpr HookSpec kGenericReduceHooks[] = {
    {"block_size", HookKind::Constant, "kBlockSize", "const int"},
    {"anchor", HookKind::Constant, "kAnchor", "const int"},
    {"num_rows", HookKind::Function, "num_rows", "long long (const FusegenArgs &)"},
    {"row_length", HookKind::Function, "row_length", "long long (const FusegenArgs &)"},
    {"load", HookKind::Function, "load", "float (const FusegenArgs &, long long, long long)"},
    {"store_row", HookKind::Function, "store_row", "void (const FusegenArgs &, long long, float)"},
    {"store_element", HookKind::Function, "store_element", "void (const FusegenArgs &, long long, long long, float)"},
    {"entry", HookKind::Function, "fusegen_generic_reduce", "void (FusegenArgs)"},
};

} // namespace fusegen::templates
