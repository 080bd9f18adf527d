// libFuzzer target: the disk cache entry decoder (runtime/src/CacheEntry.h),
// the one parser that reads files other processes wrote. Every input is
// decoded twice: as it is (the checksum rejects almost all of it), and
// resealed with a valid SHA-256, so that the structural checks behind the
// checksum see arbitrary bodies too (as from a buggy writer). Inputs that
// start with a 0 byte are instead edits to a real entry's body: pairs of
// (offset, xor byte), so that mutations stay close to the format. Decoding
// must return an entry or an error: never crash, leak or hang, and a decoded
// entry must encode back to the same bytes.
#include "CacheEntry.h"

#include "fusegen/Sha256.h"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

using fusegen::runtime::CacheEntry;

std::string reseal(const std::string& body) {
  fusegen::Sha256 hash;
  hash.update(body);
  auto digest = hash.finish();
  return body + std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

// A valid entry's body (without its checksum), with every section filled.
const std::string& sample_body() {
  static const std::string body = [] {
    using namespace fusegen::runtime;
    using fusegen::BufferBinding; // the launch plan lives in the compiler (Lower.h)
    CacheEntry entry;
    entry.key_material = "fusegen-cache-key\nschema=1\nfusion=f\ndims=N=8\n";
    entry.launch.fusion = "f";
    entry.launch.buffers = {{BufferBinding::Role::Argument, "x"},
                            {BufferBinding::Role::Output, "y"},
                            {BufferBinding::Role::Workspace, "t3"}};
    entry.launch.dim_symbols = {"N"};
    entry.launch.kernels = {{"fusegen_f_k0", 1, {3, 2, 1}, 256, 65536, {{2, 0x7f800000u, 1000}}},
                            {"fusegen_f_k1", 0, {5, 1, 1}, 128, 0, {}}};
    entry.launch.workspace = {{2, 0, 4000}};
    entry.launch.workspace_bytes = 4096;
    entry.launch.copies = {{"y", 0, 400}};
    entry.image = std::string("\x7f"
                              "ELF fake cubin",
                              14);
    std::string bytes = encode_entry(entry);
    return bytes.substr(0, bytes.size() - 32);
  }();
  return body;
}

void check(const std::string& bytes) {
  fusegen::Result<CacheEntry> entry = fusegen::runtime::decode_entry(bytes);
  if (entry && encode_entry(entry.value()) != bytes)
    std::abort(); // decoding accepted bytes it would not have written
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  if (size > 0 && data[0] == 0) {
    std::string body = sample_body();
    for (size_t i = 1; i + 2 < size; i += 3) {
      size_t offset = (size_t{data[i]} << 8 | data[i + 1]) % (body.size() + 1);
      if (offset == body.size())
        body.resize(body.size() / 2); // truncate
      else
        body[offset] = static_cast<char>(body[offset] ^ data[i + 2]);
    }
    check(reseal(body));
    return 0;
  }
  check(input);
  check(reseal(input));
  return 0;
}
