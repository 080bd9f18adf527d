// .npy reading and writing: round trips, the header variants numpy writes, and
// every kind of malformed file (which must be an error naming the file).
#include "fusegen/Npy.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <unistd.h>

namespace fusegen {
namespace {

namespace fs = std::filesystem;

// A scratch directory per test (tests may run in parallel processes).
class Npy : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("fusegen_npy_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes raw bytes and returns the path.
  std::string write_raw(const std::string& name, const std::string& bytes) const {
    std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  // A version 1.0 file with header dict `dict` (padded like numpy) and `data`.
  std::string write_v1(const std::string& name, std::string dict, const std::string& data) const {
    size_t unpadded = 10 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict.push_back('\n');
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(dict.size() & 0xff);
    bytes += static_cast<char>(dict.size() >> 8);
    return write_raw(name, bytes + dict + data);
  }

  // Expects reading `p` to fail with a message naming the file and containing `what`.
  static void expect_error(const std::string& p, const std::string& what) {
    Result<HostTensor> result = read_npy(p);
    ASSERT_FALSE(result.ok()) << p << " should not load";
    EXPECT_NE(result.error().find(p), std::string::npos) << result.error();
    EXPECT_NE(result.error().find(what), std::string::npos) << result.error();
  }

  fs::path dir_;
};

std::string le_bytes(uint64_t value, size_t size) {
  std::string out;
  for (size_t i = 0; i < size; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

std::string f64_bytes(std::initializer_list<double> values) {
  std::string out;
  for (double v : values)
    out += le_bytes(std::bit_cast<uint64_t>(v), 8);
  return out;
}

HostTensor make(std::vector<int64_t> shape, std::vector<double> data) {
  HostTensor t;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

TEST_F(Npy, RoundTripsF64Exactly) {
  HostTensor t = make({2, 3}, {0.1, -2.5, 1e-300, std::numeric_limits<double>::max(), -0.0, 3.0});
  ASSERT_TRUE(write_npy(path("a.npy"), t).ok());
  Result<HostTensor> back = read_npy(path("a.npy"));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back.value().shape, t.shape);
  EXPECT_EQ(back.value().data, t.data);
  EXPECT_TRUE(std::signbit(back.value().data[4]));
}

TEST_F(Npy, RoundTripsF32Rounded) {
  HostTensor t = make({4}, {0.1, -2.5, 1.0 / 3.0, 65504.0});
  ASSERT_TRUE(write_npy(path("a.npy"), t, NpyType::F32).ok());
  Result<HostTensor> back = read_npy(path("a.npy"));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back.value().shape, t.shape);
  for (size_t i = 0; i < t.data.size(); ++i)
    EXPECT_EQ(back.value().data[i], static_cast<double>(static_cast<float>(t.data[i]))) << i;
}

TEST_F(Npy, RoundTripsZeroDimAndEmpty) {
  HostTensor scalar = make({}, {42.5});
  ASSERT_TRUE(write_npy(path("s.npy"), scalar).ok());
  Result<HostTensor> s = read_npy(path("s.npy"));
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_TRUE(s.value().shape.empty());
  EXPECT_EQ(s.value().data, std::vector<double>{42.5});

  HostTensor empty = make({0, 3}, {});
  ASSERT_TRUE(write_npy(path("e.npy"), empty).ok());
  Result<HostTensor> e = read_npy(path("e.npy"));
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e.value().shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(e.value().data.empty());
}

TEST_F(Npy, WritesTheHeaderNumpyWrites) {
  ASSERT_TRUE(write_npy(path("v.npy"), make({3}, {1, 2, 3})).ok());
  std::ifstream in(path("v.npy"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Prelude plus header padded to a multiple of 64 bytes, then 3 doubles.
  ASSERT_EQ(bytes.size(), 128u + 24u);
  EXPECT_EQ(bytes.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10)); // header length 118
  EXPECT_EQ(bytes.find("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"), 10u);
  EXPECT_EQ(bytes[127], '\n');
}

TEST_F(Npy, ReadsIntegersAndOtherHeaderSpellings) {
  std::string i4 = le_bytes(static_cast<uint32_t>(-7), 4) + le_bytes(9, 4);
  Result<HostTensor> a = read_npy(write_v1("i4.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", i4));
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a.value().data, (std::vector<double>{-7, 9}));

  // Reordered keys, double quotes, no trailing comma, no spaces.
  std::string i8 = le_bytes(static_cast<uint64_t>(-3), 8) + le_bytes(5, 8);
  Result<HostTensor> b = read_npy(write_v1("i8.npy", "{\"shape\":(1,2),\"fortran_order\":False,\"descr\":\"<i8\"}", i8));
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b.value().shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(b.value().data, (std::vector<double>{-3, 5}));
}

TEST_F(Npy, ReadsVersion2And3Headers) {
  for (char major : {'\x02', '\x03'}) {
    std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
    size_t unpadded = 12 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict.push_back('\n');
    std::string bytes = std::string("\x93NUMPY", 6) + major + '\x00' + le_bytes(dict.size(), 4) + dict +
                        f64_bytes({1.5, -2.0});
    Result<HostTensor> t = read_npy(write_raw("v" + std::to_string(major) + ".npy", bytes));
    ASSERT_TRUE(t.ok()) << t.error();
    EXPECT_EQ(t.value().data, (std::vector<double>{1.5, -2.0}));
  }
}

TEST_F(Npy, MissingFileIsAnError) { expect_error(path("absent.npy"), "cannot read"); }

TEST_F(Npy, RejectsBadMagicAndVersion) {
  expect_error(write_raw("empty.npy", ""), "bad magic");
  expect_error(write_raw("text.npy", "hello world, not numpy"), "bad magic");
  expect_error(write_raw("short.npy", std::string("\x93NUMPY\x01", 7)), "bad magic");
  expect_error(write_raw("v9.npy", std::string("\x93NUMPY\x09\x00\x10\x00", 10) + std::string(16, ' ')),
               "version 9.0");
  expect_error(write_raw("v2short.npy", std::string("\x93NUMPY\x02\x00\x10\x00", 10)), "truncated header");
}

TEST_F(Npy, RejectsTruncatedHeader) {
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + le_bytes(200, 2) + "{'descr': '<f8'";
  expect_error(write_raw("cut.npy", bytes), "truncated header");
}

TEST_F(Npy, RejectsMalformedHeaderDicts) {
  const std::string data = f64_bytes({1.0, 2.0});
  const std::pair<const char*, const char*> cases[] = {
      {"descr: '<f8'", "does not start with '{'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), ", "expected a quoted key"},
      {"{'descr' '<f8', 'fortran_order': False, 'shape': (2,)}", "expected ':'"},
      {"{'descr': <f8, 'fortran_order': False, 'shape': (2,)}", "'descr' is not a string"},
      {"{'descr': '<f8, 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'"},
      {"{'descr': '<f8', 'fortran_order': false, 'shape': (2,)}", "fortran_order"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2)}", "'shape'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (-2,)}", "'shape'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,,)}", "'shape'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': [2]}", "'shape'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,)}", "overflows"},
      {"{'descr': '<f8', 'fortran_order': False}", "lacks"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unexpected key"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} junk", "after the header"},
      {"{'descr': '<f8' 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'"},
  };
  int index = 0;
  for (const auto& [dict, what] : cases) {
    SCOPED_TRACE(dict);
    expect_error(write_v1("bad" + std::to_string(index++) + ".npy", dict, data), what);
  }
}

TEST_F(Npy, RejectsUnsupportedLayouts) {
  const std::string data = f64_bytes({1.0, 2.0});
  expect_error(write_v1("c16.npy", "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", data),
               "unsupported dtype '<c16'");
  expect_error(write_v1("be.npy", "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", data),
               "unsupported dtype '>f8'");
  expect_error(write_v1("u1.npy", "{'descr': '|u1', 'fortran_order': False, 'shape': (16,), }", data),
               "unsupported dtype");
  expect_error(write_v1("f.npy", "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 1), }", data),
               "fortran_order True");
}

TEST_F(Npy, RejectsTruncatedOrOversizedData) {
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }";
  expect_error(write_v1("short.npy", dict, f64_bytes({1.0, 2.0})), "truncated data");
  expect_error(write_v1("partial.npy", dict, f64_bytes({1.0, 2.0}) + "abc"), "truncated data");
  expect_error(write_v1("long.npy", dict, f64_bytes({1.0, 2.0, 3.0, 4.0})), "does not match");
  // A shape whose byte size overflows must not allocate or wrap around.
  expect_error(write_v1("huge.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }",
                        f64_bytes({1.0})),
               "truncated data");
  expect_error(write_v1("big.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }",
                        f64_bytes({1.0})),
               "truncated data");
}

TEST_F(Npy, WriteRejectsInconsistentTensors) {
  Status bad = write_npy(path("bad.npy"), make({2, 2}, {1.0}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find(path("bad.npy")), std::string::npos) << bad.error();
  EXPECT_FALSE(write_npy(path("neg.npy"), make({-1}, {})).ok());
  EXPECT_FALSE(write_npy((dir_ / "no_such_dir" / "x.npy").string(), make({1}, {1.0})).ok());
}

} // namespace
} // namespace fusegen
