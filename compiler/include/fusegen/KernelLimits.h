// Limits of FusegenArgs, the argument block every generated kernel takes
// (templates/helpers.cu): buffer pointers and symbolic dim values. Written
// once: plain C++ that the host (Codegen.h, the runtime's launches) includes
// and that fusegen-template-tool embeds in helpers.cu.
#pragma once

inline constexpr int kFusegenMaxBuffers = 32;
inline constexpr int kFusegenMaxDims = 8;
