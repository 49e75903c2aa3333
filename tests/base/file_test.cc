#include "mimic/base/file.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>

#include "testing.h"

namespace mimic {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/mimic_file_test_" + std::to_string(getpid()) + "_" + name;
}

std::string Gzip(const std::string& data) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(ReadFile, ReadsPlainAndGzipToTheSameBytes) {
  const std::string json = "{\"a\": [1, 2, 3]}";
  Write(TempPath("plain.json"), json);
  Write(TempPath("packed.json.gz"), Gzip(json));
  auto plain = ReadFile(TempPath("plain.json"));
  auto packed = ReadFile(TempPath("packed.json.gz"));
  ASSERT_THAT(plain, IsOk());
  ASSERT_THAT(packed, IsOk());
  EXPECT_EQ(plain->bytes.view(), json);
  EXPECT_EQ(packed->bytes.view(), json);
  EXPECT_TRUE(packed->was_gzip);
  EXPECT_FALSE(plain->was_gzip);
  // The padding simdjson reads past the end is there and zero.
  EXPECT_EQ(packed->bytes.data()[json.size() + PaddedBuffer::kPadding - 1], '\0');
}

TEST(ReadFile, ReadsConcatenatedGzipMembers) {
  Write(TempPath("two.gz"), Gzip("hello ") + Gzip("world"));
  auto r = ReadFile(TempPath("two.gz"));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->bytes.view(), "hello world");
}

TEST(ReadFile, TruncatedGzipIsInvalidInputNamingTheFile) {
  const std::string packed = Gzip(std::string(100000, 'x') + "y");
  Write(TempPath("cut.gz"), packed.substr(0, packed.size() / 2));
  auto r = ReadFile(TempPath("cut.gz"));
  EXPECT_THAT(r, StatusIs(StatusCode::kInvalidInput));
  EXPECT_NE(r.status().message().find("cut.gz:byte"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos);
}

TEST(ReadFile, CorruptGzipIsInvalidInput) {
  std::string packed = Gzip(std::string(5000, 'z'));
  for (size_t i = 12; i < packed.size() - 8; i += 3) packed[i] = static_cast<char>(packed[i] ^ 0x5a);
  Write(TempPath("bad.gz"), packed);
  EXPECT_THAT(ReadFile(TempPath("bad.gz")), StatusIs(StatusCode::kInvalidInput));
}

TEST(ReadFile, EmptyMissingAndDirectory) {
  Write(TempPath("empty"), "");
  EXPECT_THAT(ReadFile(TempPath("empty")), StatusIs(StatusCode::kInvalidInput));
  EXPECT_THAT(ReadFile(TempPath("does-not-exist")), StatusIs(StatusCode::kNotFound));
  EXPECT_THAT(ReadFile(::testing::TempDir()), StatusIs(StatusCode::kInvalidInput));
}

TEST(ReadFile, Sha256IsOfTheBytesOnDisk) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Write(TempPath("abc"), "abc");
  auto r = ReadFile(TempPath("abc"));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->sha256, Sha256Hex("abc"));
}

TEST(WriteFileAtomic, ReplacesWholeAndLeavesNoTemporary) {
  const std::string path = TempPath("out.txt");
  ASSERT_TRUE(WriteFileAtomic(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "second").ok());
  auto r = ReadFile(path);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->bytes.view(), "second");
  EXPECT_FALSE(mimic::testing::Exists(path + ".tmp." + std::to_string(getpid())));
}

TEST(WriteFileAtomic, FailureLeavesNothingBehind) {
  const std::string path = TempPath("no-such-dir") + "/out.txt";
  EXPECT_EQ(WriteFileAtomic(path, "x").code(), StatusCode::kIo);
  EXPECT_FALSE(mimic::testing::Exists(path));
}

}  // namespace
}  // namespace mimic
