#pragma once
// Private to the runtime: the little-endian encoding shared by the tensor file
// (serialize.cpp, nn::save) and the saved-graph file (saved_graph.cpp). The
// reader validates every length against the bytes left before allocating, so
// a damaged or hostile file gives graph::Error, never a crash or a huge
// allocation.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "graph/tensor.h"

namespace graph::detail {

inline constexpr uint32_t kMaxTensorNameLen = 1u << 16;
inline constexpr uint32_t kMaxTensorRank = 64;
// The smallest tensor record (empty name, rank 0, no data): a bound on the
// record count before reserving anything.
inline constexpr uint64_t kMinTensorRecordBytes = 4 + 1 + 4 + 8;

class ByteWriter {
 public:
  void u8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
  template <class T> void uint(T v) {
    for (size_t i = 0; i < sizeof(T); ++i)
      buf_.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
  }
  void bytes(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  std::string& data() { return buf_; }

 private:
  std::string buf_;
};

class ByteReader {
 public:
  // `where` starts every message: "load: 'w.bin': ", "saved graph: ".
  ByteReader(std::string_view data, std::string where) : data_(data), where_(std::move(where)) {}
  size_t left() const { return data_.size() - pos_; }
  size_t pos() const { return pos_; }
  [[noreturn]] void fail(const std::string& what) const;
  // The next `n` bytes; `what` names them if the data ends first:
  // "truncated at byte 123 while reading parameter 'w1' (need 4096 bytes, 17 left)".
  const char* take(size_t n, const std::string& what);
  template <class T> T uint(const std::string& what) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(take(sizeof(T), what));
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return static_cast<T>(v);
  }

 private:
  std::string_view data_;
  std::string where_;
  size_t pos_ = 0;
};

// One named tensor: name_len u32, name, dtype code u8, rank u32, sizes u64
// each, nbytes u64, data (row-major, little-endian elements). `who` prefixes
// write errors ("save").
void write_tensor_record(ByteWriter& w, const std::string& name, const Tensor& t, std::string_view who);

// Reads one record. `noun` and `index` name it in messages until its name is
// read ("tensor 3: name length ..."), then the name does ("tensor 'w': ...").
std::pair<std::string, Tensor> read_tensor_record(ByteReader& r, std::string_view noun, uint64_t index);

// Whole files; errors start with `who` ("save", "load").
void write_file(const std::string& path, const std::string& bytes, std::string_view who);
std::string read_file(const std::string& path, std::string_view who);

}  // namespace graph::detail
