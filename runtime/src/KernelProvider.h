// Kernels for one (fusion, dims, precision, arch): takes the compiled image
// and its launch plan from the disk cache, else from the fleet's remote cache
// (RemoteCache.h; written to the disk cache as well), or generates the source,
// compiles it with NVRTC and stores it in both. A remote miss takes part in
// the fleet's single flight (SingleFlight.h). A cache hit generates nothing
// (the key is known without generation, CacheKey.h). Needs no GPU; shared by
// the JIT runtime and warm-up.
#pragma once

#include "CacheEntry.h"
#include "CacheKey.h"
#include "DiskCache.h"
#include "Generate.h"
#include "Nvrtc.h"
#include "RemoteCache.h"
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
  std::atomic<uint64_t> remote_loads{0};   // verified entries taken from the remote cache
  std::atomic<uint64_t> remote_writes{0};  // entries published to it
  std::atomic<uint64_t> remote_rejects{0}; // remote entries refused (signature, format, size)
  std::atomic<uint64_t> remote_waits{0};   // misses that waited for another process's compile
};

struct KernelRequest {
  const Fusion* fusion = nullptr; // as loaded from the spec (not specialized)
  std::string fingerprint;        // fingerprint(*fusion)
  DimBindings dims;               // exactly the fusion's symbols
  Precision precision = Precision::Strict;
  int arch = 0; // the device's sm_XY as XY
  const SourceManager* sources = nullptr;
  bool autotuned = false;                      // the key's tuning field (CacheKey::autotuned)
  std::optional<GemmBlock> gemm_block;         // forced GEMM block (an autotuning candidate)
  std::optional<StrictProduct> strict_product; // RuntimeOptions::strict_product (CacheKey::strict_product)
};

struct ProvidedKernels {
  Fusion concrete; // the fusion specialized at the dims
  CacheKey key;
  CacheEntry entry;         // launch plan and image
  bool from_disk = false;   // from a cache: the disk, or the remote cache (then also from_remote)
  bool from_remote = false; // fetched from the remote cache (and written to the disk cache)
  bool published = false;   // written to the remote cache by this process
  // Why a fresh compile was not written to the disk cache (a read-only
  // directory, a full disk); empty when it was, or when there is no disk cache.
  std::string store_error;
};

class KernelProvider {
public:
  // `disk` and `remote` may be null (no disk cache, no remote cache).
  KernelProvider(std::shared_ptr<const DiskCache> disk, Warnings& warnings,
                 std::shared_ptr<RemoteCache> remote = nullptr);

  // Throws RuntimeError (Spec or Compile). Bad disk entries are warned
  // about, deleted and rebuilt; bad remote entries are warned about, never
  // loaded, and replaced; a failure to write an entry is a warning.
  // `read_disk` false compiles even if an entry exists (and replaces it).
  ProvidedKernels provide(const KernelRequest& request, bool read_disk = true);

  // The cached entry for the request's key, from the disk or else the
  // remote cache (no single flight), if there is a usable one (bad ones are
  // warned about; bad disk entries deleted). Throws RuntimeError (Spec, Compile).
  std::optional<ProvidedKernels> lookup(const KernelRequest& request);
  // Generates and compiles; stores the entry when `store_on_disk` (in the
  // disk and remote caches).
  ProvidedKernels compile(const KernelRequest& request, bool store_on_disk);
  // Stores `kernels` under the request's key (e.g. an autotuning winner,
  // compiled with a forced block, as the autotuned entry), on disk and in
  // the remote cache.
  void store(const KernelRequest& request, ProvidedKernels& kernels);
  // Publishes `kernels` to the remote cache unless it already holds their
  // key (warm-up filling the store from a warm disk cache).
  void share(ProvidedKernels& kernels);

  // For an entry read from disk that the driver then refused: warn, delete.
  void reject(const ProvidedKernels& kernels, const std::string& problem);

  const ProviderCounters& counters() const { return counters_; }
  const DiskCache* disk() const { return disk_.get(); }
  RemoteCache* remote() const { return remote_.get(); }

private:
  CacheKey key_of(const KernelRequest& request, const NvrtcTarget& target) const;
  std::optional<ProvidedKernels> lookup_disk(const KernelRequest& request, const CacheKey& key);
  // A verified remote entry as provided kernels, also written to disk.
  ProvidedKernels take_remote(const KernelRequest& request, CacheKey key, CacheEntry entry);
  void warn_remote_reject(const CacheKey& key, const std::string& problem);
  void publish(ProvidedKernels& kernels);

  std::shared_ptr<const DiskCache> disk_;
  std::shared_ptr<RemoteCache> remote_;
  Warnings& warnings_;
  ProviderCounters counters_;
};

} // namespace fusegen::runtime
