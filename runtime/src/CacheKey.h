// The identity of a compiled kernel image: everything that can change the
// cubin or the launch plan stored with it. Its canonical text ("key
// material") is stored in each disk cache entry and its SHA-256 names the
// entry file, so an entry is only ever read for exactly the key it was
// written for. Every field is known before any code is generated, so a disk
// hit needs no generation: the generated source is covered by the
// generator's build identity (FUSEGEN_GENERATOR_IDENTITY) instead of its
// own hash.
#pragma once

#include "fusegen/IR.h"
#include "fusegen/Specialize.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusegen::runtime {

// Bump when the entry format or the meaning of a key field changes.
// 2: the key names the generator's build identity instead of the generated
// source's SHA-256. 3: the tuning field (heuristic or autotuned kernels).
// 4: the products field (how strict GEMMs multiply).
inline constexpr uint32_t kCacheSchemaVersion = 4;

struct CacheKey {
  uint32_t schema = kCacheSchemaVersion;
  std::string fusegen_version;            // FUSEGEN_VERSION
  std::string generator;                  // generator_identity()
  std::string nvrtc_version;              // "13.0"
  std::vector<std::string> nvrtc_options; // exactly as passed
  int arch = 0;                           // the device's sm_XY as XY
  std::string target;                     // what NVRTC produced: sm_90 or compute_90
  std::string fusion;
  std::string fingerprint; // of the unspecialized fusion (IRPrinter.h)
  DimBindings dims;        // the fusion's symbols only
  Precision precision = Precision::Strict;
  // The kernels the heuristic picks, or the fastest candidates measured on
  // the device (autotuning): two entries that can live side by side.
  bool autotuned = false;
  // How strict GEMMs multiply when the runtime asked for one way ("default":
  // the generator's choice).
  std::optional<StrictProduct> strict_product;

  // "key=value" lines in a fixed order; deterministic.
  std::string material() const;
  // sha256(material) + ".fgc"
  std::string file_name() const;
};

// The SHA-256 of the code generator's sources and templates, computed at
// build time (cmake/GeneratorIdentity.cmake).
const char* generator_identity();

// "N=1024,M=64" (sorted by name), or "-" when there are no dims.
std::string dims_text(const DimBindings& dims);

// The first line where two key materials differ, as "arch=sm_80 (expected
// arch=sm_90)", for messages about a mismatched entry.
std::string describe_key_difference(const std::string& found, const std::string& expected);

// One field of a key material ("fusion", "target", ...); empty if absent.
std::string key_field(const std::string& material, const std::string& field);

} // namespace fusegen::runtime
