#include "eval/dfs_task.h"

#include <algorithm>

#include "core/error.h"
#include "eval/boxed_answer.h"

namespace triattn::eval {

namespace {

// splitmix64: a tiny portable generator (std::uniform_int_distribution differs between
// standard libraries, which would change the problems).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
};

}  // namespace

std::vector<int> dfs_stack_after(const std::vector<std::vector<int>>& adjacency, int steps) {
  std::vector<bool> visited(adjacency.size(), false);
  std::vector<int> stack = {0};
  visited[0] = true;
  for (int s = 1; s <= steps && !stack.empty(); ++s) {
    const int top = stack.back();
    int next = -1;
    for (int u : adjacency[static_cast<size_t>(top)])
      if (!visited[static_cast<size_t>(u)]) {
        next = u;
        break;
      }
    if (next >= 0) {
      visited[static_cast<size_t>(next)] = true;
      stack.push_back(next);
    } else {
      stack.pop_back();
    }
  }
  return stack;
}

DfsProblem make_dfs_problem(int steps, uint64_t seed, int index) {
  if (steps < 1 || steps > 10000) fail("dfs: steps must be between 1 and 10000, got ", steps);
  Rng rng{seed * 0x100000001B3ull ^ (static_cast<uint64_t>(steps) << 32) ^ static_cast<uint64_t>(index)};
  rng.next();
  DfsProblem p;
  p.steps = steps;
  const int n = steps / 2 + 3;
  p.n_nodes = n;
  std::vector<std::vector<bool>> edge(static_cast<size_t>(n), std::vector<bool>(static_cast<size_t>(n), false));
  auto add = [&](int a, int b) { edge[static_cast<size_t>(a)][static_cast<size_t>(b)] = edge[static_cast<size_t>(b)][static_cast<size_t>(a)] = true; };
  for (int j = 1; j < n; ++j) add(j, rng.below(j));
  const int max_edges = n * (n - 1) / 2;
  for (int e = 0, added = n - 1; e < n / 2 && added < max_edges; ++e) {
    int a, b;
    do {
      a = rng.below(n), b = rng.below(n);
    } while (a == b || edge[static_cast<size_t>(a)][static_cast<size_t>(b)]);
    add(a, b);
    ++added;
  }
  // Shuffle labels 1..n-1 (Fisher-Yates); label[old] = new.
  std::vector<int> label(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) label[static_cast<size_t>(j)] = j;
  for (int j = n - 1; j > 1; --j) std::swap(label[static_cast<size_t>(j)], label[static_cast<size_t>(1 + rng.below(j))]);
  p.adjacency.assign(static_cast<size_t>(n), {});
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (edge[static_cast<size_t>(a)][static_cast<size_t>(b)])
        p.adjacency[static_cast<size_t>(label[static_cast<size_t>(a)])].push_back(label[static_cast<size_t>(b)]);
  for (auto& l : p.adjacency) std::sort(l.begin(), l.end());
  p.stack = dfs_stack_after(p.adjacency, steps);
  for (size_t i = 0; i < p.stack.size(); ++i) p.answer += (i ? " " : "") + std::to_string(p.stack[i]);

  std::string g;
  for (int v = 0; v < n; ++v) {
    g += std::to_string(v) + ":";
    for (int u : p.adjacency[static_cast<size_t>(v)]) g += " " + std::to_string(u);
    g += "\n";
  }
  p.prompt = "Here is an undirected graph with " + std::to_string(n) + " nodes, numbered 0 to " + std::to_string(n - 1) +
             ". Each line gives a node and its neighbours in increasing order:\n" + g +
             "\nRun a recursive depth-first search from node 0. Calling dfs(v) marks v as visited; then, for each "
             "neighbour u of v in increasing order, if u is not yet visited, dfs(u) is called. Count the steps: the "
             "first call dfs(0) is step 0; every later call and every return from a call is one step.\n"
             "Which calls are on the recursion stack right after step " + std::to_string(steps) +
             "? Answer with the nodes on the stack from the bottom (node 0) to the top, separated by single spaces, "
             "inside \\boxed{}, for example \\boxed{0 3 1}.";
  return p;
}

std::optional<std::string> dfs_extract(const std::string& reply) {
  const auto boxed = last_boxed(reply);
  if (!boxed) return std::nullopt;
  std::string s = *boxed;
  for (char& c : s)
    if (c == ',' || c == '[' || c == ']' || c == '(' || c == ')' || c == '\t' || c == '\n') c = ' ';
  std::string out, cur;
  auto flush = [&] {
    if (cur.empty()) return;
    out += (out.empty() ? "" : " ") + cur;
    cur.clear();
  };
  for (char c : s) {
    if (c == ' ') flush();
    else if (c >= '0' && c <= '9') cur += c;
    else return std::nullopt;
  }
  flush();
  if (out.empty()) return std::nullopt;
  return out;
}

bool dfs_correct(const std::string& reply, const std::string& answer) {
  const auto got = dfs_extract(reply);
  return got && *got == answer;
}

}  // namespace triattn::eval
