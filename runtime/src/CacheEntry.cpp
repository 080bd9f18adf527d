#include "CacheEntry.h"

#include "ByteIO.h"
#include "CacheKey.h"

#include "fusegen/Sha256.h"

#include <algorithm>

namespace fusegen::runtime {
namespace {

constexpr size_t kChecksumBytes = 32;
constexpr uint32_t kMaxCount = 4096; // kernels, buffers, ... per entry

std::string checksum(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes);
  std::array<uint8_t, 32> digest = hash.finish();
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

void field(ByteWriter& out, std::string_view label, std::string_view payload) {
  out.u8(static_cast<uint8_t>(label.size()));
  out.raw(label);
  out.u64(payload.size());
  out.raw(payload);
}

std::string encode_buffers(const LaunchPlan& plan) {
  ByteWriter w;
  w.u32(static_cast<uint32_t>(plan.buffers.size()));
  for (const BufferBinding& b : plan.buffers) {
    w.u8(static_cast<uint8_t>(b.role));
    w.str(b.name);
  }
  return w.take();
}

std::string encode_dim_symbols(const LaunchPlan& plan) {
  ByteWriter w;
  w.u32(static_cast<uint32_t>(plan.dim_symbols.size()));
  for (const std::string& symbol : plan.dim_symbols)
    w.str(symbol);
  return w.take();
}

std::string encode_kernels(const LaunchPlan& plan) {
  ByteWriter w;
  w.u32(static_cast<uint32_t>(plan.kernels.size()));
  for (const KernelLaunchPlan& k : plan.kernels) {
    w.str(k.name);
    w.u8(k.kind);
    for (int64_t extent : k.grid)
      w.i64(extent);
    w.u32(static_cast<uint32_t>(k.block));
    w.i64(k.shared_bytes);
    w.u32(static_cast<uint32_t>(k.fills.size()));
    for (const FillLaunch& f : k.fills) {
      w.u32(f.buffer);
      w.u32(f.value_bits);
      w.i64(f.count);
    }
  }
  return w.take();
}

std::string encode_workspace(const LaunchPlan& plan) {
  ByteWriter w;
  w.u32(static_cast<uint32_t>(plan.workspace.size()));
  for (const WorkspaceBinding& slot : plan.workspace) {
    w.u32(slot.buffer);
    w.i64(slot.offset);
    w.i64(slot.bytes);
  }
  w.i64(plan.workspace_bytes);
  return w.take();
}

std::string encode_copies(const LaunchPlan& plan) {
  ByteWriter w;
  w.u32(static_cast<uint32_t>(plan.copies.size()));
  for (const OutputCopy& copy : plan.copies) {
    w.str(copy.output);
    w.u32(copy.buffer);
    w.i64(copy.bytes);
  }
  return w.take();
}

// Reads the next field, which must carry `label`.
Result<std::string_view> next_field(ByteReader& in, std::string_view label) {
  uint8_t label_size = 0;
  std::string_view found;
  uint64_t size = 0;
  std::string_view payload;
  if (!in.u8(label_size) || !in.raw(label_size, found))
    return Error{"truncated before field '" + std::string(label) + "'"};
  if (found != label)
    return Error{"expected field '" + std::string(label) + "', found '" + std::string(found) + "'"};
  if (!in.u64(size) || size > in.remaining() || !in.raw(static_cast<size_t>(size), payload))
    return Error{"field '" + std::string(label) + "' is truncated"};
  return payload;
}

Status bad(std::string_view field_name) { return Error{"field '" + std::string(field_name) + "' is malformed"}; }

bool count_ok(ByteReader& in, uint32_t& count) { return in.u32(count) && count <= kMaxCount; }

Status decode_buffers(std::string_view payload, LaunchPlan& plan) {
  ByteReader in(payload);
  uint32_t count = 0;
  if (!count_ok(in, count))
    return bad("buffers");
  for (uint32_t i = 0; i < count; ++i) {
    BufferBinding b;
    uint8_t role = 0;
    if (!in.u8(role) || role > 2 || !in.str(b.name))
      return bad("buffers");
    b.role = static_cast<BufferBinding::Role>(role);
    plan.buffers.push_back(std::move(b));
  }
  return in.at_end() ? Status::success() : bad("buffers");
}

Status decode_dim_symbols(std::string_view payload, LaunchPlan& plan) {
  ByteReader in(payload);
  uint32_t count = 0;
  if (!count_ok(in, count))
    return bad("dim_symbols");
  for (uint32_t i = 0; i < count; ++i) {
    std::string symbol;
    if (!in.str(symbol))
      return bad("dim_symbols");
    plan.dim_symbols.push_back(std::move(symbol));
  }
  return in.at_end() ? Status::success() : bad("dim_symbols");
}

Status decode_kernels(std::string_view payload, LaunchPlan& plan) {
  ByteReader in(payload);
  uint32_t count = 0;
  if (!count_ok(in, count))
    return bad("kernels");
  for (uint32_t i = 0; i < count; ++i) {
    KernelLaunchPlan k;
    uint32_t block = 0, fills = 0;
    if (!in.str(k.name) || !in.u8(k.kind) || !in.i64(k.grid[0]) || !in.i64(k.grid[1]) || !in.i64(k.grid[2]) ||
        !in.u32(block) || !in.i64(k.shared_bytes) || !count_ok(in, fills))
      return bad("kernels");
    k.block = static_cast<int32_t>(block);
    for (uint32_t f = 0; f < fills; ++f) {
      FillLaunch fill;
      if (!in.u32(fill.buffer) || !in.u32(fill.value_bits) || !in.i64(fill.count))
        return bad("kernels");
      k.fills.push_back(fill);
    }
    plan.kernels.push_back(std::move(k));
  }
  return in.at_end() ? Status::success() : bad("kernels");
}

Status decode_workspace(std::string_view payload, LaunchPlan& plan) {
  ByteReader in(payload);
  uint32_t count = 0;
  if (!count_ok(in, count))
    return bad("workspace");
  for (uint32_t i = 0; i < count; ++i) {
    WorkspaceBinding slot;
    if (!in.u32(slot.buffer) || !in.i64(slot.offset) || !in.i64(slot.bytes))
      return bad("workspace");
    plan.workspace.push_back(slot);
  }
  if (!in.i64(plan.workspace_bytes))
    return bad("workspace");
  return in.at_end() ? Status::success() : bad("workspace");
}

Status decode_copies(std::string_view payload, LaunchPlan& plan) {
  ByteReader in(payload);
  uint32_t count = 0;
  if (!count_ok(in, count))
    return bad("copies");
  for (uint32_t i = 0; i < count; ++i) {
    OutputCopy copy;
    if (!in.str(copy.output) || !in.u32(copy.buffer) || !in.i64(copy.bytes))
      return bad("copies");
    plan.copies.push_back(std::move(copy));
  }
  return in.at_end() ? Status::success() : bad("copies");
}

// Buffer indices must name buffers, sizes must be sane: a decoded entry is
// used to launch kernels.
Status check_consistency(const LaunchPlan& plan) {
  const size_t buffers = plan.buffers.size();
  if (buffers > 32)
    return Error{"too many buffers"};
  for (const KernelLaunchPlan& k : plan.kernels) {
    if (k.block <= 0 || k.block > 1024 || k.shared_bytes < 0)
      return Error{"kernel " + k.name + " has an invalid launch shape"};
    for (const FillLaunch& f : k.fills)
      if (f.buffer >= buffers || f.count < 0)
        return Error{"kernel " + k.name + " has an invalid fill"};
  }
  if (plan.workspace_bytes < 0)
    return Error{"workspace layout is invalid"};
  // Compared without adding: offsets and sizes come from the file, and their
  // sum can overflow (found by the cache-entry fuzzer).
  for (const WorkspaceBinding& slot : plan.workspace)
    if (slot.buffer >= buffers || slot.offset < 0 || slot.bytes < 0 || slot.offset > plan.workspace_bytes ||
        slot.bytes > plan.workspace_bytes - slot.offset)
      return Error{"workspace layout is invalid"};
  for (const OutputCopy& copy : plan.copies)
    if (copy.buffer >= buffers || copy.bytes < 0)
      return Error{"output copy of " + copy.output + " is invalid"};
  return Status::success();
}

} // namespace

std::string encode_entry(const CacheEntry& entry) {
  ByteWriter out;
  out.raw(kCacheMagic);
  out.u32(kCacheSchemaVersion);
  field(out, "key", entry.key_material);
  field(out, "fusion", entry.launch.fusion);
  field(out, "buffers", encode_buffers(entry.launch));
  field(out, "dim_symbols", encode_dim_symbols(entry.launch));
  field(out, "kernels", encode_kernels(entry.launch));
  field(out, "workspace", encode_workspace(entry.launch));
  field(out, "copies", encode_copies(entry.launch));
  field(out, "image_kind", entry.ptx ? "ptx" : "cubin");
  field(out, "image", entry.image);
  std::string bytes = out.take();
  bytes += checksum(bytes);
  return bytes;
}

Result<CacheEntry> decode_entry(std::string_view bytes) {
  if (bytes.empty())
    return Error{"empty file"};
  // The magic first: a reader stops after it when it is wrong (DiskCache).
  if (bytes.substr(0, kCacheMagic.size()) != kCacheMagic.substr(0, std::min(bytes.size(), kCacheMagic.size())))
    return Error{"not a fusegen cache entry (bad magic)"};
  if (bytes.size() < kCacheMagic.size() + 4 + kChecksumBytes)
    return Error{"truncated (" + std::to_string(bytes.size()) + " bytes)"};
  ByteReader in(bytes.substr(0, bytes.size() - kChecksumBytes));
  std::string_view magic;
  uint32_t schema = 0;
  if (!in.raw(kCacheMagic.size(), magic) || !in.u32(schema))
    return Error{"truncated header"};
  if (schema != kCacheSchemaVersion)
    return Error{"schema version " + std::to_string(schema) + " (expected " + std::to_string(kCacheSchemaVersion) +
                 ")"};
  std::string_view body = bytes.substr(0, bytes.size() - kChecksumBytes);
  if (checksum(body) != bytes.substr(bytes.size() - kChecksumBytes))
    return Error{"checksum mismatch (truncated or corrupted)"};

  CacheEntry entry;
  Result<std::string_view> key = next_field(in, "key");
  if (!key)
    return Error{key.error()};
  entry.key_material.assign(key.value());
  Result<std::string_view> fusion = next_field(in, "fusion");
  if (!fusion)
    return Error{fusion.error()};
  entry.launch.fusion.assign(fusion.value());

  using Decoder = Status (*)(std::string_view, LaunchPlan&);
  const std::pair<const char*, Decoder> parts[] = {{"buffers", decode_buffers},
                                                   {"dim_symbols", decode_dim_symbols},
                                                   {"kernels", decode_kernels},
                                                   {"workspace", decode_workspace},
                                                   {"copies", decode_copies}};
  for (const auto& [label, decode] : parts) {
    Result<std::string_view> payload = next_field(in, label);
    if (!payload)
      return Error{payload.error()};
    if (Status decoded = decode(payload.value(), entry.launch); !decoded)
      return Error{decoded.error()};
  }
  Result<std::string_view> kind = next_field(in, "image_kind");
  if (!kind)
    return Error{kind.error()};
  if (kind.value() != "cubin" && kind.value() != "ptx")
    return Error{"unknown image kind '" + std::string(kind.value()) + "'"};
  entry.ptx = kind.value() == "ptx";
  Result<std::string_view> image = next_field(in, "image");
  if (!image)
    return Error{image.error()};
  if (image.value().empty() || image.value().size() > kMaxImageBytes)
    return Error{"image has an invalid size"};
  entry.image.assign(image.value());
  if (!in.at_end())
    return Error{"trailing bytes after the image"};
  if (Status consistent = check_consistency(entry.launch); !consistent)
    return Error{consistent.error()};
  return entry;
}

Status check_entry_matches_key(const CacheEntry& entry) {
  const std::string fusion = key_field(entry.key_material, "fusion");
  if (entry.launch.fusion != fusion)
    return Error{"its launch plan is for fusion '" + entry.launch.fusion + "', its key for '" + fusion + "'"};
  if (!entry.launch.dim_symbols.empty())
    return Error{"its launch plan still has symbolic dims"};
  const bool ptx_target = key_field(entry.key_material, "target").starts_with("compute_");
  if (entry.ptx != ptx_target)
    return Error{std::string("its image is ") + (entry.ptx ? "PTX" : "a cubin") + " but its key's target is " +
                 key_field(entry.key_material, "target")};
  return Status::success();
}

} // namespace fusegen::runtime
