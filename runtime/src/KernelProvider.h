// Kernels for one (fusion, dims, precision, arch): takes the compiled image
// and its launch plan from the disk cache, or generates the source, compiles
// it with NVRTC and stores it. A disk hit generates nothing (the key is known
// without generation, CacheKey.h). Needs no GPU; shared by the JIT runtime
// and warm-up.
#pragma once

#include "CacheEntry.h"
#include "CacheKey.h"
#include "DiskCache.h"
#include "Generate.h"
#include "Nvrtc.h"
#include "Warnings.h"

#include "fusegen/Diagnostics.h"

#include <atomic>
#include <memory>
#include <optional>

namespace fusegen::runtime {

struct ProviderCounters {
  std::atomic<uint64_t> generations{0};
  std::atomic<uint64_t> compiles{0};
  std::atomic<uint64_t> disk_loads{0};
  std::atomic<uint64_t> disk_writes{0};
  std::atomic<uint64_t> disk_rejects{0};
};

struct KernelRequest {
  const Fusion* fusion = nullptr; // as loaded from the spec (not specialized)
  std::string fingerprint;        // fingerprint(*fusion)
  DimBindings dims;               // exactly the fusion's symbols
  Precision precision = Precision::Strict;
  int arch = 0; // the device's sm_XY as XY
  const SourceManager* sources = nullptr;
  bool autotuned = false;              // the key's tuning field (CacheKey::autotuned)
  std::optional<GemmBlock> gemm_block; // forced GEMM block (an autotuning candidate)
};

struct ProvidedKernels {
  Fusion concrete; // the fusion specialized at the dims
  CacheKey key;
  CacheEntry entry; // launch plan and image
  bool from_disk = false;
  // Why a fresh compile was not written to the disk cache (a read-only
  // directory, a full disk); empty when it was, or when there is no disk cache.
  std::string store_error;
};

class KernelProvider {
public:
  // `disk` may be null (no disk cache).
  KernelProvider(std::shared_ptr<const DiskCache> disk, Warnings& warnings);

  // Throws RuntimeError (Spec or Compile). Bad disk entries are warned
  // about, deleted and rebuilt; a failure to write an entry is a warning.
  // `read_disk` false compiles even if an entry exists (and replaces it).
  ProvidedKernels provide(const KernelRequest& request, bool read_disk = true);

  // The disk entry for the request's key, if there is a usable one (bad
  // ones are warned about and deleted). Throws RuntimeError (Spec, Compile).
  std::optional<ProvidedKernels> lookup(const KernelRequest& request);
  // Generates and compiles; stores the entry when `store_on_disk`.
  ProvidedKernels compile(const KernelRequest& request, bool store_on_disk);
  // Stores `kernels` under the request's key (e.g. an autotuning winner,
  // compiled with a forced block, as the autotuned entry).
  void store(const KernelRequest& request, ProvidedKernels& kernels);

  // For an entry read from disk that the driver then refused: warn, delete.
  void reject(const ProvidedKernels& kernels, const std::string& problem);

  const ProviderCounters& counters() const { return counters_; }
  const DiskCache* disk() const { return disk_.get(); }

private:
  CacheKey key_of(const KernelRequest& request, const NvrtcTarget& target) const;

  std::shared_ptr<const DiskCache> disk_;
  Warnings& warnings_;
  ProviderCounters counters_;
};

} // namespace fusegen::runtime
