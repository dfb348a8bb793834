#pragma once
// A small, safe unpickler for exactly what torch.save writes for a dict of float tensors:
// dict, list, tuple, str, int, float, bool, None, collections.OrderedDict() and tensors
// (torch._utils._rebuild_tensor_v2 over persistent-id storages of Float/Half/BFloat16
// type). No arbitrary globals are ever resolved: anything else raises an Error naming it.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"

namespace triattn {

struct PyValue;
using PyRef = std::shared_ptr<PyValue>;

// A tensor as torch pickles it: a strided view into a storage stored elsewhere in the zip.
struct PyTensorRef {
  std::string storage_key;  // entry data/<key> of the archive
  DType type = DType::F32;
  int64_t storage_numel = 0;
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
};

struct PyValue {
  enum class Kind { None, Bool, Int, Float, Str, List, Tuple, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // Str; Global: "module.name"
  std::vector<PyRef> items;                     // List, Tuple
  std::vector<std::pair<PyRef, PyRef>> entries;  // Dict, insertion order
  PyTensorRef tensor;                           // Storage (key/type/numel), Tensor
  int depth = 0;  // containers nested below this one (bounded: see kMaxPickleDepth)
  // Set once the value is put inside a container; a container is frozen from then on (the
  // reader refuses to add to it). pickle's writers finish a container before they nest it,
  // so only a crafted stream trips this; it is what keeps the values a tree-like DAG: no
  // reference cycle (a in b and b in a, through the memo), which shared_ptrs would leak, and
  // no depth that grows under a parent after the parent's was taken.
  bool nested = false;

  // Dict lookup by string key; nullptr when absent.
  const PyValue* get(const std::string& key) const;
  std::string kind_name() const;
};

// Containers nested inside containers: torch's stats pickles nest a few levels. The bound
// keeps the recursive destruction (and any walk) of a crafted 100,000-deep list off the end
// of the stack (found by fuzz/fuzz_pickle).
inline constexpr int kMaxPickleDepth = 100;

// `what` names the source in error messages (e.g. "stats.pt: data.pkl").
PyRef unpickle(std::span<const uint8_t> data, const std::string& what);

}  // namespace triattn
