#include "calib/pt_stats_writer.h"

#include <cstdio>

#include "calib/field_reader.h"
#include "calib/zip_writer.h"

namespace triattn {

namespace {

// The opcodes of pickle protocol 2 that torch.save's payload needs (no memo: nothing repeats).
class Pickler {
 public:
  ByteSink out;
  Pickler() {
    op(0x80);
    op(2);  // PROTO 2
  }
  void op(uint8_t c) { out.put<uint8_t>(c); }
  void str(const std::string& s) {
    op('X');  // BINUNICODE
    out.put<uint32_t>(static_cast<uint32_t>(s.size()));
    out.put_bytes(s);
  }
  void integer(int64_t v) {  // BININT: every count here fits in 32 bits
    op('J');
    out.put<int32_t>(static_cast<int32_t>(v));
  }
  void boolean(bool v) { op(v ? 0x88 : 0x89); }
  void global(const char* module, const char* name) {
    op('c');
    out.put_bytes(std::string(module) + "\n" + name + "\n");
  }
  void mark() { op('('); }
};

// torch._utils._rebuild_tensor_v2(storage, 0, (n,), (1,), False, OrderedDict()), the storage a
// persistent id ('storage', torch.FloatStorage, key, 'cpu', n).
void pickle_tensor(Pickler& p, const std::string& key, size_t n) {
  p.global("torch._utils", "_rebuild_tensor_v2");
  p.mark();
  p.mark();
  p.str("storage");
  p.global("torch", "FloatStorage");
  p.str(key);
  p.str("cpu");
  p.integer(static_cast<int64_t>(n));
  p.op('t');
  p.op('Q');  // BINPERSID
  p.integer(0);
  p.integer(static_cast<int64_t>(n));
  p.op(0x85);  // TUPLE1
  p.integer(1);
  p.op(0x85);
  p.boolean(false);
  p.global("collections", "OrderedDict");
  p.op(')');
  p.op('R');
  p.op('t');
  p.op('R');
}

}  // namespace

std::vector<uint8_t> pt_stats_bytes(const HeadStats& s, const std::string& archive) {
  const size_t fc = static_cast<size_t>(s.bands());
  std::vector<std::vector<uint8_t>> storages;
  Pickler p;
  p.op('}');
  p.mark();
  p.str("metadata");
  p.op('}');
  p.mark();
  p.str("head_dim");
  p.integer(s.head_dim);
  p.str("rope_style");
  p.str("half");
  p.str("sampled_heads");
  p.op(']');
  p.mark();
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = 0; h < s.n_heads; ++h) {
      p.integer(l);
      p.integer(h);
      p.op(0x86);  // TUPLE2 (the script writes lists; the reader takes either)
    }
  p.op('e');  // APPENDS
  p.op('u');  // SETITEMS
  p.str("stats");
  p.op('}');
  p.mark();
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = 0; h < s.n_heads; ++h) {
      char key[64];
      std::snprintf(key, sizeof key, "layer%02d_head%02d", l, h);
      p.str(key);
      p.op('}');
      p.mark();
      const size_t at = (static_cast<size_t>(l) * s.n_heads + h) * fc;
      const std::pair<const char*, const std::vector<float>*> fields[] = {
          {"q_mean_real", &s.q_mean_real}, {"q_mean_imag", &s.q_mean_imag}, {"q_abs_mean", &s.q_abs_mean}};
      for (const auto& [name, v] : fields) {
        p.str(name);
        pickle_tensor(p, std::to_string(storages.size()), fc);
        const auto* b = reinterpret_cast<const uint8_t*>(v->data() + at);
        storages.emplace_back(b, b + fc * sizeof(float));
      }
      p.op('u');
    }
  p.op('u');
  p.op('u');
  p.op('.');
  ZipWriter zip;
  zip.add(archive + "/data.pkl", p.out.bytes);
  zip.add(archive + "/byteorder", {'l', 'i', 't', 't', 'l', 'e'});
  for (size_t i = 0; i < storages.size(); ++i) zip.add(archive + "/data/" + std::to_string(i), storages[i], 64);
  zip.add(archive + "/version", {'3', '\n'});
  return zip.finish();
}

}  // namespace triattn
