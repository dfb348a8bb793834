// The pickle VM (protocol 2 opcodes torch.save emits: memo, persistent ids, reduce/build,
// nested containers), in memory.
#include <span>

#include "calib/pickle_reader.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  triattn::fuzz::expect_named_errors(
      [&] { (void)triattn::unpickle(std::span<const uint8_t>(data, size), "fuzz.pkl"); });
  return 0;
}
