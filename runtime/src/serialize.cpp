// graph::nn::save / load: the versioned little-endian tensor file described
// in nn.h. Reading validates every length against the bytes left in the file
// before allocating, so a damaged or hostile file gives graph::Error, never a
// crash or a huge allocation.
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

namespace graph::nn {

namespace {

constexpr char kMagic[8] = {'C', 'X', 'G', 'R', 'A', 'P', 'H', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxNameLen = 1u << 16;
constexpr uint32_t kMaxDims = 64;

// Fixed on-disk dtype codes (independent of the DType enum's order).
constexpr DType kCodes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kBool};

uint8_t dtype_code(DType t) {
  for (uint8_t i = 0; i < std::size(kCodes); ++i)
    if (kCodes[i] == t) return i;
  throw Error("save: unsupported dtype " + std::string(dtype_name(t)));
}

// ---- writing ----
class Writer {
 public:
  void u8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
  template <class T> void uint(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) buf_.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
  }
  void bytes(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  std::string& data() { return buf_; }

 private:
  std::string buf_;
};

void write_tensor(Writer& w, const std::string& name, const Tensor& t) {
  if (name.size() > kMaxNameLen) throw Error("save: tensor name longer than " + std::to_string(kMaxNameLen) + " bytes");
  w.uint<uint32_t>(static_cast<uint32_t>(name.size()));
  w.bytes(name.data(), name.size());
  w.u8(dtype_code(t.dtype()));
  w.uint<uint32_t>(static_cast<uint32_t>(t.dim()));
  for (int64_t d : t.sizes()) w.uint<uint64_t>(static_cast<uint64_t>(d));
  Tensor c = t.detach().contiguous();
  const size_t es = element_size(t.dtype());
  const uint64_t nbytes = static_cast<uint64_t>(c.numel()) * es;
  w.uint<uint64_t>(nbytes);
  const char* p = static_cast<const char*>(c.raw_data());
  if constexpr (std::endian::native == std::endian::little) {
    w.bytes(p, nbytes);
  } else {
    for (uint64_t i = 0; i < nbytes; i += es)
      for (size_t b = 0; b < es; ++b) w.bytes(p + i + es - 1 - b, 1);
  }
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("save: cannot open '" + path + "' for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) throw Error("save: error writing '" + path + "'");
}

// ---- reading ----
class Reader {
 public:
  Reader(std::string data, std::string path) : data_(std::move(data)), path_(std::move(path)) {}
  size_t left() const { return data_.size() - pos_; }
  size_t pos() const { return pos_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("load: '" + path_ + "': " + what + " (at byte " + std::to_string(pos_) + ")");
  }
  const char* take(size_t n, const char* what) {
    if (n > left())
      fail(std::string("truncated file: ") + what + " needs " + std::to_string(n) + " bytes, " +
           std::to_string(left()) + " left");
    const char* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }
  template <class T> T uint(const char* what) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(take(sizeof(T), what));
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return static_cast<T>(v);
  }

 private:
  std::string data_;
  std::string path_;
  size_t pos_ = 0;
};

NamedTensors read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("load: cannot open '" + path + "'");
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw Error("load: error reading '" + path + "'");
  Reader r(std::move(data), path);

  if (r.left() < sizeof(kMagic) || std::memcmp(r.take(sizeof(kMagic), "magic"), kMagic, sizeof(kMagic)) != 0)
    r.fail("not a cxxgraph tensor file (bad magic)");
  const uint32_t version = r.uint<uint32_t>("version");
  if (version != kVersion)
    r.fail("unsupported format version " + std::to_string(version) + " (this build reads version " +
           std::to_string(kVersion) + ")");
  const uint64_t count = r.uint<uint64_t>("tensor count");
  // Each record takes at least 17 bytes: a bound before reserving anything.
  if (count > r.left() / 17) r.fail("tensor count " + std::to_string(count) + " exceeds the file size");

  NamedTensors out;
  std::set<std::string> names;
  for (uint64_t k = 0; k < count; ++k) {
    const std::string idx = "tensor " + std::to_string(k);
    const uint32_t name_len = r.uint<uint32_t>("name length");
    if (name_len > kMaxNameLen) r.fail(idx + ": name length " + std::to_string(name_len) + " is too large");
    std::string name(r.take(name_len, "name"), name_len);
    if (!names.insert(name).second) r.fail("duplicate tensor name '" + name + "'");
    const uint8_t code = r.uint<uint8_t>("dtype");
    if (code >= std::size(kCodes)) r.fail("tensor '" + name + "': unknown dtype code " + std::to_string(code));
    const DType dt = kCodes[code];
    const uint32_t ndim = r.uint<uint32_t>("rank");
    if (ndim > kMaxDims) r.fail("tensor '" + name + "': rank " + std::to_string(ndim) + " is too large");
    Shape sizes;
    uint64_t numel = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < ndim; ++d) {
      const uint64_t s = r.uint<uint64_t>("size");
      if (s > (uint64_t(1) << 62)) r.fail("tensor '" + name + "': invalid size " + std::to_string(s));
      sizes.push_back(static_cast<int64_t>(s));
      if (s != 0 && numel > (uint64_t(1) << 62) / s) overflow = true;
      numel *= s;
    }
    const uint64_t nbytes = r.uint<uint64_t>("data length");
    const size_t es = element_size(dt);
    if (overflow || numel > (uint64_t(1) << 62) / es || nbytes != numel * es)
      r.fail("tensor '" + name + "': data length " + std::to_string(nbytes) + " does not match shape " +
             shape_str(sizes) + " of " + std::string(dtype_name(dt)));
    const char* src = r.take(nbytes, ("data of '" + name + "'").c_str());
    Tensor t = empty(sizes, dt);
    char* dst = static_cast<char*>(t.raw_data());
    if constexpr (std::endian::native == std::endian::little) {
      if (nbytes) std::memcpy(dst, src, nbytes);
    } else {
      for (uint64_t i = 0; i < nbytes; i += es)
        for (size_t b = 0; b < es; ++b) dst[i + b] = src[i + es - 1 - b];
    }
    if (dt == kBool)
      for (uint64_t i = 0; i < numel; ++i)
        if (static_cast<unsigned char>(dst[i]) > 1) r.fail("tensor '" + name + "': bool value other than 0 or 1");
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
  Writer w;
  w.bytes(kMagic, sizeof(kMagic));
  w.uint<uint32_t>(kVersion);
  w.uint<uint64_t>(tensors.size());
  std::set<std::string> names;
  for (auto& [name, t] : tensors) {
    if (!t.defined()) throw Error("save: tensor '" + name + "' is undefined");
    if (!names.insert(name).second) throw Error("save: duplicate tensor name '" + name + "'");
    write_tensor(w, name, t);
  }
  write_file(path, w.data());
}

NamedTensors load_tensors(const std::string& path) { return read_file(path); }

void save(const Module& module, const std::string& path) { save_tensors(state_of(module), path); }

void load(Module& module, const std::string& path) {
  NamedTensors file = read_file(path);
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
  for (auto& [name, t] : mine) ::graph::detail::copy_into(t, by_name.at(name));
}

}  // namespace graph::nn
