#pragma once
// The recursion-state benchmark of `triattn eval dfs`: can a model keep track of a
// depth-first search's call stack while it reasons? Problems are generated, seeded and
// deterministic (the same seed gives the same problems on every platform: the generator
// uses its own splitmix64 stream and no std:: distributions).
//
// Generator, for a step count k (>= 1) and sample index i:
// - Graph family: a connected, undirected simple graph on n = k/2 + 3 nodes (integer
//   division) labelled 0..n-1: a random recursive tree (node j >= 1 joins a uniformly
//   drawn earlier node) plus n/2 extra edges between uniformly drawn non-adjacent pairs,
//   then the labels 1..n-1 are shuffled (node 0 stays the start). A DFS over n connected
//   nodes takes 2n − 1 steps, so the search is still running after k steps.
// - Neighbour order: increasing label; the prompt lists every node's neighbours in that
//   order ("3: 0 5 7").
// - Steps: the call dfs(0) is step 0, leaving the stack [0]. Every later step is either a
//   call (the node on top of the stack has an unvisited neighbour: the smallest one is
//   marked visited and pushed) or a return (it has none: it is popped).
// - Question: which nodes are on the recursion stack after step k, from the bottom (0) to
//   the top?
// - Exact answer format: those labels in decimal, separated by single spaces, inside
//   \boxed{}: "\boxed{0 4 2}". The scorer takes the last \boxed{} of the reply, accepts
//   commas and any spacing between the labels and optional surrounding [ ] or ( ), and
//   compares the label sequence exactly.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace triattn::eval {

struct DfsProblem {
  int steps = 0;
  int n_nodes = 0;
  std::vector<std::vector<int>> adjacency;  // sorted neighbour lists
  std::vector<int> stack;                   // the answer: bottom to top after `steps` steps
  std::string prompt;
  std::string answer;  // "0 4 2"
};

// Problem `index` for `steps` steps from `seed`. Error unless 1 <= steps <= 10000.
DfsProblem make_dfs_problem(int steps, uint64_t seed, int index);

// The stack after `steps` steps of the DFS defined above (empty if it finished before).
std::vector<int> dfs_stack_after(const std::vector<std::vector<int>>& adjacency, int steps);

// The labels the reply's last \boxed{} gives, normalised to "a b c"; nullopt when there is no
// \boxed{} or it holds anything but labels.
std::optional<std::string> dfs_extract(const std::string& reply);
bool dfs_correct(const std::string& reply, const std::string& answer);

}  // namespace triattn::eval
