#include "calib/pickle_reader.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>

#include "core/error.h"

namespace triattn {

const PyValue* PyValue::get(const std::string& key) const {
  for (const auto& [k, v] : entries)
    if (k->kind == Kind::Str && k->s == key) return v.get();
  return nullptr;
}

std::string PyValue::kind_name() const {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global " + s;
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
  }
  return "?";
}

namespace {

PyRef make(PyValue::Kind k) {
  auto v = std::make_shared<PyValue>();
  v->kind = k;
  return v;
}

class Unpickler {
 public:
  Unpickler(std::span<const uint8_t> d, const std::string& what) : d_(d), what_(what) {}

  PyRef run() {
    while (true) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;                 // PROTO
        case 0x95: take(8); break;                // FRAME (protocol 4): a hint, ignore
        case '}': push(make(PyValue::Kind::Dict)); break;
        case ']': push(make(PyValue::Kind::List)); break;
        case ')': push(make(PyValue::Kind::Tuple)); break;
        case '(': marks_.push_back(stack_.size()); break;
        case 't': push(tuple_of(pop_mark())); break;
        case 0x85: tuple_n(1); break;
        case 0x86: tuple_n(2); break;
        case 0x87: tuple_n(3); break;
        case 'a': {
          PyRef v = pop();
          PyValue* list = container(PyValue::Kind::List);
          nest(list, v);
          list->items.push_back(v);
          break;
        }
        case 'e': {
          auto items = pop_mark();
          PyValue* c = container(PyValue::Kind::List);
          for (const PyRef& v : items) nest(c, v);
          auto& list = c->items;
          list.insert(list.end(), items.begin(), items.end());
          break;
        }
        case 's': {
          PyRef v = pop(), k = pop();
          PyValue* dict = container(PyValue::Kind::Dict);
          nest(dict, k);
          nest(dict, v);
          dict->entries.emplace_back(k, v);
          break;
        }
        case 'u': {
          auto items = pop_mark();
          if (items.size() % 2) bad("SETITEMS with an odd number of items");
          auto* dict = container(PyValue::Kind::Dict);
          for (const PyRef& v : items) nest(dict, v);
          for (size_t i = 0; i < items.size(); i += 2) dict->entries.emplace_back(items[i], items[i + 1]);
          break;
        }
        case 'X': str(le(4)); break;     // BINUNICODE
        case 0x8c: str(le(1)); break;    // SHORT_BINUNICODE
        case 0x8d: str(le(8)); break;    // BINUNICODE8
        case 'K': integer(static_cast<int64_t>(le(1))); break;
        case 'M': integer(static_cast<int64_t>(le(2))); break;
        case 'J': integer(static_cast<int32_t>(static_cast<uint32_t>(le(4)))); break;
        case 0x8a: long1(); break;
        case 'G': {  // BINFLOAT: big-endian double
          uint64_t bits = 0;
          for (uint8_t b : take(8)) bits = bits << 8 | b;
          auto v = make(PyValue::Kind::Float);
          v->f = std::bit_cast<double>(bits);
          push(v);
          break;
        }
        case 'N': push(make(PyValue::Kind::None)); break;
        case 0x88: case 0x89: {
          auto v = make(PyValue::Kind::Bool);
          v->b = op == 0x88;
          push(v);
          break;
        }
        case 'c': {  // GLOBAL "module\nname\n"
          const std::string module = line(), name = line();
          push(global(module, name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          PyRef name = pop(), module = pop();
          if (module->kind != PyValue::Kind::Str || name->kind != PyValue::Kind::Str) bad("STACK_GLOBAL of non-strings");
          push(global(module->s, name->s));
          break;
        }
        case 'R': {
          PyRef args = pop(), fn = pop();
          push(reduce(*fn, *args));
          break;
        }
        case 'Q': push(persistent(*pop())); break;  // BINPERSID
        case 'q': memo_[le(1)] = top(); break;
        case 'r': memo_[le(4)] = top(); break;
        case 0x94: memo_[memo_.size()] = top(); break;  // MEMOIZE
        case 'h': push(memo_get(le(1))); break;
        case 'j': push(memo_get(le(4))); break;
        case '.':
          if (stack_.size() != 1) bad("STOP with ", stack_.size(), " values on the stack");
          return stack_.back();
        default: bad("unsupported pickle opcode 0x", std::hex, static_cast<int>(op));
      }
    }
  }

 private:
  template <class... A>
  [[noreturn]] void bad(const A&... a) const {
    fail(what_, ": ", a..., " at byte ", pos_ > 0 ? pos_ - 1 : 0,
         " (only torch.save dicts of float tensors are supported)");
  }
  uint8_t byte() {
    if (pos_ >= d_.size()) bad("truncated pickle");
    return d_[pos_++];
  }
  std::span<const uint8_t> take(uint64_t n) {
    if (n > d_.size() - pos_) bad("truncated pickle");
    auto s = d_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t le(int n) {
    uint64_t v = 0;
    auto b = take(n);
    for (int i = n - 1; i >= 0; --i) v = v << 8 | b[i];
    return v;
  }
  std::string line() {
    std::string s;
    for (uint8_t c; (c = byte()) != '\n';) s += static_cast<char>(c);
    return s;
  }
  void push(PyRef v) { stack_.push_back(std::move(v)); }
  PyRef pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) bad("pickle stack underflow");
    PyRef v = stack_.back();
    stack_.pop_back();
    return v;
  }
  const PyRef& top() {
    if (stack_.empty()) bad("memo of an empty stack");
    return stack_.back();
  }
  std::vector<PyRef> pop_mark() {
    if (marks_.empty()) bad("pickle MARK missing");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<PyRef> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  PyValue* container(PyValue::Kind k) {
    PyValue* c = top().get();
    if (c->kind != k) bad("expected a ", k == PyValue::Kind::Dict ? "dict" : "list", ", found ", c->kind_name());
    return c;
  }
  PyRef tuple_of(std::vector<PyRef> items) {
    auto t = make(PyValue::Kind::Tuple);
    for (const PyRef& v : items) nest(t.get(), v);
    t->items = std::move(items);
    return t;
  }
  // `child` goes inside `parent`: refuse a container inside itself, a change to a container
  // already inside another (see PyValue::nested: that is how a memo makes a cycle) and
  // nesting past the bound.
  void nest(PyValue* parent, const PyRef& child) {
    if (child.get() == parent) bad("a container holds itself");
    if (parent->nested)
      bad("a ", parent->kind_name(), " changed after it was put inside another container (a reference cycle?)");
    parent->depth = std::max(parent->depth, child->depth + 1);
    if (parent->depth > kMaxPickleDepth) bad("values nested more than ", kMaxPickleDepth, " deep");
    child->nested = true;
  }
  void tuple_n(size_t n) {
    std::vector<PyRef> items(n);
    for (size_t i = n; i-- > 0;) items[i] = pop();
    push(tuple_of(std::move(items)));
  }
  void str(uint64_t n) {
    auto b = take(n);
    auto v = make(PyValue::Kind::Str);
    v->s.assign(reinterpret_cast<const char*>(b.data()), b.size());
    push(v);
  }
  void integer(int64_t i) {
    auto v = make(PyValue::Kind::Int);
    v->i = i;
    push(v);
  }
  void long1() {
    const uint64_t n = le(1);
    if (n > 8) bad("integer wider than 64 bits");
    auto b = take(n);
    uint64_t u = 0;
    for (size_t i = n; i-- > 0;) u = u << 8 | b[i];
    if (n > 0 && n < 8 && (b[n - 1] & 0x80)) u |= ~uint64_t{0} << (8 * n);  // sign-extend
    integer(static_cast<int64_t>(u));
  }
  PyRef memo_get(uint64_t k) {
    auto it = memo_.find(k);
    if (it == memo_.end()) bad("memo key ", k, " missing");
    return it->second;
  }
  PyRef global(const std::string& module, const std::string& name) {
    static const char* const allowed[] = {"torch._utils._rebuild_tensor_v2", "collections.OrderedDict",
                                          "torch.FloatStorage", "torch.HalfStorage", "torch.BFloat16Storage"};
    const std::string full = module + "." + name;
    for (const char* a : allowed)
      if (full == a) {
        auto g = make(PyValue::Kind::Global);
        g->s = full;
        return g;
      }
    bad("refusing pickle global '", full, "'");
  }
  PyRef persistent(const PyValue& pid) {
    // torch: ('storage', <storage type global>, key, location, numel)
    if (pid.kind != PyValue::Kind::Tuple || pid.items.size() != 5 || pid.items[0]->kind != PyValue::Kind::Str ||
        pid.items[0]->s != "storage" || pid.items[1]->kind != PyValue::Kind::Global ||
        pid.items[2]->kind != PyValue::Kind::Str || pid.items[4]->kind != PyValue::Kind::Int)
      bad("unsupported persistent id (expected a torch storage reference)");
    auto v = make(PyValue::Kind::Storage);
    const std::string& t = pid.items[1]->s;
    if (t == "torch.FloatStorage") v->tensor.type = DType::F32;
    else if (t == "torch.HalfStorage") v->tensor.type = DType::F16;
    else if (t == "torch.BFloat16Storage") v->tensor.type = DType::BF16;
    else bad("unsupported storage type ", t);
    v->tensor.storage_key = pid.items[2]->s;
    v->tensor.storage_numel = pid.items[4]->i;
    return v;
  }
  static std::vector<int64_t> ints(const PyValue& t, bool& ok) {
    std::vector<int64_t> out;
    ok = t.kind == PyValue::Kind::Tuple;
    for (const auto& x : t.items) {
      if (x->kind != PyValue::Kind::Int) ok = false;
      out.push_back(x->i);
    }
    return out;
  }
  PyRef reduce(const PyValue& fn, const PyValue& args) {
    if (fn.kind != PyValue::Kind::Global || args.kind != PyValue::Kind::Tuple) bad("unsupported REDUCE");
    if (fn.s == "collections.OrderedDict") {
      if (!args.items.empty()) bad("OrderedDict with arguments");
      return make(PyValue::Kind::Dict);
    }
    if (fn.s == "torch._utils._rebuild_tensor_v2") {
      // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
      const auto& a = args.items;
      if (a.size() < 6 || a.size() > 7 || a[0]->kind != PyValue::Kind::Storage || a[1]->kind != PyValue::Kind::Int)
        bad("unexpected _rebuild_tensor_v2 arguments");
      bool ok1, ok2;
      auto t = make(PyValue::Kind::Tensor);
      t->tensor = a[0]->tensor;
      t->tensor.offset = a[1]->i;
      t->tensor.size = ints(*a[2], ok1);
      t->tensor.stride = ints(*a[3], ok2);
      if (!ok1 || !ok2 || t->tensor.size.size() != t->tensor.stride.size()) bad("bad tensor size/stride");
      return t;
    }
    bad("refusing to call ", fn.s);
  }

  std::span<const uint8_t> d_;
  const std::string& what_;
  size_t pos_ = 0;
  std::vector<PyRef> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, PyRef> memo_;
};

}  // namespace

PyRef unpickle(std::span<const uint8_t> data, const std::string& what) {
  return Unpickler(data, what).run();
}

}  // namespace triattn
