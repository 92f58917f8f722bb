// graph::nn::save / load: the versioned little-endian tensor file described
// in nn.h. The record encoding and the validating reader (tensor_io.h) are
// shared with the saved-graph file (saved_graph.cpp) and defined here.
#include <bit>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/autograd.h"
#include "graph/nn.h"
#include "storage.h"
#include "tensor_io.h"

namespace graph::detail {

namespace {

// Fixed on-disk dtype codes (independent of the DType enum's order).
constexpr DType kCodes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kBool};

uint8_t dtype_code(DType t, std::string_view who) {
  for (uint8_t i = 0; i < std::size(kCodes); ++i)
    if (kCodes[i] == t) return i;
  throw Error(std::string(who) + ": unsupported dtype " + std::string(dtype_name(t)));
}

// Copies `n` bytes of elements of size `es`, swapping each element's bytes
// on a big-endian host (the file is little-endian).
void copy_le(char* dst, const char* src, uint64_t n, size_t es) {
  if constexpr (std::endian::native == std::endian::little) {
    if (n) std::memcpy(dst, src, n);
  } else {
    for (uint64_t i = 0; i < n; i += es)
      for (size_t b = 0; b < es; ++b) dst[i + b] = src[i + es - 1 - b];
  }
}

}  // namespace

void ByteReader::fail(const std::string& what) const {
  throw Error(where_ + what + " (at byte " + std::to_string(pos_) + ")");
}

const char* ByteReader::take(size_t n, const std::string& what) {
  if (n > left())
    throw Error(where_ + "truncated at byte " + std::to_string(pos_) + " while reading " + what + " (need " +
                std::to_string(n) + " bytes, " + std::to_string(left()) + " left)");
  const char* p = data_.data() + pos_;
  pos_ += n;
  return p;
}

void write_tensor_record(ByteWriter& w, const std::string& name, const Tensor& t, std::string_view who) {
  if (name.size() > kMaxTensorNameLen)
    throw Error(std::string(who) + ": tensor name longer than " + std::to_string(kMaxTensorNameLen) + " bytes");
  w.uint<uint32_t>(static_cast<uint32_t>(name.size()));
  w.bytes(name.data(), name.size());
  w.u8(dtype_code(t.dtype(), who));
  w.uint<uint32_t>(static_cast<uint32_t>(t.dim()));
  for (int64_t d : t.sizes()) w.uint<uint64_t>(static_cast<uint64_t>(d));
  Tensor c = t.detach().contiguous();
  const size_t es = element_size(t.dtype());
  const uint64_t nbytes = static_cast<uint64_t>(c.numel()) * es;
  w.uint<uint64_t>(nbytes);
  std::string& out = w.data();
  const size_t at = out.size();
  out.resize(at + nbytes);
  copy_le(out.data() + at, static_cast<const char*>(c.raw_data()), nbytes, es);
}

std::pair<std::string, Tensor> read_tensor_record(ByteReader& r, std::string_view noun_view, uint64_t index) {
  const std::string noun(noun_view);
  const std::string idx = noun + " " + std::to_string(index);
  const uint32_t name_len = r.uint<uint32_t>("the name length of " + idx);
  if (name_len > kMaxTensorNameLen) r.fail(idx + ": name length " + std::to_string(name_len) + " is too large");
  std::string name(r.take(name_len, "the name of " + idx), name_len);
  const std::string me = noun + " '" + name + "'";
  const uint8_t code = r.uint<uint8_t>("the dtype of " + me);
  if (code >= std::size(kCodes)) r.fail(me + ": unknown dtype code " + std::to_string(code));
  const DType dt = kCodes[code];
  const uint32_t ndim = r.uint<uint32_t>("the rank of " + me);
  if (ndim > kMaxTensorRank) r.fail(me + ": rank " + std::to_string(ndim) + " is too large");
  Shape sizes;
  uint64_t numel = 1;
  // The product of the sizes with zeros counted as ones: the strides of a
  // contiguous tensor, which must not overflow even when numel is 0
  // (found by fuzz_saved_graph: [0, 2^51, 2^56]).
  uint64_t extent = 1;
  bool overflow = false;
  for (uint32_t d = 0; d < ndim; ++d) {
    const uint64_t s = r.uint<uint64_t>("the sizes of " + me);
    if (s > (uint64_t(1) << 62)) r.fail(me + ": invalid size " + std::to_string(s));
    sizes.push_back(static_cast<int64_t>(s));
    const uint64_t f = s == 0 ? 1 : s;
    if (extent > (uint64_t(1) << 62) / f) overflow = true;
    extent *= f;
    numel *= s;
  }
  const uint64_t nbytes = r.uint<uint64_t>("the data length of " + me);
  const size_t es = element_size(dt);
  if (overflow || numel > (uint64_t(1) << 62) / es)
    r.fail(me + ": shape " + shape_str(sizes) + " of " + std::string(dtype_name(dt)) + " is too large");
  if (nbytes != numel * es)
    r.fail(me + ": data length " + std::to_string(nbytes) + " does not match shape " + shape_str(sizes) + " of " +
           std::string(dtype_name(dt)));
  const char* src = r.take(nbytes, me);  // before allocating: the bytes are there
  Tensor t = empty(sizes, dt);
  char* dst = static_cast<char*>(t.raw_data());
  copy_le(dst, src, nbytes, es);
  if (dt == kBool)
    for (uint64_t i = 0; i < numel; ++i)
      if (static_cast<unsigned char>(dst[i]) > 1) r.fail(me + ": bool value other than 0 or 1");
  return {std::move(name), std::move(t)};
}

void write_file(const std::string& path, const std::string& bytes, std::string_view who) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(std::string(who) + ": cannot open '" + path + "' for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) throw Error(std::string(who) + ": error writing '" + path + "'");
}

std::string read_file(const std::string& path, std::string_view who) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(std::string(who) + ": cannot open '" + path + "'");
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw Error(std::string(who) + ": error reading '" + path + "'");
  return data;
}

}  // namespace graph::detail

namespace graph::nn {

namespace {

constexpr char kMagic[8] = {'C', 'X', 'G', 'R', 'A', 'P', 'H', '\0'};
constexpr uint32_t kVersion = 1;

NamedTensors read_tensor_file(const std::string& path) {
  const std::string data = ::graph::detail::read_file(path, "load");
  ::graph::detail::ByteReader r(data, "load: '" + path + "': ");
  if (r.left() < sizeof(kMagic) || std::memcmp(r.take(sizeof(kMagic), "magic"), kMagic, sizeof(kMagic)) != 0)
    r.fail("not a cxxgraph tensor file (bad magic)");
  const uint32_t version = r.uint<uint32_t>("version");
  if (version != kVersion)
    r.fail("unsupported format version " + std::to_string(version) + " (this build reads version " +
           std::to_string(kVersion) + ")");
  const uint64_t count = r.uint<uint64_t>("tensor count");
  if (count > r.left() / ::graph::detail::kMinTensorRecordBytes)
    r.fail("tensor count " + std::to_string(count) + " exceeds the file size");

  NamedTensors out;
  std::set<std::string> names;
  for (uint64_t k = 0; k < count; ++k) {
    auto [name, t] = ::graph::detail::read_tensor_record(r, "tensor", k);
    if (!names.insert(name).second) r.fail("duplicate tensor name '" + name + "'");
    out.emplace_back(std::move(name), std::move(t));
  }
  if (r.left() != 0) r.fail(std::to_string(r.left()) + " unexpected bytes after the last tensor");
  return out;
}

NamedTensors state_of(const Module& m) {
  NamedTensors all = m.named_parameters();
  for (auto& nb : m.named_buffers()) all.push_back(std::move(nb));
  return all;
}

}  // namespace

void save_tensors(const NamedTensors& tensors, const std::string& path) {
  ::graph::detail::ByteWriter w;
  w.bytes(kMagic, sizeof(kMagic));
  w.uint<uint32_t>(kVersion);
  w.uint<uint64_t>(tensors.size());
  std::set<std::string> names;
  for (auto& [name, t] : tensors) {
    if (!t.defined()) throw Error("save: tensor '" + name + "' is undefined");
    if (!names.insert(name).second) throw Error("save: duplicate tensor name '" + name + "'");
    ::graph::detail::write_tensor_record(w, name, t, "save");
  }
  ::graph::detail::write_file(path, w.data(), "save");
}

NamedTensors load_tensors(const std::string& path) { return read_tensor_file(path); }

void save(const Module& module, const std::string& path) { save_tensors(state_of(module), path); }

void load(Module& module, const std::string& path) {
  NamedTensors file = read_tensor_file(path);
  NamedTensors mine = state_of(module);
  std::map<std::string, Tensor> by_name(file.begin(), file.end());
  std::vector<std::string> missing, mismatched;
  for (auto& [name, t] : mine) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      missing.push_back(name);
      continue;
    }
    if (it->second.sizes() != t.sizes())
      mismatched.push_back("'" + name + "': file " + shape_str(it->second.sizes()) + ", module " +
                           shape_str(t.sizes()));
  }
  std::vector<std::string> unexpected;
  std::set<std::string> my_names;
  for (auto& [name, t] : mine) my_names.insert(name);
  for (auto& [name, t] : file)
    if (!my_names.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::string msg = "load: '" + path + "' does not match the module:";
    auto list = [&](const char* what, const std::vector<std::string>& v, bool quote) {
      if (v.empty()) return;
      msg += std::string(" ") + what + " ";
      for (size_t i = 0; i < v.size(); ++i) msg += (i ? ", " : "") + (quote ? "'" + v[i] + "'" : v[i]);
      msg += ";";
    };
    list("missing", missing, true);
    list("unexpected", unexpected, true);
    list("shape mismatch", mismatched, false);
    msg.pop_back();
    throw Error(msg);
  }
  NoGradGuard no_grad;
  for (auto& [name, t] : mine) {
    ::graph::detail::copy_into(t, by_name.at(name));
    t.bump_version();  // written in place (Tensor::version)
  }
}

}  // namespace graph::nn
